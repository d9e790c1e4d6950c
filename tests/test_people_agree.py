"""human-agree from RUNDIR/labels and the report's "Against people": the wiring of labels, verdicts,
references and inclusion probabilities into the estimators (``stats.ppi`` is tested on its own).

Every expected figure here is computed by hand from the run's parquet files and the labels file, read with
pandas and json, not through the code under test."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agentjudge.analysis._people import JUDGE_COLUMNS
from people_run import build_people_run, label_body
from sklearn.metrics import cohen_kappa_score

from agentjudge import api
from agentjudge.commands.people import agree_cli
from agentjudge.commands.report import report_cli
from agentjudge.people.labelling import Labelling
from agentjudge.rundir.records import read_records, write_records
from agentjudge.stats import ppi_mean
from agentjudge.stats.people import ANNOTATOR_COLUMNS

METRICS = ("tool", "param", "seq", "cov")
KEY = ["record_id", "generator", "trial"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_people_run(tmp_path_factory.mktemp("agree"))


@pytest.fixture()
def rundir(built: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(built, run, ignore=shutil.ignore_patterns("labels", "human", "report"))
    return run


def snap(p: float) -> float:
    return 0.0 if p < 0.25 else 0.5 if p < 0.75 else 1.0


def plant(rundir: Path, annotator: str, k: int, seed: int = 0, n: int = 60, flip: int = 5) -> list[dict]:
    """``k`` labels of the queue (n, seed): the reference snapped to the scale, every ``flip``-th metric
    verdict moved one level (people disagree with the reference there)."""
    session = Labelling(rundir, annotator, n=n, seed=seed)
    scores = pd.read_parquet(rundir / "scores.parquet")
    strict = scores[scores["scoring_mode"] == "strict"].set_index(KEY)
    saved, count = [], 0
    for entry in session.queue_state()["queue"][:k]:
        row = strict.loc[(entry["record_id"], entry["generator"], entry["generator_trial"])]
        verdicts = {}
        for m in METRICS:
            h = snap(float(row[f"p_{m}"]))
            count += 1
            if count % flip == 0:
                h = 0.5 if h != 0.5 else 1.0
            verdicts[m] = h
        session.save(label_body(entry, verdicts))
        saved.append({**entry, "verdicts": verdicts})
    return saved


def by_hand(rundir: Path, judge: str, condition: str) -> pd.DataFrame:
    """The judge's verdicts on the hard outputs joined to the reference, the labels and each labelled
    output's weight N_h / n_h (h: topology × imperfect or perfect), read with pandas and json alone."""
    j = pd.read_parquet(rundir / "judgments.parquet")
    j = j[(j["judge"] == judge) & (j["condition"] == condition) & (j["scoring_mode"] == "strict")]
    j = j[(j["difficulty"] == "hard") & (j["trial"] == 0) & j["verdict"].notna()]
    s = pd.read_parquet(rundir / "scores.parquet")
    s = s[(s["scoring_mode"] == "strict") & (s["difficulty"] == "hard")].copy()
    s["stratum"] = s["topology"] + np.where(
        (s[[f"p_{m}" for m in METRICS]] >= 1).all(axis=1), "/perfect", "/imperfect"
    )
    labels = [json.loads(line) for line in (rundir / "labels" / "ana.jsonl").read_text().splitlines()]
    labelled = {(x["record_id"], x["generator"], x["generator_trial"]): x["verdicts"] for x in labels}
    s["labelled"] = [k in labelled for k in zip(s["record_id"], s["generator"], s["trial"], strict=True)]
    big = s.groupby("stratum")["labelled"].size()
    small = s.groupby("stratum")["labelled"].sum()
    s["weight"] = s["stratum"].map(big / small)
    s = s[[*KEY, *(f"p_{m}" for m in METRICS), "stratum", "weight"]].rename(
        columns={"trial": "generator_trial"}
    )
    rows = j.merge(s, on=["record_id", "generator", "generator_trial"])
    rows["p"] = [r[f"p_{m}"] for r, m in zip(rows.to_dict("records"), rows["metric"], strict=True)]
    rows["h"] = [
        labelled.get((r, g, t), {}).get(m, np.nan)
        for r, g, t, m in zip(
            rows["record_id"], rows["generator"], rows["generator_trial"], rows["metric"], strict=True
        )
    ]
    rows["y"] = 1 - (rows["h"] - rows["verdict"]).abs()
    rows["f"] = 1 - (rows["p"] - rows["verdict"]).abs()
    return rows


def test_judges_vs_people_is_a_hand_computation_on_the_labelled_rows(rundir: Path) -> None:
    plant(rundir, "ana", 40)
    agreement = api.human_agree(rundir, resamples=300, seed=0)
    written = pd.read_csv(rundir / "human" / "judges_vs_people.csv")
    assert tuple(written.columns) == JUDGE_COLUMNS
    assert len(written) == 2 * 2 * 5  # judges × conditions × (four metrics + all)
    assert set(written["metric"]) == {*METRICS, "all"}
    for judge in ("baseline/rule", "simjudge/careful"):
        for condition in ("with_gt", "without_gt"):
            rows = by_hand(rundir, judge, condition)
            lab = rows[rows["h"].notna()]
            table = written[(written["judge"] == judge) & (written["condition"] == condition)].set_index(
                "metric"
            )
            # the direct estimate: Σ w·(1 − |h − v|) / Σ w over the labelled rows, w = N_h / n_h
            pooled = (lab["weight"] * lab["y"]).sum() / lab["weight"].sum()
            assert table.loc["all", "direct"] == pytest.approx(pooled, abs=1e-12)
            assert (
                table.loc["all", "n_labelled"] == len(lab.drop_duplicates(["record_id", "generator"])) == 40
            )
            for m in METRICS:
                part = lab[lab["metric"] == m]
                assert table.loc[m, "direct"] == pytest.approx(
                    (part["weight"] * part["y"]).sum() / part["weight"].sum()
                )
            assert table.loc["all", "direct_lo"] < pooled < table.loc["all", "direct_hi"]
            # PPI: the estimator on the same rows, the reference as proxy, π = n_h / N_h, clusters = scenarios
            cluster = pd.factorize(rows["base_id"])[0]
            pi = np.where(rows["h"].notna(), 1 / rows["weight"], np.nan)
            est = ppi_mean(rows["y"].to_numpy(float), rows["f"].to_numpy(float), cluster, pi)
            assert table.loc["all", ["ppi", "ppi_lo", "ppi_hi"]].tolist() == pytest.approx(
                [float(est.estimate), float(est.lo), float(est.hi)], abs=1e-12
            )
            assert table.loc["all", "effective_n"] == pytest.approx(
                float(est.effective_n) / 4
            )  # outputs, not rows
    # the unweighted switch: the plain mean of the labelled rows (the published check's treatment)
    api.human_agree(rundir, resamples=300, seed=0, unweighted=True)
    plain = pd.read_csv(rundir / "human" / "judges_vs_people.csv").set_index(["judge", "condition", "metric"])
    rows = by_hand(rundir, "simjudge/careful", "with_gt")
    assert plain.loc[("simjudge/careful", "with_gt", "all"), "direct"] == pytest.approx(rows["y"].mean())
    assert agreement.people is not None and agreement.people.budget["labels_ppi"].notna().all()


def test_the_reference_against_people_by_hand(rundir: Path) -> None:
    plant(rundir, "ana", 30, flip=4)
    api.human_agree(rundir, resamples=300, seed=0)
    table = pd.read_csv(rundir / "human" / "agreement.csv").set_index(["scope", "group"])
    rows = by_hand(rundir, "baseline/rule", "with_gt").drop_duplicates(["record_id", "generator", "metric"])
    lab = rows[rows["h"].notna()]
    agree = 1 - (lab["h"] - lab["p"]).abs()
    assert table.loc[("overall", "all"), "agreement"] == pytest.approx(agree.mean())
    assert table.loc[("overall", "all"), "population"] == pytest.approx(
        (lab["weight"] * agree).sum() / lab["weight"].sum()
    )
    assert table.loc[("overall", "all"), "n_labels"] == 120 and table.loc[("overall", "all"), "missing"] == 0
    param = lab["metric"] == "param"
    assert table.loc[("metric", "param"), "agreement"] == pytest.approx(agree[param].mean())
    assert sorted(table.loc["topology"].index) == sorted(lab["topology"].unique())


def test_labels_outside_the_design_stay_out_of_the_weighted_figures(
    rundir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plant(rundir, "ana", 30)
    session = Labelling(rundir, "ana", n=60, seed=0)
    easy = session.outputs[session.outputs["difficulty"] == "easy"].head(5)
    for r in easy.itertuples():
        entry = {"record_id": r.record_id, "generator": r.generator, "generator_trial": int(r.trial)}
        session.save(label_body(entry, {"tool": 0, "param": 0, "seq": 0, "cov": 0}))
    assert agree_cli(rundir, None, resamples=200, seed=0) == 0
    out = capsys.readouterr().out
    assert "5 labelled output(s) are outside the designed sample" in out
    assert "35 of the 35 labels" not in out and "30 of the 35 labels came from the designed sample" in out
    weighted = pd.read_csv(rundir / "human" / "judges_vs_people.csv")
    assert (weighted["n_labelled"] == 30).all()
    api.human_agree(rundir, resamples=200, seed=0, unweighted=True)
    every = pd.read_csv(rundir / "human" / "judges_vs_people.csv")
    assert (every["n_labelled"] == 35).all()


def test_two_annotators_agreement_and_kappa(rundir: Path) -> None:
    plant(rundir, "ana", 30, flip=5)
    plant(rundir, "bo", 20, flip=3)
    tables = api.human_agree(rundir, resamples=200, seed=0).people
    assert tables is not None
    pairs = pd.read_csv(rundir / "human" / "annotators.csv")
    assert tuple(pairs.columns) == ANNOTATOR_COLUMNS
    ana = {
        (x["record_id"], x["generator"]): x["verdicts"]
        for x in map(json.loads, (rundir / "labels" / "ana.jsonl").read_text().splitlines())
    }
    bo = {
        (x["record_id"], x["generator"]): x["verdicts"]
        for x in map(json.loads, (rundir / "labels" / "bo.jsonl").read_text().splitlines())
    }
    both = sorted(set(ana) & set(bo))
    assert len(both) == 20  # same design, same seed: bo's 20 are ana's first 20
    for m in METRICS:
        a = [str(ana[k][m]) for k in both]
        b = [str(bo[k][m]) for k in both]
        row = pairs[pairs["metric"] == m].iloc[0]
        assert row["n_items"] == 20
        assert row["agreement"] == pytest.approx(np.mean([x == y for x, y in zip(a, b, strict=True)]))
        assert row["kappa"] == pytest.approx(cohen_kappa_score(a, b))
    # people's verdict on an output both labelled is their mean: the direct estimate sees 0.75 there
    assert "human/ana: 30, human/bo: 20" in tables.about[0]


def test_target_ci_sets_the_budget_and_must_be_positive(
    rundir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plant(rundir, "ana", 40)
    assert agree_cli(rundir, None, resamples=200, seed=0, target_ci=5) == 0
    out = capsys.readouterr().out
    assert "labelled outputs needed for a CI of ±5 pp" in out
    five = api.human_agree(rundir, resamples=200, seed=0, target_ci=5).people
    two = api.human_agree(rundir, resamples=200, seed=0, target_ci=2).people
    assert five is not None and two is not None
    assert (five.budget["labels_direct"] < two.budget["labels_direct"]).all()
    assert agree_cli(rundir, None, resamples=200, seed=0, target_ci=0) == 2
    assert "--target-ci 0" in capsys.readouterr().err


def test_a_folder_without_labels_is_one_line_and_exit_2(
    rundir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agree_cli(rundir, None, resamples=200, seed=0) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no labels" in err and err.count("\n") == 1
    assert not (rundir / "human").exists()


def test_the_report_has_against_people_only_when_labels_exist(rundir: Path) -> None:
    assert report_cli(rundir, resamples=100, seed=0) in (0, 1)
    assert "Against people" not in (rundir / "report" / "report.md").read_text()
    plant(rundir, "ana", 30)
    assert report_cli(rundir, resamples=100, seed=0) == 0
    md = (rundir / "report" / "report.md").read_text()
    assert "**Against people** — 30 labelled outputs (human/ana: 30)" in md and "the labels were blind" in md
    html = (rundir / "report" / "report.html").read_text()
    assert "The programmatic reference against people" in html and "Published: 92.7 % overall" in html
    judges = pd.read_csv(rundir / "report" / "tables" / "people_judges.csv")
    api.human_agree(rundir, resamples=100, seed=0)
    written = pd.read_csv(rundir / "human" / "judges_vs_people.csv")
    assert judges[list(JUDGE_COLUMNS)].equals(written)  # the report and human-agree print the same figures
    assert (judges.loc[judges["metric"] == "all", "reference"] > 0).all()


def _without_reference(rundir: Path) -> None:
    """The run as an import without expected calls leaves it: records without GT, no scores, the judges
    without GT only and no reference in their rows."""
    records = [
        r.model_copy(update={"gt": []})
        for r in read_records(Path(json.loads((rundir / "meta.json").read_text())["pipeline"]["dataset"]))
    ]
    write_records(rundir / "records.jsonl", records)
    meta = json.loads((rundir / "meta.json").read_text())
    meta["pipeline"]["dataset"] = "records.jsonl"
    (rundir / "meta.json").write_text(json.dumps(meta))
    (rundir / "scores.parquet").unlink()
    j = pd.read_parquet(rundir / "judgments.parquet")
    j = j[j["condition"] == "without_gt"].copy()
    j["reference"] = np.nan
    j.to_parquet(rundir / "judgments.parquet", index=False)


def test_without_a_reference_judges_are_checked_directly_and_the_agent_scored_by_ppi(
    rundir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_reference(rundir)
    session = Labelling(rundir, "ana", n=48, seed=1)
    queue = session.queue_state()["queue"]
    assert len(queue) == 48 and session.mode is None
    rng = np.random.default_rng(0)
    for entry in queue[:36]:
        session.save(
            label_body(entry, {m: float(rng.choice([0, 0.5, 1], p=[0.2, 0.2, 0.6])) for m in METRICS})
        )
    line = json.loads((rundir / "labels" / "ana.jsonl").read_text().splitlines()[0])
    assert line["shown"] == {"gt": False, "scores": False, "verdicts": False}
    assert agree_cli(rundir, None, resamples=200, seed=0) == 0
    out = capsys.readouterr().out
    assert "no labelled output has a reference: agreement.csv not written" in out
    assert not (rundir / "human" / "agreement.csv").exists()
    judges = pd.read_csv(rundir / "human" / "judges_vs_people.csv")
    assert (
        set(judges["condition"]) == {"without_gt"}
        and judges["ppi"].isna().all()
        and judges["direct"].notna().all()
    )
    agent = pd.read_csv(rundir / "human" / "agent_score.csv")
    assert set(agent["proxy"]) == {"baseline/rule", "simjudge/careful", "jury"}
    # the direct estimate of the agent's score by hand: Σ w·h / Σ w, w = N_h / n_h (h: topology; no reference)
    labels = [json.loads(x) for x in (rundir / "labels" / "ana.jsonl").read_text().splitlines()]
    preds = pd.read_parquet(rundir / "predictions.parquet")
    preds = preds[(preds["difficulty"] == "hard") & preds["error"].isna()]
    topo = {r.id: r.topology for r in read_records(rundir / "records.jsonl")}
    preds["topology"] = preds["base_id"].map(topo)
    labelled = {(x["record_id"], x["generator"]) for x in labels}
    preds["labelled"] = [
        (r, g) in labelled for r, g in zip(preds["record_id"], preds["generator"], strict=True)
    ]
    weight = preds.groupby("topology")["labelled"].size() / preds.groupby("topology")["labelled"].sum()
    for generator in ("sim/weak", "sim/perfect"):
        mine = [x for x in labels if x["generator"] == generator]
        w = np.array([weight[topo[x["record_id"].split(":")[0]]] for x in mine for _ in METRICS])
        h = np.array([x["verdicts"][m] for x in mine for m in METRICS])
        row = agent[
            (agent["generator"] == generator) & (agent["proxy"] == "jury") & (agent["metric"] == "all")
        ].iloc[0]
        assert row["direct"] == pytest.approx((w * h).sum() / w.sum())
        assert row["n_labelled"] == len(mine) and row["ppi_lo"] <= row["ppi"] <= row["ppi_hi"]
        assert not math.isnan(row["labels_ppi"])
