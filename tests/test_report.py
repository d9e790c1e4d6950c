"""`agentjudge report` end to end on a synthetic run folder."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from agentjudge.analysis import SECTIONS

from agentjudge.commands.report import report_cli
from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("run")
    spec = SyntheticSpec(
        n_base=18,
        scoring_modes=("paper", "strict"),
        variants=[Variant("with_gt"), Variant("without_gt"), Variant("swapped_gt")],
    )
    write_run(d, spec)
    assert report_cli(d, resamples=200, seed=1) == 0
    return d


def test_all_files_written(report_dir: Path) -> None:
    out = report_dir / "report"
    for name in ("report.md", "report.html"):
        assert (out / name).stat().st_size > 1000
    csvs = {p.stem for p in (out / "tables").glob("*.csv")}
    assert {
        "headline",
        "gt_gain",
        "guide",
        "rq1_metric",
        "rq2_pairs",
        "rq3_anchoring",
        "parse_failures",
        "robust_weighting_rho",
    } <= csvs
    pngs = list((out / "figures").glob("*.png"))
    assert len(pngs) >= 8 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(pngs)
    assert 'src="figures/' not in html  # self-contained
    # each inlined figure links its full-size file, which exists beside the page
    links = set(re.findall(r'<a href="(figures/[^"]+\.png)">', html))
    assert len(links) == len(pngs) and all((out / link).is_file() for link in links)
    assert html.count("<div class='wide'><table") == html.count("<table")  # wide tables scroll in a box
    md = (out / "report.md").read_text()
    assert "SYNTHETIC" in md and "(simulated)" in md and "(baseline)" in md
    first = md[: md.index("\n## Everything else")]
    assert "Terms: **GT** = " in first and "**κ** = Cohen's kappa" in first  # defined before they are used
    assert "scoring mode(s): paper, strict" in md and "failed (parse or transport)" in md
    assert "FAILED" not in md
    assert "RQ4: this run has one temperature" in md
    rest = md[md.index("\n## Everything else") : md.index("\n## Run details")]
    # one line per analysis (those for other kinds of run folder, and for records without GT, aside), the
    # rest folded in the HTML
    assert sum(s.only_when is None and s.rows != "unreferenced" for s in SECTIONS) == rest.count("\n- **")
    assert html.count("<details><summary>" + "RQ") == 7  # each section folded (tables fold inside too)
    from agentjudge import __version__
    from agentjudge.provenance import git_commit

    # the report says which code built it, beside the run's own commit (a report may be rebuilt later)
    assert f"- report built by: git_commit {git_commit()}, package_version {__version__}" in md


def test_headline_csv_equals_independent_recomputation(report_dir: Path) -> None:
    raw = pd.read_parquet(report_dir / "judgments.parquet")
    raw = raw[raw["condition"].isin(["with_gt", "without_gt"])]
    raw = raw.assign(mu=1.0 - (raw["reference"] - raw["verdict"]).abs())
    grouped = raw.groupby(["scoring_mode", "judge", "condition"])
    expect = pd.DataFrame(
        {
            "align": grouped["mu"].mean(),
            "n_failed": grouped["verdict"].apply(lambda s: int(s.isna().sum())),
            "n_verdicts": grouped["verdict"].count(),
        }
    )
    head = pd.read_csv(report_dir / "report" / "tables" / "headline.csv").set_index(
        ["scoring_mode", "judge", "condition"]
    )
    assert len(head) == len(expect)
    for key, row in expect.iterrows():
        assert head.loc[key, "align"] == pytest.approx(row["align"], abs=1e-12)
        assert head.loc[key, "n_failed"] == row["n_failed"]
        assert head.loc[key, "n_verdicts"] == row["n_verdicts"]
        assert head.loc[key, "ci_lo"] < row["align"] < head.loc[key, "ci_hi"]


def test_missing_judgments_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_cli(tmp_path, resamples=100, seed=0) == 2  # an empty folder: no run at all
    assert f"{tmp_path}: not a run folder (no meta.json" in capsys.readouterr().err
    write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    (tmp_path / "judgments.parquet").unlink()
    assert report_cli(tmp_path, resamples=100, seed=0) == 2
    assert "judgments.parquet: file not found" in capsys.readouterr().err


def test_missing_column_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    pd.DataFrame({"record_id": ["a:hard"], "verdict": [1.0]}).to_parquet(tmp_path / "judgments.parquet")
    assert report_cli(tmp_path, resamples=100, seed=0) == 2
    err = capsys.readouterr().err
    assert "judgments.parquet: missing column(s)" in err and "base_id" in err


def test_non_numeric_verdict_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jd = write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    jd["verdict"] = jd["verdict"].astype(str)  # a text column, as a buggy exporter might write
    jd.loc[3, "verdict"] = "high"
    jd.to_parquet(tmp_path / "judgments.parquet")
    assert report_cli(tmp_path, resamples=100, seed=0) == 2
    assert "column verdict: not numeric" in capsys.readouterr().err
