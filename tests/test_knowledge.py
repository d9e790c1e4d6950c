"""The semantic layer of Gate 1 (``dataset/knowledge.py``): every rule with a hand-worked example that it
states, and a near miss that it must not state; every table entry checked both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentjudge.dataset import knowledge
from agentjudge.dataset.knowledge import COUNTRIES, SYNONYMS, TIME_ZONES, US_STATES, explain

INT = {"type": "integer"}


def desc(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": extra.pop("type", "string"), "description": text, **extra}


@pytest.mark.parametrize(
    ("value", "query", "name", "schema"),
    [
        # a stated loss as a negative amount
        (-40, "If I have 100$ and I donated 40. How much do I have now?", "b", INT),
        (-1000, "an initial investment of $5000 with a loss of $1000", "gain_loss", INT),
        # strict bounds on an integer
        (4, "a recipe using less than 5 ingredients", "ingredientLimit", INT),
        (11, "groups of more than 10 people", "min_size", INT),
        # durations in the unit the description names
        (3600, "readings for the past hour", "timespan", desc("duration in seconds", type="integer")),
        (30, "a timer for half an hour", "length", desc("length in minutes", type="integer")),
        (5400, "run it for 90 minutes", "timespan", desc("in seconds", type="integer")),
        # the span between two stated times / dates
        (
            10800,
            "data from yesterday midday to yesterday 3pm",
            "timespan",
            desc("in seconds", type="integer"),
        ),
        (120, "from 15:30 to 15:32", "timespan", desc("The duration, in seconds.", type="integer")),
        (2, "a room from August 15th to August 17th, 2023", "stay_length", desc("length of stay in days")),
        # end of a period
        (
            "2024-03-20 12:00:00",
            "housekeeper 20/3/2024, time 9:00, duration 3 hours",
            "end",
            desc("end time"),
        ),
        (
            "2023-03-19",
            "depart on the 12th of march 2023 and return a week later",
            "return_date",
            desc("date"),
        ),
        ("2023-10-17", "Tuesday next week. Today is tuesday 2023.10.10", "date", desc("YYYY-MM-DD")),
        # years before a stated year
        (2016, "something from seven years ago of 2023", "year", INT),
        ("2017", "tracks released around six years ago. This year is 2023", "year", desc("year")),
        # zero-based index / offset from an ordinal
        (
            1,
            "Remove the second item from my todo list.",
            "index",
            desc("The zero-based index", type="integer"),
        ),
        (0, "entries starting from the first record", "offset", desc("The starting point", type="integer")),
        # month number, cents, the top of the stated range, party size
        (2, "What is the host count for February 2022?", "month", INT),
        (4500.0, "a payment request for $45", "amount", desc("in the smallest unit (cents)", type="number")),
        (100, "max entries per page", "perPage", desc("Must be between 3 and 100.", type="integer")),
        (100, "play it at full volume", "volume", desc("from 0 (mute) to 100 (maximum)", type="integer")),
        (1, "It's just for myself.", "number_of_adults", INT),
        (2, "for myself and one other adult", "number_of_adults", INT),
        # a duration as a clock string in the format the description names
        ("01:00", "Set a reminder in a minute", "duration", desc("expected in the format 'MM:SS'")),
        # the square of a stated length unit for an area
        ("square feet", "a base of 25 feet and a height of 30 feet", "unit", desc("unit for the area")),
    ],
)
def test_arithmetic_states(value: Any, query: str, name: str, schema: dict[str, Any]) -> None:
    assert explain(value, query, name, schema) == "arithmetic"


@pytest.mark.parametrize(
    ("value", "query", "name", "schema"),
    [
        (-40, "I have 100$ and I earned 40", "b", INT),  # a gain is not a loss
        (4, "a recipe using less than 5 ingredients", "limit", desc("max", type="number")),  # not an integer
        (3600, "readings for the past hour", "timespan", INT),  # the schema names no unit
        (7200, "readings for the past hour", "timespan", desc("in seconds", type="integer")),
        (
            2,
            "Remove the second item from my todo list.",
            "index",
            desc("The zero-based index", type="integer"),
        ),
        (1, "Remove the second item", "index", desc("The position, counted from 1", type="integer")),
        (3, "What is the host count for February 2022?", "month", INT),
        (45.0, "a payment request for $45", "total", desc("The total", type="integer")),  # stated: textual
        (99, "max entries per page", "perPage", desc("Must be between 3 and 100.", type="integer")),
        (100, "the full details of the project", "perPage", desc("Between 3 and 100.", type="integer")),
        (1, "a table for me and my wife", "number_of_adults", INT),
        ("2024-03-20 13:00:00", "housekeeper 20/3/2024, time 9:00, duration 3 hours", "end", desc("end")),
        (2015, "something from seven years ago of 2023", "year", INT),
        ("square meters", "a base of 25 feet", "unit", desc("unit for the area")),
    ],
)
def test_arithmetic_near_misses(value: Any, query: str, name: str, schema: dict[str, Any]) -> None:
    assert explain(value, query, name, schema) is None


@pytest.mark.parametrize(("state", "entry"), sorted(US_STATES.items()))
def test_every_state_is_named_by_its_code_and_each_city(
    state: str, entry: tuple[str, tuple[str, ...]]
) -> None:
    code, cities = entry
    param = desc("The state")
    assert explain(state.title(), f"crime in {code} last year", "state", param) == "places"
    assert explain(code, f"crime in {state.title()} last year", "state", param) == "places"
    for city in cities:
        assert explain(state.title(), f"the crime rate in {city.title()}", "state", param) == "places"
    other = "Texas" if state != "texas" else "Ohio"
    assert explain(other, f"crime in {code} last year", "state", param) is None


@pytest.mark.parametrize(("country", "entry"), sorted(COUNTRIES.items()))
def test_every_country_is_named_by_codes_names_and_cities(country: str, entry: tuple[Any, ...]) -> None:
    a2, a3, names, cities = entry
    param = desc("The ISO country code")
    for city in cities:
        assert explain(a2, f"the weather in {city.title()} today", "country", param) == "places"
    for name in (country, *names):
        assert explain(a3, f"news from {name.title()} please", "country", param) == "places"
    assert explain(country.title(), f"flights from {a3} please", "country", param) == "places"
    other = "FR" if a2 != "FR" else "DE"
    assert explain(other, f"news from {country.title()} please", "country", param) is None


@pytest.mark.parametrize(("zone", "abbreviations"), sorted(TIME_ZONES.items()))
def test_every_time_zone(zone: str, abbreviations: tuple[str, ...]) -> None:
    param = desc("The Olson timezone identifier")
    for a in abbreviations:
        said = a if " " in a else a.upper()
        assert explain(zone, f"move it to 4pm {said} on Friday", "timezone", param) == "places", a
    assert explain(zone, "move it to 4pm on Friday", "timezone", param) is None
    # a city does not ask for a time zone ("homes in San Francisco" passed a mismatched pair with it)
    assert explain("America/Los_Angeles", "homes in San Francisco", "timezone", param) is None


def test_place_kinds() -> None:
    param = desc("Specify whether the area is city/state/country.")
    assert explain("country", "population of the USA", "type", param) == "places"
    assert explain("state", "population of Alaska", "type", param) == "places"
    assert explain("city", "population of Houston", "type", param) == "places"
    assert explain("country", "population of Alaska", "type", param) is None
    assert explain("country", "population of the USA", "type", desc("The kind of record")) is None


@pytest.mark.parametrize(
    ("value", "query", "name", "schema"),
    [
        (52, "drawing a king from a deck of cards", "total_outcomes", desc("Total outcomes", type="integer")),
        (4, "drawing a king from a deck of cards", "favorable_outcomes", desc("successful", type="integer")),
        (13, "drawing a heart from a deck of cards", "event_outcomes", desc("count", type="integer")),
        (5, "a full house in poker", "hand_size", desc("The size of the hand.", type="integer")),
        (6, "rolling a sum of 7 with two dice", "sides_per_die", desc("sides", type="integer")),
        (2, "flip a coin three times", "sides", desc("faces of the coin", type="integer")),
        (0, "an object dropped from 100 m", "initial_velocity", desc("initial velocity", type="integer")),
        ("english", "sentiment of 'I love the food here! It is always fresh.'", "language", desc("language")),
        ("es", "translate 'el perro es muy grande y la casa es de mi madre'", "language", desc("language")),
    ],
)
def test_constants_state(value: Any, query: str, name: str, schema: dict[str, Any]) -> None:
    assert explain(value, query, name, schema) == "constants"


@pytest.mark.parametrize(
    ("value", "query", "name", "schema"),
    [
        (52, "drawing a king", "total_outcomes", desc("Total outcomes", type="integer")),  # no deck
        (
            4,
            "drawing a card from a deck",
            "favorable_outcomes",
            desc("successful", type="integer"),
        ),  # no rank
        (6, "rolling a ball", "sides", desc("sides", type="integer")),
        (0, "an object thrown from 100 m", "initial_velocity", desc("initial velocity", type="integer")),
        ("french", "sentiment of 'I love the food here! It is always fresh.'", "language", desc("language")),
    ],
)
def test_constants_near_misses(value: Any, query: str, name: str, schema: dict[str, Any]) -> None:
    assert explain(value, query, name, schema) is None


@pytest.mark.parametrize(("member", "words"), sorted(SYNONYMS.items()))
def test_every_synonym_states_its_member_only_from_a_closed_list(member: str, words: tuple[str, ...]) -> None:
    decoy = "zzz-other"
    closed = {"type": "string", "enum": [member.title(), decoy]}
    for word in words:
        query = f"I would like something {word} tonight"
        assert explain(member.title(), query, "kind", closed) == "synonyms", word
        assert explain(decoy, query, "kind", closed) is None
        # an open string parameter whose description lists no options: no synonym applies
        assert explain(member.title(), query, "kind", desc("free text")) is None


def test_synonym_from_a_list_the_description_spells_out() -> None:
    schema = desc("The mode of transportation (walk, bike, transit, drive).")
    assert explain("transit", "by using a public transportation", "mode", schema) == "synonyms"
    assert explain("drive", "by using a public transportation", "mode", schema) is None
    sizes = {"type": "array", "description": "sizes to check, e.g., ['S', 'M', 'L']."}
    assert explain("S", "check if small sizes are available", "sizes", sizes) == "synonyms"


@pytest.mark.parametrize(
    ("value", "query", "name", "schema", "expected"),
    [
        ("track:Baby Shark", "play Baby Shark", "query", desc("formatted as 'track:Song Name'"), "formats"),
        ("name IN ('alpha', 'beta')", "named 'alpha' and 'beta'", "filter", desc("by name"), "formats"),
        (4, "获取阿迪达斯的p4工单", "priority", desc("priority 1 to 8", type="integer"), "formats"),
        ("track:Baby Shark", "play Thriller", "query", desc("formatted as 'track:Song Name'"), None),
        (
            "2023-12-01 07:00:00",
            "an alarm for 2023-04-02 07:30:00",
            "alarm_time",
            desc("format 'HH:MM'"),
            None,
        ),
        (4, "ticket p4", "status", desc("status", type="integer"), None),
    ],
)
def test_formats(value: Any, query: str, name: str, schema: dict[str, Any], expected: str | None) -> None:
    assert explain(value, query, name, schema) == expected


def test_families_can_be_switched_off() -> None:
    try:
        knowledge.ENABLED.discard("constants")
        assert explain(6, "two dice", "sides_per_die", desc("sides", type="integer")) is None
    finally:
        knowledge.ENABLED.add("constants")
    assert explain(6, "two dice", "sides_per_die", desc("sides", type="integer")) == "constants"


def test_gates_apply_the_layer_to_human_queries_only(tmp_path: Path) -> None:
    import json

    from agentjudge.dataset.gates import run_gates
    from agentjudge.tracks.bfcl import import_bfcl

    task = {
        "id": "multiple_0",
        "question": [[{"role": "user", "content": "What is the probability of drawing a king from a deck?"}]],
        "function": [
            {
                "name": "calculate_probability",
                "description": "Probability of an event.",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "total_outcomes": {"type": "integer", "description": "Total number of outcomes."},
                        "favorable_outcomes": {"type": "integer", "description": "Successful outcomes."},
                    },
                    "required": ["total_outcomes", "favorable_outcomes"],
                },
            }
        ],
    }
    answer = {
        "id": "multiple_0",
        "ground_truth": [{"calculate_probability": {"total_outcomes": [52], "favorable_outcomes": [4]}}],
    }
    (tmp_path / "BFCL_v4_multiple.json").write_text(json.dumps(task) + "\n")
    (tmp_path / "answers.json").write_text(json.dumps(answer) + "\n")
    (human,) = import_bfcl(tmp_path / "BFCL_v4_multiple.json", tmp_path / "answers.json")
    assert human.human_query and run_gates(human).passed
    other = human.model_copy(
        update={"queries": {"easy": "What is the probability of rolling a six on a die?"}}
    )
    assert {f.code for f in run_gates(other).findings} >= {"ungrounded_value"}
    query = human.queries["easy"]
    ours = human.model_copy(
        update={
            "human_query": False,
            "source": "synthetic",
            "queries": dict.fromkeys(("easy", "medium", "hard"), query),
        }
    )
    assert "ungrounded_value" in {f.code for f in run_gates(ours).findings}  # our rewrites state every value
