"""English the query realiser needs and does not hand-roll: number agreement and participles.

Whether a noun is plural ("payment terms are") and a verb's participle ("once you've looked up …") come
from ``lemminflect`` (a maintained English inflection library whose lemma and inflection tables load in
well under a second, so every pool worker of ``generate`` can afford them). ``is_plural`` and ``be`` are
also what Gate 2's agreement check reads every query with. Articles keep the one-line sound rule the
realiser already had ("an access request", "an SKU"), since no inflection table says how letters sound.
"""

from __future__ import annotations

import re
from functools import cache

import lemminflect

# words that end a field noun after its head ("minutes lost", "hours logged", "fare paid")
_TRAILING_PARTICIPLES = frozenset({"lost", "logged", "spent", "paid", "affected", "covered", "required"})
_VOWEL_SOUND = re.compile(
    r"^(?:(?!one\b|once\b|use|user|usu|uni|euro)[aeioAEIO]|u(?:p|rg|nder|n(?!i))|[FHLMNRSX](?:[A-Z0-9]|\b)|hour|honest)",
)


@cache
def head(noun: str) -> str:
    """The head word of a field or record noun: "payment terms" → "terms", "duration in minutes" →
    "duration", "minutes lost" → "minutes"."""
    words = re.split(r"\s+(?:in|of|for|per)\s+", noun.strip())[0].split()
    if len(words) > 1 and words[-1].lower() in _TRAILING_PARTICIPLES:
        words = words[:-1]
    return words[-1] if words else noun


@cache
def is_plural(noun: str) -> bool:
    """Whether a noun phrase is grammatically plural ("payment terms", "estimated crew hours")."""
    word = head(noun)
    if not word.isalpha() or word.isupper() or len(word) < 3:
        return False
    lemmas = lemminflect.getLemma(word.lower(), upos="NOUN")
    return bool(lemmas) and lemmas[0] != word.lower()


def singular(word: str) -> str:
    """ "days" → "day" (for "1 day")."""
    lemmas = lemminflect.getLemma(word.lower(), upos="NOUN")
    return lemmas[0] if lemmas else word


def be(noun: str) -> str:
    """ "is" or "are", agreeing with ``noun``."""
    return "are" if is_plural(noun) else "is"


def a(phrase: str) -> str:
    """``phrase`` with its indefinite article ("an access request", "a one-off", "an SKU")."""
    return ("an " if _VOWEL_SOUND.match(phrase) else "a ") + phrase


@cache
def _participle(verb: str) -> str:
    forms = lemminflect.getInflection(verb, tag="VBN")
    if not forms:
        raise KeyError(f"no participle for {verb!r}")
    return forms[0]


def participle(verb_phrase: str) -> str:
    """ "look up the employee" → "looked up the employee"."""
    verb, _, rest = verb_phrase.partition(" ")
    return _participle(verb) + (" " + rest if rest else "")


def warm() -> None:
    """Load the inflection tables now (a parent process does this once before forking its workers)."""
    is_plural("terms")
    _participle("look")


def join(items: list[str], conj: str = "and") -> str:
    """ "a", "a and b", "a, b and c"."""
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def sentence(text: str) -> str:
    """Capitalised, with a full stop unless it already ends a sentence (a closing quote counts)."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if re.search(r'[.!?]"?$', text) else text + "."
