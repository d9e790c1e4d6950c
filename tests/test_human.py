"""human-sample / human-agree: stratified sample, label parsing, agreement with CIs, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentjudge.commands.people import agree_cli, sample_cli
from agentjudge.people.validation import parse_label, read_labels
from agentjudge.rundir.records import write_records
from agentjudge.types import TOPOLOGIES, GTStep, Record, ToolCall, ToolSchema

TOOL = ToolSchema(
    name="lookup",
    description="find a ticket",
    parameters={
        "type": "object",
        "properties": {"id": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["id"],
    },
)


def _record(i: int) -> Record:
    return Record(
        id=f"itsm-{i:04d}",
        domain="itsm",
        scenario="s",
        topology=TOPOLOGIES[i % 6],
        queries={"easy": f"easy {i}", "medium": f"medium {i}", "hard": f"hard {i}"},
        system_prompt="sp",
        tools=[TOOL],
        gt=[GTStep(call=ToolCall(name="lookup", arguments={"id": f"T-{i}"}), output={})],
    )


def _meta(**pipeline: str) -> dict[str, object]:
    """A hand-made folder's meta.json (synthetic: not written by a run)."""
    return {"synthetic": True, "pipeline": pipeline, "seed": 0, "judges": {}, "generators": {}}


@pytest.fixture()
def rundir(tmp_path: Path) -> Path:
    records = [_record(i) for i in range(120)]
    write_records(tmp_path / "records.jsonl", records)
    rng = np.random.default_rng(0)
    rows, preds = [], []
    for r in records:
        for d in ("easy", "medium", "hard"):
            for g in ("sim/a", "sim/b"):
                perfect = rng.random() < 0.4
                p = {
                    m: 1.0 if perfect else float(rng.choice([0.0, 0.5, 1.0]))
                    for m in ("tool", "param", "seq", "cov")
                }
                if not perfect and min(p.values()) == 1.0:
                    p["seq"] = 0.5
                rows.append(
                    {
                        "record_id": r.record_id(d),
                        "base_id": r.id,
                        "domain": "itsm",
                        "topology": r.topology,
                        "difficulty": d,
                        "generator": g,
                        "trial": 0,
                        "scoring_mode": "strict",
                        **{f"p_{m}": v for m, v in p.items()},
                        "p_value": 1.0,
                        "p_seq_dag": 1.0,
                        "state_match": None,
                    }
                )
                preds.append(
                    {
                        "record_id": r.record_id(d),
                        "base_id": r.id,
                        "difficulty": d,
                        "generator": g,
                        "trial": 0,
                        "calls_json": json.dumps([{"name": "lookup", "arguments": {"id": "T"}}]),
                        "raw_output": "",
                        "error": None,
                        "simulated": True,
                        "prompt_tokens": 0,
                        "completion_tokens": 0,
                        "cost_usd": 0.0,
                        "cached": False,
                    }
                )
    pd.DataFrame(rows).to_parquet(tmp_path / "scores.parquet")
    pd.DataFrame(preds).to_parquet(tmp_path / "predictions.parquet")
    (tmp_path / "meta.json").write_text(json.dumps(_meta(dataset=str(tmp_path / "records.jsonl"))))
    return tmp_path


def test_sample_is_stratified(rundir: Path) -> None:
    out = rundir / "sample.csv"
    assert sample_cli(rundir, n=60, seed=0, out=out) == 0
    s = pd.read_csv(out, keep_default_na=False)
    assert len(s) == 60 and (s["difficulty"] == "hard").all()
    assert s["topology"].value_counts().eq(10).all()
    perfect = (s[["p_tool", "p_param", "p_seq", "p_cov"]] >= 1.0).all(axis=1)
    assert perfect.groupby(s["topology"]).sum().eq(3).all()  # 7 imperfect + 3 perfect of 10
    assert s["record_id"].is_unique
    row = s.iloc[0]
    assert row["query"].startswith("hard ") and row["tools"] == "lookup(id*, verbose)"
    assert json.loads(row["gt_calls"])[0]["name"] == "lookup"
    assert all(s[f"agree_{m}"].eq("").all() for m in ("tool", "param", "seq", "cov"))
    again = rundir / "again.csv"
    sample_cli(rundir, n=60, seed=0, out=again)
    assert out.read_text() == again.read_text()


def test_round_trip_agreement(rundir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = rundir / "sample.csv"
    assert sample_cli(rundir, n=24, seed=1, out=out) == 0
    s = pd.read_csv(out, keep_default_na=False, dtype=str)
    s["agree_tool"] = "yes"
    s["agree_param"] = ["no" if i % 4 == 0 else "Y" for i in range(len(s))]
    s["agree_seq"] = ["1"] * (len(s) - 2) + ["", ""]
    s["agree_cov"] = "0"
    s.to_csv(out, index=False)
    assert agree_cli(rundir, out, resamples=200, seed=0) == 0
    t = pd.read_csv(rundir / "human" / "agreement.csv").set_index(["scope", "group"])
    assert t.loc[("metric", "tool"), "agreement"] == 1.0
    assert t.loc[("metric", "param"), "agreement"] == pytest.approx(18 / 24)
    assert t.loc[("metric", "seq"), "missing"] == 2 and t.loc[("metric", "seq"), "n_labels"] == 22
    assert t.loc[("metric", "cov"), "agreement"] == 0.0
    assert t.loc[("overall", "all"), "agreement"] == pytest.approx((24 + 18 + 22) / (24 * 3 + 22))
    lo, hi = t.loc[("metric", "param"), ["ci_lo", "ci_hi"]]
    assert lo <= 18 / 24 <= hi and lo < hi
    assert len(t.loc["topology"]) == 6


def test_bad_label_names_file_row_column(rundir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = rundir / "sample.csv"
    sample_cli(rundir, n=12, seed=0, out=out)
    s = pd.read_csv(out, keep_default_na=False, dtype=str)
    s.loc[2, "agree_param"] = "maybe"
    s.to_csv(out, index=False)
    assert agree_cli(rundir, out, resamples=50, seed=0) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "row 4" in err and "agree_param" in err and "maybe" in err


def test_missing_column_and_labels() -> None:
    assert (
        parse_label(" Yes ", "x") == 1.0 and parse_label("n", "x") == 0.0 and np.isnan(parse_label("", "x"))
    )
    with pytest.raises(ValueError, match="is not a label"):
        parse_label("2", "f.csv, row 3, column agree_tool")


def test_missing_agree_column(tmp_path: Path) -> None:
    p = tmp_path / "l.csv"
    p.write_text("base_id,topology,agree_tool\nitsm-0001,linear,yes\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['agree_param'"):
        read_labels(p)


def test_sample_without_records_is_exit_2(rundir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (rundir / "records.jsonl").unlink()
    (rundir / "meta.json").write_text(json.dumps(_meta()))  # names no records file
    assert sample_cli(rundir, n=12, seed=0, out=None) == 2
    assert "records" in capsys.readouterr().err
