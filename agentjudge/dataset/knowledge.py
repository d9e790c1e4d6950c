"""Common knowledge a person leaves unsaid: Gate 1's semantic layer for human-written queries.

People write "drawing a king from a deck of cards", "in San Francisco", "a cartoon movie", "from 9:00 for 3
hours"; the accepted answer says 52 and 4, California, Animation, 12:00. A textual gate finds none of those
values in the query. This module says, for one argument value and the query, which piece of common
knowledge states it, or None. Five families, each small, general and tested entry by entry
(``tests/test_knowledge.py``), none written from any benchmark's answers:

arithmetic  numbers and times the query states, combined the one way the parameter asks for: a duration
            in the unit the description names ("the past hour" → 3600 seconds), the span between two stated
            times or dates, an end time (start + duration), a date a stated period later, a year "N years
            ago" from a stated year, a stated loss as a negative amount, a strict bound ("less than 5" →
            4 for an integer), an ordinal as a zero-based index or offset when the description says so, a
            month's number, an amount in cents when the description asks for the smallest unit, the upper
            end of the range the description states when the query asks for the maximum, a party size
            ("just for myself" → 1, "myself and one other adult" → 2), a weekday relative to a stated today
places     a small gazetteer: US states with their codes and large cities, countries with their ISO codes,
            capitals and large cities, time zones with their abbreviations, and what kind of place a name is
            (city / state / country)
constants  everyday facts tied to the words that invoke them: a deck has 52 cards, 4 of each rank, 13 of a
            suit; a poker hand has 5 cards; a die has 6 sides, a coin 2; an object dropped starts at 0
            speed; the language a quoted text is written in
synonyms    everyday words for members of common closed lists (genres, event types, cuisines, ride types,
            sizes, urgency, price ranges, intents, travel modes, CRUD operations, …); only applied when the
            value is a member of the parameter's enum or an option its description lists
formats     a value built from query words in a syntax the description spells out ("track:Baby Shark" for
            "play Baby Shark" when the description says "formatted as 'track:Song Name'"; "p4" for priority 4)

``gates._grounded`` calls ``explain`` only for records whose query is a person's own (``human_query``): our
generated records must state every value, and nothing here applies to them. Each rule is measured against
the mismatched-query control of ``bench/bench_bfcl_gates.py`` (a rule that lets a record pass with another
record's query is wrong); ``ENABLED`` lets the bench switch families off one at a time.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from typing import Any

from agentjudge.dataset import resolve

FAMILIES = ("arithmetic", "places", "constants", "synonyms", "formats")
ENABLED: set[str] = set(FAMILIES)


def explain(value: Any, query: str, name: str, schema: dict[str, Any] | None) -> str | None:
    """The family whose knowledge states ``value`` for the parameter ``name`` (with ``schema``) from
    ``query``, or None."""
    param = _Param(name, schema if isinstance(schema, dict) else {})
    for family in FAMILIES:
        if family in ENABLED and _RULES[family](value, query, param):
            return family
    return None


class _Param:
    """A parameter's name and schema, with the lower-cased words a rule may key on."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.schema = schema
        self.description = str(schema.get("description", ""))
        spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ")  # perPage → per page
        self.words = f"{spaced} {self.description}".lower()
        self.integer = schema.get("type") == "integer"

    def says(self, pattern: str) -> bool:
        return re.search(pattern, self.words) is not None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()):
        return float(value)
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# ---------------------------------------------------------------- arithmetic

_UNIT_SECONDS = {
    "second": 1,
    "sec": 1,
    "minute": 60,
    "min": 60,
    "hour": 3600,
    "hr": 3600,
    "day": 86400,
    "week": 604800,
}
_DURATION = re.compile(
    r"\b(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|forty-five|fifty|sixty|ninety|half an?|the past|the last|past|last|this)\s*"
    r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b"
)
_LOSS = re.compile(
    r"\b(?:los[est]|losing|donat\w*|spen[dt]\w*|paid|pay(?:ing|s)?|withdr[ae]w\w*|decreas\w*|dropp?\w*|"
    r"minus|subtract\w*|deduct\w*|owe[sd]?|debt|fell|fall(?:s|en)?|declin\w*|gave away|give away)\b"
)
_BELOW = re.compile(r"\b(?:less than|fewer than|under|below)\s+(\S+)")
_ABOVE = re.compile(r"\b(?:more than|greater than|over|above)\s+(\S+)")
_MAXIMUM = re.compile(r"\b(?:max|maximum|full|highest|as many as possible|top)\b")
_YEARS_AGO = re.compile(r"\b(\w+(?:-\w+)?) years? (ago|from now|later|before|after)\b")
_RANGE = re.compile(r"\b(?:between|from|range of|to|maximum|max|up to|at most|ranging)\b")
_ALONE = re.compile(
    r"\b(?:for myself|just me|only me|by myself|myself only|alone|solo|just for me|only for me|"
    r"a single person|one person)\b"
)
_ME_AND = re.compile(r"\b(?:myself|me) and (\w+) (?:other|more|others|friends?|adults?|people|persons?)\b")


def _durations(text: str) -> set[float]:
    """Durations the text states, in seconds ("3 hours", "a minute", "the past hour", "half an hour")."""
    found: set[float] = set()
    for amount, unit in _DURATION.findall(text.lower()):
        base = unit.rstrip("s") if unit not in ("secs", "mins", "hrs") else unit[:-1]
        seconds = _UNIT_SECONDS.get(base) or _UNIT_SECONDS.get(base[:3]) or 0
        if amount.startswith("half"):
            count: float | None = 0.5
        elif amount in ("the past", "the last", "past", "last", "this"):
            count = 1.0
        else:
            parsed = resolve._count(amount) if not re.fullmatch(r"[\d.]+", amount) else None
            count = float(amount) if re.fullmatch(r"\d+(?:\.\d+)?", amount) else parsed
        if count is not None and seconds:
            found.add(float(count) * seconds)
    return found


def _unit_of(param: _Param) -> float | None:
    """Seconds per unit of a duration parameter, from the unit its name or description names."""
    for pattern, seconds in (
        (r"\bmillisecond|\bms\b", 0.001),
        (r"\bseconds?\b|\bsecs?\b", 1.0),
        (r"\bminutes?\b|\bmins?\b", 60.0),
        (r"\bhours?\b", 3600.0),
        (r"\bdays?\b|\bnights?\b", 86400.0),
    ):
        if param.says(pattern):
            return seconds
    return None


def _minutes_of_day(text: str) -> list[int]:
    return sorted({h * 60 + m for h, m in resolve.times_in(text)})


def _dates(text: str) -> set[dt.date]:
    return set(resolve.dates_in(text)) | resolve.dotted_dates(text.lower())


def _arithmetic_number(v: float, query: str, param: _Param) -> bool:
    low = query.lower()
    stated = resolve.numbers_in(query)
    if v < 0 and (_LOSS.search(low) or param.says(r"\bnegative\b")) and resolve.number_in(-v, query):
        return True
    if param.integer:
        for pattern, step in ((_BELOW, 1.0), (_ABOVE, -1.0)):
            for word in pattern.findall(low):
                n = _number(word.strip(".,;:?!$")) or resolve._count(word.strip(".,;:?!"))
                if n is not None and _close(v + step, float(n)):
                    return True
    unit = _unit_of(param)
    if unit is not None and v > 0:
        spans = set(_durations(query))
        minutes = _minutes_of_day(query)
        spans |= {60.0 * (b - a) for a in minutes for b in minutes if b > a}
        if param.says(r"\bdays?\b|\bnights?\b|\blength\b|\bstay\b"):
            dates = sorted(_dates(query))
            spans |= {86400.0 * (b - a).days for a in dates for b in dates if b > a}
        if any(_close(v, s / unit) for s in spans):
            return True
    if param.says(r"\bindex\b|\boffset\b|\bposition\b") and param.says(
        r"zero-based|0-based|\boffset\b|\bskip\b|starting point"
    ):
        ordinals = {float(k) for k, w in enumerate(resolve.ORDINALS, 1) if re.search(rf"\b{w}\b", low)}
        if any(_close(v, k - 1) for k in ordinals):
            return True
    if param.says(r"\bmonth\b") and 1 <= v <= 12 and v.is_integer():
        month = resolve.MONTHS[int(v) - 1]
        if re.search(rf"\b(?:{month}|{month[:3]})\b", low) or any(d.month == v for d in _dates(query)):
            return True
    if param.says(r"\bcents?\b|smallest unit") and any(_close(v, 100 * n) for n in stated):
        return True
    if _asks_for_maximum(low, param) and _RANGE.search(param.description.lower()):
        bounds = resolve.numbers_in(param.description)
        if bounds and _close(v, max(bounds)):
            return True
    if param.says(
        r"\badults?\b|\bpeople\b|\bpersons?\b|\bguests?\b|\bpassengers?\b|\btickets?\b|\bseats?\b|"
        r"\btravell?ers?\b|\bparty\b"
    ):
        if v == 1 and _ALONE.search(low):
            return True
        for word in _ME_AND.findall(low):
            n = resolve._count(word)
            if n is not None and v == n + 1:
                return True
    return _years_apart(v, query)


def _asks_for_maximum(low: str, param: _Param) -> bool:
    """ "max entries per page", "at full volume": a maximum word followed within four words by a word of
    the parameter's name ("perPage", "volume"); "the full details" does not ask for the most per page."""
    names = {w[:4] for w in re.findall(r"[a-z]{3,}", re.sub(r"([a-z])([A-Z])", r"\1 \2", param.name).lower())}
    for match in _MAXIMUM.finditer(low):
        following = re.findall(r"[a-z]+", low[match.end() :])[:4]
        if any(w[:4] in names for w in following if len(w) >= 3):
            return True
    return False


def _years_apart(v: float, query: str) -> bool:
    """ "seven years ago of 2023", "six years ago. This year is 2023": a stated year minus (or plus) N."""
    years = {float(y) for y in re.findall(r"\b((?:19|20)\d{2})\b", query)}
    for word, direction in _YEARS_AGO.findall(query.lower()):
        n = resolve._count(word)
        if n is None:
            continue
        sign = -1 if direction in ("ago", "before") else 1
        if any(_close(v, y + sign * n) for y in years):
            return True
    return False


_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
_CLOCK_FORMAT = re.compile(r"\b(hh:mm:ss|hh:mm|mm:ss)\b")
_NEXT_WEEK_DAY = re.compile(r"\b(" + "|".join(resolve.WEEKDAYS) + r") (?:of )?next week\b")


def _arithmetic_text(value: str, query: str, param: _Param) -> bool:
    low = query.lower()
    if (m := _DATETIME.match(value.strip())) is not None:
        y, mo, d, hh, mm, _ = m.groups()
        target = resolve._safe_date(int(y), int(mo), int(d))
        if target is None:
            return False
        durations = _durations(query)
        dates = _dates(query)
        if hh is None:  # a date: a stated date plus a stated period ("return a week later")
            if any(dt.timedelta(seconds=s) == target - a for a in dates for s in durations if s % 86400 == 0):
                return True
            anchor = resolve.find_anchor(query)
            for day in _NEXT_WEEK_DAY.findall(low):  # "Tuesday next week", today stated
                if anchor is not None:
                    monday = anchor - dt.timedelta(days=anchor.weekday()) + dt.timedelta(days=7)
                    if target == monday + dt.timedelta(days=resolve.WEEKDAYS.index(day)):
                        return True
            return False
        end = dt.datetime(target.year, target.month, target.day, int(hh), int(mm))
        starts = [
            dt.datetime(a.year, a.month, a.day, h, mi) for a in dates for h, mi in resolve.times_in(query)
        ]
        return any(end - s == dt.timedelta(seconds=span) for s in starts for span in durations)
    if (fmt := _CLOCK_FORMAT.search(param.description.lower())) is not None:
        parts = value.strip().split(":")
        if all(p.isdigit() for p in parts) and len(parts) == fmt.group(1).count(":") + 1:
            scale = {"hh:mm:ss": (3600, 60, 1), "hh:mm": (3600, 60), "mm:ss": (60, 1)}[fmt.group(1)]
            seconds = sum(int(p) * s for p, s in zip(parts, scale, strict=True))
            return seconds > 0 and any(_close(seconds, s) for s in _durations(query))
    return False


_LENGTH_UNITS = {
    "meter": "m",
    "metre": "m",
    "centimeter": "cm",
    "millimeter": "mm",
    "kilometer": "km",
    "foot": "ft",
    "feet": "ft",
    "inch": "in",
    "inches": "in",
    "yard": "yd",
    "mile": "mi",
}
_AREA = re.compile(r"^(?:square|sq\.?)\s+([a-z]+)$|^([a-z]+)\s*(?:\^2|²|2)$")


def _area_unit(value: str, query: str, param: _Param) -> bool:
    """An area's unit is the square of a length unit the query states ("base of 25 feet" → "square feet",
    "ft^2"), for a parameter about an area."""
    m = _AREA.match(value.strip().lower())
    if m is None or not param.says(r"\barea\b|\bsquare\b"):
        return False
    unit = (
        (m.group(1) or m.group(2)).rstrip("s")
        if (m.group(1) or m.group(2)) not in ("inches", "feet")
        else (m.group(1) or m.group(2))
    )
    symbol = _LENGTH_UNITS.get(unit, unit)
    names = [n for n, sym in _LENGTH_UNITS.items() if sym == symbol]
    return any(re.search(rf"\b{n}(?:e?s)?\b", query.lower()) for n in names) or bool(
        re.search(rf"\d\s?{symbol}\b", query.lower())
    )


def _arithmetic(value: Any, query: str, param: _Param) -> bool:
    v = _number(value)
    if v is not None and _arithmetic_number(v, query, param):
        return True
    return isinstance(value, str) and (
        _arithmetic_text(value, query, param) or _area_unit(value, query, param)
    )


# ---------------------------------------------------------------- places

# state: (code, large or well-known cities)
# fmt: off
US_STATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "alabama": ("AL", ("birmingham", "montgomery", "huntsville", "mobile")),
    "alaska": ("AK", ("anchorage", "juneau", "fairbanks")),
    "arizona": ("AZ", ("phoenix", "tucson", "mesa", "scottsdale", "flagstaff", "tempe")),
    "arkansas": ("AR", ("little rock", "fayetteville")),
    "california": ("CA", ("los angeles", "san francisco", "san diego", "san jose", "sacramento", "oakland",
                          "fresno", "long beach", "berkeley", "palo alto", "santa monica", "anaheim",
                          "pasadena", "santa rosa", "santa cruz", "sunnyvale", "napa", "santa barbara",
                          "irvine", "riverside", "bakersfield", "stockton")),
    "colorado": ("CO", ("denver", "colorado springs", "boulder", "aurora")),
    "connecticut": ("CT", ("hartford", "new haven", "stamford", "bridgeport")),
    "delaware": ("DE", ("wilmington", "dover")),
    "florida": ("FL", ("miami", "orlando", "tampa", "jacksonville", "tallahassee", "fort lauderdale")),
    "georgia": ("GA", ("atlanta", "savannah", "augusta")),
    "hawaii": ("HI", ("honolulu", "hilo")),
    "idaho": ("ID", ("boise",)),
    "illinois": ("IL", ("chicago", "springfield", "naperville", "evanston")),
    "indiana": ("IN", ("indianapolis", "fort wayne", "bloomington")),
    "iowa": ("IA", ("des moines", "cedar rapids")),
    "kansas": ("KS", ("wichita", "topeka", "overland park")),
    "kentucky": ("KY", ("louisville", "lexington", "frankfort")),
    "louisiana": ("LA", ("new orleans", "baton rouge", "shreveport")),
    "maine": ("ME", ("portland", "augusta")),
    "maryland": ("MD", ("baltimore", "annapolis")),
    "massachusetts": ("MA", ("boston", "cambridge", "worcester", "springfield")),
    "michigan": ("MI", ("detroit", "grand rapids", "ann arbor", "lansing")),
    "minnesota": ("MN", ("minneapolis", "saint paul", "st. paul")),
    "mississippi": ("MS", ("jackson",)),
    "missouri": ("MO", ("kansas city", "st. louis", "saint louis", "jefferson city")),
    "montana": ("MT", ("billings", "helena", "missoula")),
    "nebraska": ("NE", ("omaha", "lincoln")),
    "nevada": ("NV", ("las vegas", "reno", "carson city")),
    "new hampshire": ("NH", ("manchester", "concord")),
    "new jersey": ("NJ", ("newark", "jersey city", "trenton", "princeton", "hoboken")),
    "new mexico": ("NM", ("albuquerque", "santa fe")),
    "new york": ("NY", ("new york city", "nyc", "brooklyn", "manhattan", "buffalo", "rochester", "albany")),
    "north carolina": ("NC", ("charlotte", "raleigh", "durham", "greensboro")),
    "north dakota": ("ND", ("fargo", "bismarck")),
    "ohio": ("OH", ("columbus", "cleveland", "cincinnati", "toledo")),
    "oklahoma": ("OK", ("oklahoma city", "tulsa")),
    "oregon": ("OR", ("portland", "salem", "eugene")),
    "pennsylvania": ("PA", ("philadelphia", "pittsburgh", "harrisburg")),
    "rhode island": ("RI", ("providence",)),
    "south carolina": ("SC", ("charleston", "columbia")),
    "south dakota": ("SD", ("sioux falls", "pierre")),
    "tennessee": ("TN", ("nashville", "memphis", "knoxville")),
    "texas": ("TX", ("houston", "dallas", "austin", "san antonio", "fort worth", "el paso")),
    "utah": ("UT", ("salt lake city", "provo")),
    "vermont": ("VT", ("burlington", "montpelier")),
    "virginia": ("VA", ("virginia beach", "richmond", "norfolk", "arlington")),
    "washington": ("WA", ("seattle", "spokane", "tacoma", "olympia", "redmond", "bellevue")),
    "west virginia": ("WV", ("charleston",)),
    "wisconsin": ("WI", ("milwaukee", "madison")),
    "wyoming": ("WY", ("cheyenne",)),
}
# fmt: on
# name: (ISO 3166 alpha-2, alpha-3, other names, capital and large cities)
# fmt: off
COUNTRIES: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "united states": ("US", "USA", ("usa", "u.s.", "u.s.a.", "america", "united states of america"), (
        "washington", "new york", "los angeles", "chicago")),
    "united kingdom": ("GB", "GBR", ("uk", "u.k.", "britain", "great britain", "england"), ("london",
        "manchester", "birmingham", "edinburgh", "glasgow", "liverpool")),
    "canada": ("CA", "CAN", (), ("ottawa", "toronto", "montreal", "vancouver", "calgary")),
    "mexico": ("MX", "MEX", (), ("mexico city", "guadalajara", "monterrey", "cancun")),
    "france": ("FR", "FRA", (), ("paris", "marseille", "lyon", "nice")),
    "germany": ("DE", "DEU", (), ("berlin", "munich", "hamburg", "frankfurt", "cologne")),
    "italy": ("IT", "ITA", (), ("rome", "milan", "naples", "venice", "florence")),
    "spain": ("ES", "ESP", (), ("madrid", "barcelona", "seville", "valencia")),
    "portugal": ("PT", "PRT", (), ("lisbon", "porto")),
    "netherlands": ("NL", "NLD", ("holland",), ("amsterdam", "rotterdam", "the hague")),
    "belgium": ("BE", "BEL", (), ("brussels", "antwerp")),
    "switzerland": ("CH", "CHE", (), ("bern", "zurich", "geneva")),
    "austria": ("AT", "AUT", (), ("vienna", "salzburg")),
    "sweden": ("SE", "SWE", (), ("stockholm", "gothenburg")),
    "norway": ("NO", "NOR", (), ("oslo", "bergen")),
    "denmark": ("DK", "DNK", (), ("copenhagen",)),
    "finland": ("FI", "FIN", (), ("helsinki",)),
    "ireland": ("IE", "IRL", (), ("dublin", "cork")),
    "poland": ("PL", "POL", (), ("warsaw", "krakow")),
    "greece": ("GR", "GRC", (), ("athens",)),
    "turkey": ("TR", "TUR", ("türkiye",), ("ankara", "istanbul")),
    "russia": ("RU", "RUS", (), ("moscow", "saint petersburg")),
    "china": ("CN", "CHN", (), ("beijing", "shanghai", "shenzhen", "guangzhou")),
    "japan": ("JP", "JPN", (), ("tokyo", "osaka", "kyoto")),
    "south korea": ("KR", "KOR", ("korea",), ("seoul", "busan")),
    "india": ("IN", "IND", (), ("new delhi", "delhi", "mumbai", "bangalore", "chennai", "kolkata", "noida")),
    "thailand": ("TH", "THA", (), ("bangkok", "chiang mai", "phuket")),
    "vietnam": ("VN", "VNM", (), ("hanoi", "ho chi minh city")),
    "singapore": ("SG", "SGP", (), ("singapore",)),
    "indonesia": ("ID", "IDN", (), ("jakarta", "bali")),
    "philippines": ("PH", "PHL", (), ("manila",)),
    "australia": ("AU", "AUS", (), ("canberra", "sydney", "melbourne", "brisbane", "perth")),
    "new zealand": ("NZ", "NZL", (), ("wellington", "auckland")),
    "brazil": ("BR", "BRA", (), ("brasilia", "rio de janeiro", "sao paulo")),
    "argentina": ("AR", "ARG", (), ("buenos aires",)),
    "egypt": ("EG", "EGY", (), ("cairo",)),
    "south africa": ("ZA", "ZAF", (), ("pretoria", "cape town", "johannesburg")),
    "nigeria": ("NG", "NGA", (), ("abuja", "lagos")),
    "kenya": ("KE", "KEN", (), ("nairobi",)),
    "israel": ("IL", "ISR", (), ("jerusalem", "tel aviv")),
    "united arab emirates": ("AE", "ARE", ("uae",), ("abu dhabi", "dubai")),
    "saudi arabia": ("SA", "SAU", (), ("riyadh",)),
}
# fmt: on
# Olson zone: the abbreviations and names people write for it. Not cities: "homes in San Francisco" does not
# ask for a time zone, and a city-to-zone rule passed such mismatched pairs in the bench's control.
# fmt: off
TIME_ZONES: dict[str, tuple[str, ...]] = {
    "America/New_York": ("est", "edt", "et", "eastern time"),
    "America/Chicago": ("cst", "cdt", "ct", "central time"),
    "America/Denver": ("mst", "mdt", "mt", "mountain time"),
    "America/Los_Angeles": ("pst", "pdt", "pt", "pacific time"),
    "Europe/London": ("gmt", "bst", "uk time"),
    "Europe/Paris": ("cet", "cest"),
    "Europe/Berlin": ("cet", "cest"),
    "Asia/Tokyo": ("jst",),
    "Asia/Kolkata": ("ist",),
    "Australia/Sydney": ("aest", "aedt"),
    "UTC": ("utc", "coordinated universal time", "zulu"),
}
# fmt: on


def _says(text: str, phrase: str) -> bool:
    return resolve.contains_phrase(text, phrase)


def _state_named(state: str, text: str) -> bool:
    code, cities = US_STATES[state]
    return (
        _says(text, state)
        or re.search(rf"(?<![A-Za-z]){code}(?![A-Za-z])", text) is not None
        or any(_says(text, c) for c in cities)
    )


def _country_named(country: str, text: str, with_cities: bool = True) -> bool:
    a2, a3, names, cities = COUNTRIES[country]
    if _says(text, country) or any(_says(text, n) for n in names):
        return True
    codes = a3 if a2 in ("IN", "IT", "NO", "ID") else f"{a2}|{a3}"  # "IN", "IT": words, not codes
    if re.search(rf"(?<![A-Za-z])(?:{codes})(?![A-Za-z])", text):
        return True
    return with_cities and any(_says(text, c) for c in cities)


def _places(value: Any, query: str, param: _Param) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    low = value.strip().lower()
    for state, (code, _) in US_STATES.items():
        if low in (state, code.lower()) and _state_named(state, query):
            return True
    for country, (a2, a3, names, _) in COUNTRIES.items():
        if low in (country, a2.lower(), a3.lower(), *names) and _country_named(country, query):
            return True
    for zone, abbreviations in TIME_ZONES.items():
        if low in (zone.lower(), *abbreviations) and any(
            re.search(rf"(?<![A-Za-z]){re.escape(a)}(?![A-Za-z])", query, re.I if " " in a else 0)
            or (len(a) > 3 and _says(query, a))
            for a in (
                *(x.upper() for x in abbreviations if " " not in x),
                *(x for x in abbreviations if " " in x),
            )
        ):
            return True
    if low in ("city", "state", "country") and param.says(r"\bcity\b.*\bstate\b|\bstate\b.*\bcountry\b"):
        if low == "country":
            return any(_country_named(c, query, with_cities=False) for c in COUNTRIES)
        if low == "state":
            return any(_says(query, s) for s in US_STATES)
        return any(_says(query, c) for _, cities in US_STATES.values() for c in cities)
    return False


# ---------------------------------------------------------------- constants

_DECK = r"\b(?:deck|cards?|poker)\b"
# (value, what the parameter must be about, what the query must say): facts everyone shares
CONSTANTS: tuple[tuple[float, str, tuple[str, ...]], ...] = (
    (52, r"deck|total|outcomes|cards|size", (_DECK,)),
    (4, r"outcomes|favorable|success|count|number", (_DECK, r"\b(?:kings?|queens?|jacks?|aces?)\b")),
    (13, r"outcomes|favorable|success|count|number", (_DECK, r"\b(?:hearts?|spades?|diamonds?|clubs?)\b")),
    (12, r"outcomes|favorable|success|count|number", (_DECK, r"\bface cards?\b")),
    (5, r"\bhand\b", (r"\bpoker\b",)),
    (6, r"\bsides?\b|\bfaces?\b", (r"\b(?:dice|die)\b",)),
    (2, r"\bsides?\b|\bfaces?\b|outcomes", (r"\bcoins?\b",)),
    (0, r"initial|start", (r"\b(?:dropped|drops?|released|falls? from|free[- ]fall)\b",)),
)
# languages a quoted text can be recognised in by its commonest words
# fmt: off
LANGUAGES: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "english": (("en", "eng"), frozenset(("a", "always", "an", "and", "are", "for", "he", "here", "i", "in",
        "is", "it", "love", "my", "not", "of", "on", "she", "that", "the", "they", "this", "to", "was", "we",
        "with", "you", "your"))),
    "spanish": (("es", "spa"), frozenset(("con", "de", "el", "en", "es", "la", "las", "los", "mi", "muy",
        "para", "por", "que", "son", "un", "una", "y"))),
    "french": (("fr", "fra"), frozenset(("avec", "de", "en", "est", "et", "je", "la", "le", "les", "mon",
        "pour", "que", "sont", "très", "un", "une"))),
    "german": (("de", "deu"), frozenset(("das", "der", "die", "ein", "eine", "für", "ich", "ist", "mein",
        "mit", "nicht", "sehr", "sind", "und", "zu"))),
}
# fmt: on


def _language_of(text: str) -> str | None:
    """The language whose common words make up at least half of the text's words (and ≥ 3 of them)."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    for language, (_, common) in LANGUAGES.items():
        hits = sum(w in common for w in words)
        if words and hits >= 3 and hits >= len(words) / 3:
            return language
    return None


def _constants(value: Any, query: str, param: _Param) -> bool:
    low = query.lower()
    v = _number(value)
    if v is not None:
        for number, about, needs in CONSTANTS:
            if v == number and param.says(about) and all(re.search(n, low) for n in needs):
                return True
    if isinstance(value, str) and param.says(r"\blanguage\b"):
        quoted = re.findall(r"'([^']{12,})'|\"([^\"]{12,})\"", query)
        text = " ".join(a or b for a, b in quoted) or query
        language = _language_of(text)
        if language and value.strip().lower() in (language, *LANGUAGES[language][0]):
            return True
    return False


# ---------------------------------------------------------------- synonyms

# member of a closed list: everyday words for it (matched as whole words, plurals folded)
# fmt: off
SYNONYMS: dict[str, tuple[str, ...]] = {
    # film and music genres
    "animation": ("cartoon", "cartoons", "animated", "anime"),
    "horror": ("scary", "ghost", "ghosts", "spooky", "haunted", "frightening", "creepy", "terrifying",
        "zombie"),
    "thriller": ("suspense", "suspenseful", "thrilling", "edge of my seat"),
    "comedy": ("funny", "hilarious", "humorous", "comic", "comedic", "make me laugh"),
    "action": ("fight", "fights", "fighting", "martial arts", "action-packed", "explosions"),
    "sci-fi": ("science fiction", "aliens", "futuristic"),
    "documentary": ("documentaries", "docuseries", "real-life story"),
    "romance": ("romantic", "love story"),
    "family": ("family-friendly", "for kids", "for children"),
    "fantasy": ("magic", "wizards", "dragons"),
    "mystery": ("whodunit", "detective"),
    "country": ("hillbilly", "honky-tonk", "bluegrass", "country and western"),
    "metal": ("heavy metal",),
    "holiday": ("christmas",),
    # event types
    "theater": ("play", "plays", "drama", "broadway", "stage show", "musical", "theatre"),
    "music": ("concert", "concerts", "gig", "gigs", "live music"),
    # care providers
    "psychologist": ("therapist", "therapists", "therapy", "psychotherapist"),
    "psychiatrist": ("psychiatric", "psychiatry"),
    "family counselor": ("family therapist", "couples counseling", "marriage counselor"),
    # ride types
    "pool": ("shared", "carpool"),
    "luxury": ("premium", "upscale", "fancy", "high-end", "most comfortable"),
    "regular": ("standard",),
    # cuisines
    "italian": ("pizza", "pasta", "spaghetti", "lasagna", "risotto"),
    "japanese": ("sushi", "ramen", "sashimi", "tempura"),
    "mexican": ("taco", "tacos", "burrito", "burritos", "enchiladas"),
    "chinese": ("dim sum", "dumplings", "chow mein"),
    "indian": ("curry", "tandoori", "biryani"),
    "seafood": ("fish", "lobster", "oysters", "crab"),
    "steakhouse": ("steak", "steaks"),
    "coffeehouse": ("coffee", "cafe", "café"),
    # attractions
    "park": ("garden", "gardens"),
    "museum": ("gallery", "galleries", "exhibition"),
    "place of worship": ("church", "temple", "mosque", "cathedral", "synagogue"),
    "shopping area": ("mall", "shops", "shopping"),
    # property and purchase intent
    "buy": ("purchase", "purchasing", "buying"),
    "rent": ("rental", "renting", "lease", "to let"),
    # travel modes
    "transit": ("public transportation", "public transport", "subway", "metro"),
    "drive": ("driving", "by car"),
    "walk": ("walking", "on foot"),
    "bike": ("bicycle", "cycling", "biking"),
    # meal types
    "dessert": ("brownie", "brownies", "cake", "pie", "cookie", "cookies", "pudding", "ice cream", "cupcake"),
    "breakfast": ("pancakes", "omelette", "waffles"),
    # prices
    "moderate": ("not too pricey", "not too expensive", "mid-range", "moderately priced", "reasonably priced",
        "intermediate priced", "average price"),
    "cheap": ("inexpensive", "budget", "low-cost", "affordable"),
    "pricey": ("expensive", "high-end"),
    # urgency and priority
    "high": ("urgent", "asap", "emergency", "immediately", "critical"),
    "low": ("no rush", "not urgent", "whenever"),
    # clothing sizes
    "xs": ("extra small",),
    "s": ("small",),
    "m": ("medium",),
    "l": ("large",),
    "xl": ("extra large", "extra-large"),
    # product categories
    "clothing": ("skirt", "dress", "shirt", "t-shirt", "jeans", "pants", "jacket", "coat", "sweater",
        "hoodie"),
    "electronics": ("phone", "laptop", "tv", "headphones", "camera", "tablet"),
    "books": ("novel", "novels"),
    "toys": ("toy", "doll", "lego"),
    # operations on records
    "delete": ("remove", "erase"),
    "complete": ("finish", "mark as done"),
    "create": ("add",),
    "update": ("change", "modify", "edit"),
    # unit systems
    "imperial": ("fahrenheit", "miles", "feet"),
    "metric": ("celsius", "kilometers", "kilometres", "meters"),
}
# fmt: on


def _options(param: _Param) -> set[str]:
    """Lower-cased members the parameter offers: its enum, or a list its description spells out."""
    enum = param.schema.get("enum") or (param.schema.get("items") or {}).get("enum") or []
    found = {str(e).lower() for e in enum}
    for listed in re.findall(r"\(([^()]{3,120})\)|e\.g\.,?\s*([^.]{3,120})", param.description, re.I):
        found |= {
            w.strip(" '\"[]").lower() for w in re.split(r",|\bor\b", listed[0] or listed[1]) if w.strip()
        }
    return found


def _synonyms(value: Any, query: str, param: _Param) -> bool:
    if not isinstance(value, str):
        return False
    low = value.strip().lower()
    if low not in _options(param):
        return False
    return any(_says(query, w) for w in SYNONYMS.get(low, ()))


# ---------------------------------------------------------------- formats

_SYNTAX = frozenset(("in", "or", "and", "not", "eq", "ne"))


def _formats(value: Any, query: str, param: _Param) -> bool:
    """A structured value ("track:Baby Shark", "name IN ('a', 'b')", "details:a,b,c") whose words all come
    from the query, the parameter's own name and description, or the syntax keywords of a filter, with at
    least two from the query; or "p4" / "P2" for a parameter named with that letter ("priority")."""
    low = query.lower()
    v = _number(value)
    if v is not None and v.is_integer() and param.name:
        letter = param.name[0].lower()
        if re.search(rf"(?<![a-z0-9]){letter}{int(v)}(?![a-z0-9])", low):
            return True
    if not isinstance(value, str) or not re.search(r"[:=()]", value):
        return False
    words = re.findall(r"[a-z0-9]+", value.lower())
    if any(w.isdigit() and not re.search(rf"(?<![0-9]){w}(?![0-9])", low) for w in words):
        return False  # every number comes from the query (a date-time is not a "format" of other numbers)
    from_query = [w for w in words if re.search(rf"(?<![a-z0-9]){w}(?![a-z0-9])", low)]
    rest = [w for w in words if w not in from_query and w not in _SYNTAX]
    named = [w for w in from_query if not w.isdigit()]
    return len(named) >= 2 and all(re.search(rf"(?<![a-z0-9]){w}(?![a-z0-9])", param.words) for w in rest)


_RULES: dict[str, Callable[[Any, str, _Param], bool]] = {
    "arithmetic": _arithmetic,
    "places": _places,
    "constants": _constants,
    "synonyms": _synonyms,
    "formats": _formats,
}
