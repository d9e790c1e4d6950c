"""How people write a value that is a string: the textual forms Gate 1/2 accept for a GT string.

Split from ``resolve`` (numbers, dates, times) because real, human-written tasks (BFCL) write values in forms
our own realiser never produces: quotes and spacing around expressions ("'4x+7'"), another notation for the
same math ("x^2" for "x**2"), inflection ("scenic views"), codes named by what they stand for ("euros" for
"EUR", "LA" for "Los Angeles"), "City, ST" when the city is given. Every form here is exact enough that a
careful reader would state the value from the text; ``tests/test_bfcl.py`` lists what must and must not be
accepted. The phrase test every form builds on (``normalize``, ``contains_phrase``) lives here too, so
``resolve`` imports this module and never the reverse; a number typed as a string is ``resolve``'s case.
"""

from __future__ import annotations

import functools
import re

_QUOTES = "\"'`\u2018\u2019\u201c\u201d"
# ISO 4217 codes a reader states exactly from the currency's name
CURRENCY_NAMES = {
    "USD": ("us dollar", "us dollars", "american dollars", "dollars", "dollar"),
    "EUR": ("euro", "euros"),
    "GBP": ("british pound", "british pounds", "pound sterling", "pounds", "pound"),
    "JPY": ("japanese yen", "yen"),
    "CAD": ("canadian dollar", "canadian dollars"),
    "AUD": ("australian dollar", "australian dollars"),
    "INR": ("indian rupee", "indian rupees", "rupees", "rupee"),
    "CNY": ("chinese yuan", "yuan", "renminbi"),
    "CHF": ("swiss franc", "swiss francs"),
    "MXN": ("mexican peso", "mexican pesos"),
}
# Codes and short names a reader states exactly from what the text names: a small fixed table, not a
# gazetteer (a city's state or a company's exchange is world knowledge the gates do not claim to have).
ALIASES = {
    "los angeles": ("la", "lax", "l.a."),
    "san francisco": ("sf", "san fran", "sfo"),
    "new york": ("nyc", "ny", "new york city", "big apple", "jfk"),
    "san diego": ("sd",),
    "philadelphia": ("philly",),
    "chicago": ("chi-town", "chi town"),
    "washington": ("dc", "d.c."),
    "ber": ("berlin",),
    "jfk": ("new york", "nyc"),
    "lax": ("los angeles",),
    "aapl": ("apple",),
    "msft": ("microsoft",),
    "goog": ("google", "alphabet"),
    "googl": ("google", "alphabet"),
    "amzn": ("amazon",),
    "tsla": ("tesla",),
    "nvda": ("nvidia",),
    "gb": ("uk", "united kingdom", "great britain", "britain"),
    "us": ("usa", "united states", "america"),
    "en": ("english",),
    "da": ("danish",),
    "de": ("german",),
    "fr": ("french",),
    "es": ("spanish",),
    "it": ("italian",),
    "zh": ("chinese", "mandarin"),
    "ja": ("japanese",),
    "hi": ("hindi",),
    "txt": ("text",),
    ">": ("greater than", "more than", "above", "over"),
    "<": ("less than", "below", "under"),
    ">=": ("at least",),
    "<=": ("at most",),
    "=": ("equal", "equals", "is"),
    "street": ("st",),
    "avenue": ("ave",),
    "minutes": ("mins", "min"),
    "minute": ("min",),
    "hours": ("hrs", "hr"),
    "seconds": ("secs", "sec"),
}
_REGION = re.compile(r"^(?:[A-Z]{2,3}|[A-Z][a-z]+(?: [A-Z][a-z]+){0,2})$")


@functools.lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Lower-case, underscores/hyphens/slashes as spaces, whitespace folded: how values are compared."""
    text = text.lower().replace("_", " ").replace("\u2019", "'")
    text = re.sub(r"(?<=\w)[-/](?=\w)", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def contains_phrase(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as whole words after normalisation (so "5" is not found in "15")."""
    needle = normalize(phrase)
    if not needle:
        return False
    hay = normalize(text)
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = hay[start - 1] if start > 0 else " "
        after = hay[end] if end < len(hay) else " "
        if not _is_word_char(before) and not _is_word_char(after):
            return True
        start = hay.find(needle, start + 1)
    return False


def _is_word_char(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def compact(text: str) -> str:
    """Lower case without quotes, without spaces around symbols, with ``**`` read as ``^`` and ``*``
    between a number and a name dropped: "3*x**2 + 2" and "3x^2+2" are the same expression."""
    out = re.sub(f"[{_QUOTES}]", "", text.lower().replace("**", "^"))
    out = re.sub(r"\s*([^\w\s])\s*", r"\1", re.sub(r"\s+", " ", out)).strip()
    return re.sub(r"(?<=[0-9a-z)])\*(?=[a-z(])", "", out)


_IRREGULAR = {"women": "woman", "men": "man", "children": "child", "people": "person"}


def _stem(word: str) -> str:
    """A crude English stem, enough to read "sculptures" as "sculpture" or "vaporizing" as
    "vaporization"; both sides of a comparison go through it."""
    word = _IRREGULAR.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for ending in ("ation", "ion", "ing", "ed", "e"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def _stems(text: str) -> str:
    return " ".join(_stem(w) for w in re.findall(r"[a-z0-9]+", normalize(text)))


def text_recoverable(value: str, text: str) -> bool:
    """A string value a reader can state from ``text``: as a phrase (case, hyphens and underscores
    folded), ignoring quotes and spacing ("'4x+7'" states "4x + 7"), as the same expression ("x^2" states
    "x**2"), as the same words up to inflection ("scenic views" states "Scenic View"), as a currency code
    whose name is given ("euros" states "EUR"), or as "City, ST" when the city is given."""
    if contains_phrase(text, value):
        return True
    needle = compact(value)
    if len(needle) >= 2:
        hay = compact(text)
        start = hay.find(needle)
        while start >= 0:
            end = start + len(needle)
            if (start == 0 or not hay[start - 1].isalnum()) and (end == len(hay) or not hay[end].isalnum()):
                return True
            start = hay.find(needle, start + 1)
    stems = _stems(value)
    if stems and re.search(rf"(?<![a-z0-9]){re.escape(stems)}(?![a-z0-9])", _stems(text)):
        return True
    if re.fullmatch(r"[A-Za-z\u00b0\u00b5]{1,4}\d?", value) and re.search(
        rf"\d\s?{re.escape(value)}(?![A-Za-z])", text
    ):
        return True  # a unit written after a number ("5cm" states the unit "cm")
    if re.fullmatch(r"[A-Z]{2,5}", value) and value.lower() in _initialisms(text):
        return True  # "EV" for "electric vehicle"
    if re.fullmatch(r"[a-z]{3,}", value) and re.search(rf"\b{value}[a-z]{{2,}}", text.lower()):
        return True  # a clipped word ("gas" for "gasoline")
    if _alias_recoverable(value, text):
        return True
    names = CURRENCY_NAMES.get(value.strip().upper())
    if names and any(contains_phrase(text, n) for n in names):
        return True
    head, comma, tail = value.partition(",")
    return bool(comma) and bool(_REGION.match(tail.strip())) and text_recoverable(head.strip(), text)


def _alias_recoverable(value: str, text: str) -> bool:
    """The value, or each of its words, said by a short name from ``ALIASES`` ("LA" for "Los Angeles",
    "5 mins" for "5 minutes", "123 Main St" for "123 Main Street"); and run-together spellings ("mc
    donalds" for "McDonald's"); and "key:value" query strings whose values are all in the text."""
    low = value.strip().lower()
    if any(contains_phrase(text, alias) for alias in ALIASES.get(low, ())):
        return True
    words = low.split()
    if len(words) > 1 and all(
        contains_phrase(text, w) or any(contains_phrase(text, a) for a in ALIASES.get(w, ())) for w in words
    ):
        return True
    value_words = re.findall(r"\w+", low)  # any script: "거실, 에어컨, 실행" is said as "거실 에어컨 실행"
    if value_words and re.search(
        rf"(?<!\w){re.escape(' '.join(value_words))}(?!\w)", " ".join(re.findall(r"\w+", text.lower()))
    ):
        return True
    squeezed = re.sub(r"[^a-z0-9]", "", low)
    tokens = re.findall(r"[a-z0-9]+", text.lower())
    if len(squeezed) >= 5 and any(
        "".join(tokens[i : i + n]) == squeezed for n in (2, 3) for i in range(len(tokens) - n + 1)
    ):
        return True
    parts = re.split(r"\b[a-z_]+:", low)
    return len(parts) > 2 and all(text_recoverable(p.strip(), text) for p in parts[1:] if p.strip())


def _initialisms(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower())
    return {"".join(w[0] for w in words[i : i + n]) for n in range(2, 6) for i in range(len(words) - n + 1)}
