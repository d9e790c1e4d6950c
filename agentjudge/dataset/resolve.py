"""Can a reader recover this argument value from this text? Shared by the realiser and Gate 2.

The realiser states values in different forms per difficulty (ISO dates, "March 17, 2026", "next
Tuesday", "five", "a dozen"); Gate 2 must accept exactly the forms a careful person could resolve and
nothing vaguer. Keeping both directions in one module means a new value form cannot be emitted by the
realiser without Gate 2 knowing how to read it back.

Relative dates only resolve against an explicit anchor ("today is Monday, March 14, 2026"); a query that
says "next Tuesday" without one is not sufficient, because the reader cannot know what "today" is.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from typing import Any

from agentjudge.dataset.wording import contains_phrase, normalize, text_recoverable

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SMALL_NUMBERS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
# Idioms with one exact meaning. "A couple" or "a few" are deliberately absent: they are vague.
NUMBER_IDIOMS = {"half a dozen": 6, "a dozen": 12, "two dozen": 24, "a hundred": 100, "a thousand": 1000}

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ISO_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?$")
_MONTH_RX = "|".join(m for m in MONTHS) + "|" + "|".join(m[:3] for m in MONTHS) + "|sept"
_ABS_MDY = re.compile(rf"\b({_MONTH_RX})\.?\s*(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b")
_ABS_DMY = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+(?:this\s+)?)?({_MONTH_RX})\.?(?:,?\s+(\d{{4}}))?\b"
)
_ISO_IN_TEXT = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_YEAR = re.compile(r"(?<![\d.\-/])((?:19|20)\d{2})(?![\d])")
_SPAN_OF_DATES = re.compile(r"^(\d{4}-\d{2}-\d{2}) (?:to|-|until) (\d{4}-\d{2}-\d{2})$")
_NUMBER_STRING = re.compile(r"-?\d+(?:\.\d+)?")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::\d{2})?$")
_DAYPART = re.compile(r"\b(\d{1,2})(?::(\d{2}))? (?:o'clock )?in the (morning|afternoon|evening|night)\b")
_ANCHOR = re.compile(
    r"\b(?:today is|today's date is|it's|it is|as of today,?|the date today is|current date:?|today:)\s+"
    r"(?:(?:a |an )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday),?\s+)?"
    r"(?:the\s+)?([^.;\n]{4,40})",
)
_TIME = re.compile(
    r"\b(\d{1,2})(?::(\d{2})|\.(\d{2})(?=\s*(?:am|pm|a\.m\.|p\.m\.)))?\s*(am|pm|a\.m\.|p\.m\.)?(?!\d)(?!-\d)"
)


# ---------------------------------------------------------------- numbers


def number_to_words(n: int) -> str | None:
    """English words for 0..999 (the realiser's indirect form); None outside that range."""
    if n < 0 or n > 999:
        return None
    if n < 20:
        return SMALL_NUMBERS[n]
    if n < 100:
        tens, unit = divmod(n, 10)
        return TENS[tens] + ("" if unit == 0 else "-" + SMALL_NUMBERS[unit])
    hundreds, rest = divmod(n, 100)
    head = SMALL_NUMBERS[hundreds] + " hundred"
    return head if rest == 0 else head + " and " + (number_to_words(rest) or "")


_UNITS = {w: i for i, w in enumerate(SMALL_NUMBERS)}
_TENS = {w: i * 10 for i, w in enumerate(TENS) if w}


def _parse_words(tokens: list[str], i: int) -> tuple[int, int] | None:
    """Parse an English number (0..999) starting at ``tokens[i]``; (value, tokens consumed) or None."""

    def below_hundred(j: int) -> tuple[int, int] | None:
        if j >= len(tokens):
            return None
        if tokens[j] in _UNITS:
            return _UNITS[tokens[j]], 1
        if tokens[j] in _TENS:
            value = _TENS[tokens[j]]
            if j + 1 < len(tokens) and tokens[j + 1] in _UNITS and 0 < _UNITS[tokens[j + 1]] < 10:
                return value + _UNITS[tokens[j + 1]], 2
            return value, 1
        return None

    head = below_hundred(i)
    if head is None:
        return None
    value, used = head
    if value < 10 and i + used < len(tokens) and tokens[i + used] == "hundred":
        value, used = value * 100, used + 1
        k = i + used + (1 if i + used < len(tokens) and tokens[i + used] == "and" else 0)
        rest = below_hundred(k)
        if rest is not None:
            value, used = value + rest[0], k - i + rest[1]
    return value, used


# Real text glues units to numbers ("3m", "4C", "0.5A", "298K", "2nd") and writes magnitudes and shares
# in words or signs ("$1.2M", "100 million", "5%"). A numeral may carry a letter suffix only when nothing
# alphanumeric follows it, so codes ("12AB3", "ORD-1234", "v2") still give no number.
_NUMERAL = re.compile(
    r"(?<![\w.\-/])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+)"
    r"([A-Za-z\u00b0\u00b2\u00b3\u00b5\u03a9%]*)(?![\w]|\.\d|[-/]\d)"
)
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9}
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion|trillion)\b", re.IGNORECASE)
_PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per cent\b)", re.IGNORECASE)
_SPAN = re.compile(r"\b(?:next|past|last|this|coming|a|one|the) (week|month|year|decade|century|fortnight)\b")
SPANS = {
    "week": (7.0, 1.0),
    "month": (1.0,),
    "year": (1.0,),
    "decade": (10.0,),
    "century": (100.0,),
    "fortnight": (14.0,),
}
ZERO_IDIOMS = ("from rest", "at rest", "from a standstill")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


@functools.lru_cache(maxsize=4096)
def numbers_in(text: str) -> frozenset[float]:
    """Every number a reader would take from ``text``: numerals (1,500 / 12.5 / 3m / 2nd), their scaled
    forms ("$1.2M", "100 million": both the numeral and the product; "5%": both 5 and 0.05), exact number
    words and ordinals. Digits inside codes ("ORD-1234") or dates are not numbers a reader would take."""
    found: set[float] = set()
    for match in _NUMERAL.finditer(text):
        value = float(match.group(1).replace(",", ""))
        found.add(value)
        suffix = match.group(2)
        rest = text[match.end() :]
        if suffix in _SCALE_SUFFIX:
            found.add(value * _SCALE_SUFFIX[suffix])
        elif not suffix and (scale := _SCALE_AFTER.match(rest)) is not None:
            found.add(value * _SCALE_WORDS[scale.group(1).lower()])
        if suffix == "%" or (not suffix and _PERCENT_AFTER.match(rest)):
            found.add(value / 100)
        if re.search(r"[-\u2212]\s$", text[: match.start()]):  # "5x^2 - 7x": the coefficient is -7
            found.add(-value)
    for yy in re.findall(r"(?<![\w'])['\u2019](\d{2})\b", text):  # "songs from '19"
        found.update((2000.0 + int(yy), 1900.0 + int(yy)))
    norm = normalize(text)
    for unit in _SPAN.findall(norm):
        found.update(SPANS[unit])
    if any(idiom in norm for idiom in ZERO_IDIOMS):
        found.add(0.0)
    for idiom, number in NUMBER_IDIOMS.items():
        if re.search(rf"(?<![a-z]){idiom}(?![a-z])", norm):
            found.add(float(number))
    for k, word in enumerate(ORDINALS, start=1):
        if re.search(rf"(?<![a-z]){word}(?![a-z])", norm):
            found.add(float(k))
    for clause in re.split(r"[.,;:!?()\"]", text.lower()):  # "to thirty. Two new..." is not 32
        tokens = re.findall(r"[a-z]+", normalize(clause))
        i = 0
        while i < len(tokens):
            parsed = _parse_words(tokens, i)
            if parsed is None:
                i += 1
                continue
            found.add(float(parsed[0]))
            i += parsed[1]
    return frozenset(found)


def number_in(value: float, text: str) -> bool:
    """``value`` is among the numbers of ``text`` (relative tolerance 1e-9: "1.267 billion" is a product)."""
    numbers = numbers_in(text)
    return value in numbers or any(math.isclose(value, n, rel_tol=1e-9) for n in numbers)


# ---------------------------------------------------------------- dates and times


def _month_index(name: str) -> int:
    name = name.lower().rstrip(".")
    if name == "sept":
        return 9
    for i, month in enumerate(MONTHS):
        if month.startswith(name[:3]):
            return i + 1
    raise ValueError(name)


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def absolute_dates(text: str, default_year: int | None = None) -> set[dt.date]:
    """Dates written out in full or as ISO; "March 17" without a year only counts with ``default_year``."""
    found: set[dt.date] = set()
    low = text.lower()
    for y, m, d in _ISO_IN_TEXT.findall(low):
        if (date := _safe_date(int(y), int(m), int(d))) is not None:
            found.add(date)
    found |= dotted_dates(low)
    for month, day, year in _ABS_MDY.findall(low):
        y = int(year) if year else default_year
        if y is not None and (date := _safe_date(y, _month_index(month), int(day))) is not None:
            found.add(date)
    for day, month, year in _ABS_DMY.findall(low):
        y = int(year) if year else default_year
        if y is not None and (date := _safe_date(y, _month_index(month), int(day))) is not None:
            found.add(date)
    return found


_NUMERIC_ANCHOR = re.compile(
    r"\b(?:today is|today's date is|it's|it is|current date:?|today:)\s+(?:[a-z]+day,?\s+)?"
    r"(\d{4}[./-]\d{1,2}[./-]\d{1,2})(?!\d)"
)


def find_anchor(*texts: str) -> dt.date | None:
    """The "today" a text states explicitly ("Today is Monday, March 14, 2026", "today is 2023.10.1")."""
    for text in texts:
        for match in _NUMERIC_ANCHOR.finditer(text.lower()):
            dates = absolute_dates(match.group(1))
            if len(dates) == 1:
                return next(iter(dates))
        for match in _ANCHOR.finditer(text.lower()):
            dates = absolute_dates(match.group(1))
            if len(dates) == 1:
                return next(iter(dates))
    return None


_REL_DAYS = re.compile(r"\bin (\w+(?:-\w+)?) (day|days|week|weeks)\b")
_REL_FROM = re.compile(r"\b(\w+(?:-\w+)?) (day|days|week|weeks) (?:from|after) (?:today|now)\b")
_REL_AGO = re.compile(r"\b(\w+(?:-\w+)?) (day|days|week|weeks) ago\b")
_REL_WEEKDAY = re.compile(r"\b(next|this coming|upcoming|this|last) (" + "|".join(WEEKDAYS) + r")\b")
RELATIVE_DATE = re.compile(
    r"\b(?:today|tomorrow|yesterday|day after tomorrow|day before yesterday|next week|"
    r"(?:in|from) \w+(?:-\w+)? (?:days?|weeks?)|\w+ (?:days?|weeks?) (?:ago|from today|from now|after today)|"
    r"(?:next|this coming|last) (?:" + "|".join(WEEKDAYS) + r"))\b"
)


def _count(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    if word in ("a", "an", "one"):
        return 1
    tokens = normalize(word).split()
    parsed = _parse_words(tokens, 0) if tokens else None
    return parsed[0] if parsed and parsed[1] == len(tokens) else None


_DAY_ONLY = re.compile(rf"\bthe (\d{{1,2}})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?(?:{_MONTH_RX})\b)")
_MONTH_YEAR = re.compile(rf"\b({_MONTH_RX})\.?,?\s+(\d{{4}})\b|\b(\d{{4}}),?\s+({_MONTH_RX})\b")


def _day_of_known_month(text: str, anchor: dt.date | None) -> set[dt.date]:
    """ "on the 9th" when the text fixes the month: "currently is sep 2023", "march 2023", or today's
    date (the 9th then means this month's, or next month's when it has passed)."""
    low = text.lower()
    days = [int(d) for d in _DAY_ONLY.findall(low)]
    if not days:
        return set()
    months = {(int(y or y2), _month_index(m or m2)) for m, y, y2, m2 in _MONTH_YEAR.findall(low)}
    if len(months) == 1:
        year, month = next(iter(months))
        return {d for day in days if (d := _safe_date(year, month, day)) is not None}
    if anchor is not None and not months:
        found = set()
        for day in days:
            year, month = anchor.year, anchor.month
            if day < anchor.day:
                year, month = (year + 1, 1) if month == 12 else (year, month + 1)
            if (d := _safe_date(year, month, day)) is not None:
                found.add(d)
        return found
    return set()


def relative_dates(text: str, today: dt.date) -> set[dt.date]:
    """Dates a relative expression in ``text`` names, resolved against ``today``."""
    low = text.lower()
    found: set[dt.date] = set()
    if re.search(r"\bday after tomorrow\b", low):
        found.add(today + dt.timedelta(days=2))
    if re.search(r"\bday before yesterday\b", low):
        found.add(today - dt.timedelta(days=2))
    if re.search(r"(?<!after )\btomorrow\b", low):
        found.add(today + dt.timedelta(days=1))
    if re.search(r"(?<!before )\byesterday\b", low):
        found.add(today - dt.timedelta(days=1))
    if re.search(r"\btoday\b", low):
        found.add(today)
    for rx, sign in ((_REL_DAYS, 1), (_REL_FROM, 1), (_REL_AGO, -1)):
        for word, unit in rx.findall(low):
            n = _count(word)
            if n is not None:
                found.add(today + dt.timedelta(days=sign * n * (7 if unit.startswith("week") else 1)))
    for which, weekday in _REL_WEEKDAY.findall(low):
        target = WEEKDAYS.index(weekday)
        ahead = (target - today.weekday()) % 7
        if which == "last":
            back = (today.weekday() - target) % 7 or 7
            found.add(today - dt.timedelta(days=back))
        elif which == "next":
            # "next Tuesday" = the first Tuesday after today; said on a Tuesday it means a week later.
            found.add(today + dt.timedelta(days=ahead or 7))
        else:  # "this Tuesday" / "this coming Tuesday": the upcoming one, today excluded
            found.add(today + dt.timedelta(days=ahead or 7))
    return found


@functools.lru_cache(maxsize=4096)
def dates_in(text: str, context: str = "") -> frozenset[dt.date]:
    """Every date recoverable from ``text``; relative ones need an anchor in ``text`` or ``context``."""
    anchor = find_anchor(text, context)
    years = set(_YEAR.findall(text))
    # "from April 15th to April 22nd 2023": a year stated once holds for the other dates of the text
    default_year = anchor.year if anchor else (int(next(iter(years))) if len(years) == 1 else None)
    found = absolute_dates(text, default_year=default_year)
    if anchor is not None:
        found |= relative_dates(text, anchor)
        if re.search(r"\bnext year\b", text.lower()):  # "April 13th of next year"
            found |= absolute_dates(text, default_year=anchor.year + 1)
    found |= _day_of_known_month(text, anchor)
    return frozenset(found)


def times_in(text: str) -> set[tuple[int, int]]:
    """(hour, minute) pairs: "14:30", "9am", "9:30 p.m.", "noon", "midnight"."""
    low = text.lower()
    found: set[tuple[int, int]] = set()
    if re.search(r"\bnoon\b|\bmidday\b", low):
        found.add((12, 0))
    if re.search(r"\bmidnight\b", low):
        found.add((0, 0))
    for hour_s, colon_min, dot_min, meridiem in _TIME.findall(low):
        minute_s = colon_min or dot_min  # "11.00 a.m." only with a meridiem (else it is a decimal)
        hour, minute = int(hour_s), int(minute_s or 0)
        if not minute_s and not meridiem:
            continue  # a bare number is not a time
        if meridiem.startswith("p") and hour < 12:
            hour += 12
        elif meridiem.startswith("a") and hour == 12:
            hour = 0
        if hour < 24 and minute < 60:
            found.add((hour, minute))
    for hour_s, minute_s, part in _DAYPART.findall(low):  # "5 in the afternoon", "8 in the evening"
        hour, minute = int(hour_s), int(minute_s or 0)
        if part != "morning" and hour < 12:
            hour += 12
        if hour < 24 and minute < 60:
            found.add((hour, minute))
    return found


def has_unanchored_relative_date(text: str, context: str = "") -> str | None:
    """The relative date expression ``text`` uses without saying what "today" is, else None."""
    match = RELATIVE_DATE.search(text.lower())
    if match is None or find_anchor(text, context) is not None:
        return None
    return match.group(0)


# ---------------------------------------------------------------- values


def leaves(value: Any) -> list[Any]:
    """Scalar leaves of a JSON value (lists and dicts flattened), the unit grounding is checked on."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def is_checkable(value: Any) -> bool:
    """Booleans and nulls are expressed by intent ("and notify them"), not as recoverable tokens; so are
    booleans written as strings ("True", as some real tool schemas declare them)."""
    if value is None or isinstance(value, bool) or value == "":
        return False
    return not (isinstance(value, str) and value.strip().lower() in ("true", "false"))


def recoverable(value: Any, text: str, context: str = "") -> bool:
    """True when a reader of ``text`` (with ``context``, e.g. the system prompt, for "today") can state
    exactly ``value``. Unchecked kinds (bool, null) count as recoverable; callers filter with
    :func:`is_checkable` first when they want to count them separately."""
    if not is_checkable(value):
        return True
    if isinstance(value, (list, dict)):
        return all(recoverable(leaf, text, context) for leaf in leaves(value))
    if isinstance(value, (int, float)):
        return number_in(float(value), text)
    text_value = str(value)
    if ISO_DATE.match(text_value):
        date = dt.date.fromisoformat(text_value)
        return date in dates_in(text, context) or date in dotted_dates(text)
    if (m := ISO_DATETIME.match(text_value)) is not None:
        date = dt.date.fromisoformat(m.group(1))
        if contains_phrase(text, text_value):
            return True
        if text_value[11:] in (
            "00:00:00",
            "23:59:59",
            "00:00",
            "23:59",
        ):  # a whole day: the date is the value
            return date in dates_in(text, context) or date in dotted_dates(text)
        return date in dates_in(text, context) and (int(m.group(2)), int(m.group(3))) in times_in(text)
    if (span := _SPAN_OF_DATES.match(text_value)) is not None:  # "2023-10-01 to 2023-10-07"
        return recoverable(span.group(1), text, context) and recoverable(span.group(2), text, context)
    if (clock := _CLOCK.match(text_value)) is not None:
        hour_minute = (int(clock.group(1)), int(clock.group(2)))
        return hour_minute in times_in(text) or contains_phrase(text, text_value)
    if (other := other_date_forms(text_value)) is not None:
        found = dates_in(text, context) | dotted_dates(text)
        return contains_phrase(text, text_value) or bool(other & found)
    if _NUMBER_STRING.fullmatch(text_value.strip()) and not contains_phrase(text, text_value):
        return number_in(float(text_value), text)  # a number typed as a string ("3" for "three-star")
    return text_recoverable(text_value, text)


# ---------------------------------------------------------------- non-ISO dates

_US_DATE = re.compile(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$")
_YMD_DATE = re.compile(r"^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$")
_DOTTED_IN_TEXT = re.compile(
    r"(?<![\d.])(\d{4})[./](\d{1,2})[./](\d{1,2})(?![\d])|(?<![\d./])(\d{1,2})[./-](\d{1,2})[./-](\d{4})(?!\d)"
)


def other_date_forms(value: str) -> set[dt.date] | None:
    """Dates a non-ISO date string may mean ("06-01-2023": June 1 or January 6; "2023/4/17"), or None."""
    if (m := _YMD_DATE.match(value.strip())) is not None:
        date = _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return {date} if date else None
    if (m := _US_DATE.match(value.strip())) is not None:
        a, b, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
        dates = {d for d in (_safe_date(y, a, b), _safe_date(y, b, a)) if d is not None}
        return dates or None
    return None


def dotted_dates(text: str) -> set[dt.date]:
    """Numeric dates in text other than ISO: "2023.4.17", "2023/04/17", "4/17/2023", "17.04.2023"
    (day-month order ambiguous: both readings)."""
    found: set[dt.date] = set()
    for y1, m1, d1, a, b, y2 in _DOTTED_IN_TEXT.findall(text):
        if y1:
            if (date := _safe_date(int(y1), int(m1), int(d1))) is not None:
                found.add(date)
        else:
            for mm, dd in ((int(a), int(b)), (int(b), int(a))):
                if (date := _safe_date(int(y2), mm, dd)) is not None:
                    found.add(date)
    return found


def is_nested_alternative(alternative: Any) -> bool:
    """Accepted values as BFCL writes them for a dict-typed argument: a dict of accepted-value lists."""
    return (
        isinstance(alternative, dict)
        and bool(alternative)
        and all(isinstance(v, list) and v for v in alternative.values())
    )


def alternatives_recoverable(alternatives: list[Any], text: str, context: str = "") -> bool:
    """An argument with several accepted values is grounded when it may be left out ("" is among them)
    or when one of its values is recoverable in full (dict alternatives: key by key, recursively)."""
    if "" in alternatives:
        return True
    for alt in alternatives:
        if is_nested_alternative(alt):
            if all(alternatives_recoverable(sub, text, context) for sub in alt.values()):
                return True
        elif recoverable(alt, text, context):
            return True
    return False


def in_output(value: Any, output: Any) -> bool:
    """``value`` occurs as a leaf (or, for strings, whole-word inside a string leaf) of a tool output."""
    for leaf in leaves(output):
        if isinstance(value, bool) or isinstance(leaf, bool):
            if value is leaf:
                return True
            continue
        if isinstance(value, (int, float)) and isinstance(leaf, (int, float)):
            if float(value) == float(leaf):
                return True
        elif (
            isinstance(value, str)
            and isinstance(leaf, str)
            and (normalize(value) == normalize(leaf) or (len(value) >= 4 and contains_phrase(leaf, value)))
        ):
            return True
    return False


# ---------------------------------------------------------------- rendering (the realiser's side)


def format_date_long(date: dt.date, with_weekday: bool = False, with_year: bool = True) -> str:
    """ "March 17, 2026" / "Tuesday, March 17, 2026": forms :func:`absolute_dates` reads back."""
    body = f"{MONTHS[date.month - 1].capitalize()} {date.day}"
    if with_year:
        body += f", {date.year}"
    return f"{WEEKDAYS[date.weekday()].capitalize()}, {body}" if with_weekday else body


def relative_phrases(date: dt.date, today: dt.date) -> list[str]:
    """Every relative way to name ``date`` from ``today`` that :func:`relative_dates` resolves uniquely."""
    delta = (date - today).days
    out: list[str] = []
    if delta == 0:
        out.append("today")
    elif delta == 1:
        out.append("tomorrow")
    elif delta == 2:
        out.append("the day after tomorrow")
    elif delta == -1:
        out.append("yesterday")
    if delta >= 2:
        words = number_to_words(delta) or str(delta)
        out += [f"in {words} days", f"{words} days from today"]
        if delta % 7 == 0:
            weeks = delta // 7
            out.append("in a week" if weeks == 1 else f"in {number_to_words(weeks)} weeks")
    if delta <= -2:
        out.append(f"{number_to_words(-delta) or -delta} days ago")
    if 2 <= delta <= 6:  # "next Tuesday" is ambiguous in English; "this coming Tuesday" is not
        out.append(f"this coming {WEEKDAYS[date.weekday()].capitalize()}")
    return [p for p in out if date in relative_dates(p, today)]


def format_time(hour: int, minute: int) -> str:
    """ "9:30 am" style, read back by :func:`times_in`."""
    meridiem = "am" if hour < 12 else "pm"
    h12 = hour % 12 or 12
    return f"{h12}:{minute:02d} {meridiem}" if minute else f"{h12} {meridiem}"
