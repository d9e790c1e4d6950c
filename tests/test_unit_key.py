"""``store.UnitKey`` is a named tuple (issue 15: a paper grid makes, hashes and sorts millions of them):
what the runner relies on must hold as it did for the frozen dataclass -- its fields are the store's key
columns in order, it is ordered field by field as SQLite orders the rows, immutable, and it survives
pickling (worker processes) with its type."""

from __future__ import annotations

import pickle
import random
import sqlite3

import pytest

from agentjudge.rundir.units import KEY_COLUMNS as _KEY_COLUMNS
from agentjudge.runner.store import UnitKey


def _keys(n: int) -> list[UnitKey]:
    rng = random.Random(7)
    words = ["", "a", "b", "B", "é", "a:b", "rec-10:easy", "rec-9:easy", "sim/weak", "with_gt"]
    return [
        UnitKey(
            rng.choice(["predict", "judge"]),  # type: ignore[arg-type]
            *(rng.choice(words) for _ in range(3)),
            rng.randrange(3),
            *(rng.choice(words) for _ in range(4)),
            rng.randrange(3),
        )
        for _ in range(n)
    ]


def test_fields_are_the_key_columns_and_row_gives_them() -> None:
    assert UnitKey._fields == _KEY_COLUMNS
    key = UnitKey("judge", "r:easy", "easy", "g", 1, "j", "with_gt", "v", "0.7", 2)
    assert key.row() == ("judge", "r:easy", "easy", "g", 1, "j", "with_gt", "v", "0.7", 2)
    assert UnitKey(*key.row()) == key and hash(UnitKey(*key.row())) == hash(key)
    predict = UnitKey("predict", "r:easy", "easy", "g", 0)  # judge coordinates default to empty
    assert predict.row()[5:] == ("", "", "", "", 0)
    with pytest.raises(AttributeError):
        key.judge = "other"  # type: ignore[misc]


def test_order_is_sqlites_order_of_the_rows() -> None:
    keys = _keys(500)
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE units ({', '.join(_KEY_COLUMNS)})")
    db.executemany(
        f"INSERT INTO units VALUES ({', '.join('?' * len(_KEY_COLUMNS))})", [k.row() for k in keys]
    )
    in_sqlite = [
        UnitKey(*row) for row in db.execute(f"SELECT * FROM units ORDER BY {', '.join(_KEY_COLUMNS)}")
    ]
    assert sorted(keys) == in_sqlite


def test_pickled_keys_come_back_as_unit_keys() -> None:
    keys = _keys(50)
    back = pickle.loads(pickle.dumps(keys))
    assert back == keys and all(type(k) is UnitKey for k in back)
    assert len({*keys, *back}) == len(set(keys))  # equal keys hash alike
