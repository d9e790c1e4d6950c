"""Pipeline YAML validation: every mistake is reported before any call, naming the file and the key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_runner import make_record, write_dataset, write_pipeline
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.commands.run import run_cli
from agentjudge.rundir.records import write_records
from agentjudge.runner.pipeline import PipelineError, config_hash, load_pipeline, override_models

REPO = Path(__file__).resolve().parents[1]


def _write(folder: Path, data: dict[str, Any]) -> Path:
    write_dataset(folder)
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


BASE: dict[str, Any] = {
    "name": "t",
    "dataset": "records.jsonl",
    "generators": ["sim/weak"],
    "judges": ["baseline/rule"],
}

BAD_CASES = [
    ("unknown top-level key", {"judgs": ["baseline/rule"]}, ["key `judgs`", "unknown key"]),
    ("unknown model key", {"judges": [{"modle": "baseline/rule"}]}, ["key `judges[0].modle`", "unknown key"]),
    (
        "unknown baseline",
        {"judges": ["baseline/nope"]},
        ["`judges[0].model`", "unknown baseline judge 'nope'", "rule"],
    ),
    ("generator as judge", {"judges": ["sim/weak"]}, ["`judges[0].model`", "not judges"]),
    ("unknown profile", {"generators": ["sim/genius"]}, ["`generators[0].model`", "'genius'", "perfect"]),
    ("judge as generator", {"generators": ["baseline/rule"]}, ["`generators[0].model`", "not generators"]),
    ("factory not importable", {"judges": ["no_such_pkg.mod:factory"]}, ["`judges[0].model`", "no_such_pkg"]),
    ("missing dataset", {"dataset": "nowhere.jsonl"}, ["key `dataset`", "nowhere.jsonl"]),
    ("negative concurrency", {"concurrency": -1}, ["key `concurrency`", "greater than 0"]),
    ("zero concurrency", {"concurrency": 0}, ["key `concurrency`"]),
    ("bad difficulty", {"difficulties": ["easy", "extreme"]}, ["key `difficulties[1]`"]),
    ("bad condition", {"conditions": ["with_gt", "sometimes_gt"]}, ["key `conditions[1]`"]),
    ("bad variant key", {"prompt_variants": [{"format": "json"}]}, ["key `prompt_variants[0].format`"]),
    ("missing name", {"name": None}, ["key `name`"]),
    ("duplicate judges", {"judges": ["baseline/rule", "baseline/rule"]}, ["duplicate display name"]),
    ("negative reask", {"reask": -2}, ["key `reask`"]),
]


@pytest.mark.parametrize(("label", "change", "expected"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_pipeline_is_refused_naming_file_and_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    label: str,
    change: dict[str, Any],
    expected: list[str],
) -> None:
    data = {k: v for k, v in {**BASE, **change}.items() if v is not None}
    path = _write(tmp_path, data)
    with pytest.raises(PipelineError) as info:
        load_pipeline(path)
    message = str(info.value)
    assert str(path) in message
    for part in expected:
        assert part in message, message
    # The run verb exits 2 and writes nothing.
    rundir = tmp_path / "run"
    assert run_cli(path, rundir) == 2
    assert not rundir.exists()
    assert "error" in capsys.readouterr().err


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    write_dataset(tmp_path)
    path = tmp_path / "pipeline.yaml"
    path.write_text("name: t\ndataset: records.jsonl\ngenerators: [sim/weak\njudges: []\n")
    with pytest.raises(PipelineError, match=r"pipeline\.yaml:\d+:\d+: invalid YAML"):
        load_pipeline(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(PipelineError, match="top level must be a mapping"):
        load_pipeline(path)
    assert run_cli(tmp_path / "absent.yaml", tmp_path / "run") == 2
    assert not (tmp_path / "run").exists()


def test_cli_exit_code_2_for_bad_input(tmp_path: Path) -> None:
    path = _write(tmp_path, {**BASE, "concurrency": 0})
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "concurrency" in result.output
    assert not (tmp_path / "run").exists()


def test_bad_dataset_line_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, BASE)
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"dag_type"', '"dag_typo"', 1)
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert run_cli(path, tmp_path / "run") == 2
    out = capsys.readouterr().err
    assert "records.jsonl" in out and "line 2" in out
    assert not (tmp_path / "run").exists()


def test_swapped_gt_needs_two_records_per_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, {**BASE, "conditions": ["swapped_gt"]})
    write_records(
        tmp_path / "records.jsonl",
        [make_record(0, "linear"), make_record(1, "linear"), make_record(2, "fan_out")],
    )
    assert run_cli(path, tmp_path / "run") == 2
    assert "fan_out" in capsys.readouterr().err


def test_defaults_shorthand_and_relative_paths(tmp_path: Path) -> None:
    pipe = load_pipeline(_write(tmp_path, {**BASE, "cache": "c/calls.sqlite", "temperatures": [None, 0.7]}))
    assert pipe.dataset == (tmp_path / "records.jsonl").resolve()
    assert pipe.cache == (tmp_path / "c" / "calls.sqlite").resolve()
    assert [g.model for g in pipe.generators] == ["sim/weak"]
    assert pipe.difficulties == ["easy", "medium", "hard"] and pipe.conditions == ["with_gt", "without_gt"]
    assert pipe.scoring_modes == ["paper", "strict"] and pipe.trials == 1 and pipe.reask == 0
    assert pipe.temperatures == [None, 0.7]
    # litellm strings are accepted without calling anything
    assert load_pipeline(_write(tmp_path, {**BASE, "judges": ["openai/gpt-4o-mini", "ollama/llama3:8b"]}))


def test_config_hash_tracks_results_not_cosmetics(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    base = load_pipeline(_write(tmp_path / "a", BASE))
    h = config_hash(base)
    cosmetic = {
        **BASE,
        "name": "other",
        "concurrency": 3,
        "max_cost_usd": 5.0,
        "judges": [{"model": "baseline/rule", "timeout_s": 9, "api_base": "http://x"}],
    }
    assert config_hash(load_pipeline(_write(tmp_path / "a", cosmetic))) == h
    for change in (
        {"judges": ["baseline/ceiling"]},
        {"temperatures": [0.3]},
        {"limit": 1},
        {"lenient": True},
        {"judges": [{"model": "baseline/rule", "temperature": 0.2}]},
    ):
        assert config_hash(load_pipeline(_write(tmp_path / "a", {**BASE, **change}))) != h, change
    # The dataset enters by content: a copied project folder keeps the hash, an edited record changes it.
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    (tmp_path / "b" / "pipeline.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "a" / "pipeline.yaml").write_text(yaml.safe_dump(BASE))
    assert config_hash(load_pipeline(tmp_path / "b" / "pipeline.yaml")) == h
    records = tmp_path / "b" / "records.jsonl"
    records.write_text(records.read_text().replace("support agent", "helpdesk agent"))
    assert config_hash(load_pipeline(tmp_path / "b" / "pipeline.yaml")) != h


def test_command_line_models_replace_the_lists(tmp_path: Path) -> None:
    pipe = load_pipeline(write_pipeline(tmp_path))
    new = override_models(pipe, ["openai/my-judge"], None, "http://127.0.0.1:9/v1")
    assert [(j.model, j.api_base) for j in new.judges] == [("openai/my-judge", "http://127.0.0.1:9/v1")]
    assert new.generators == pipe.generators
    with pytest.raises(PipelineError, match=r"command line: key `judges\[0\]\.model`"):
        override_models(pipe, ["baseline/oracle"], None, None)


SHIPPED = sorted(p.name for p in (REPO / "pipelines").glob("*.yaml"))


def _shipped_copy(tmp_path: Path, name: str) -> Path:
    """The shipped pipeline in a copy of the repo layout whose data/ holds the small test dataset."""
    (tmp_path / "pipelines").mkdir()
    for folder in ("data/mini", "data/full", "runs/bfcl/multiple"):  # bfcl.yaml: what `import bfcl` writes
        (tmp_path / folder).mkdir(parents=True)
        write_dataset(tmp_path / folder)
    target = tmp_path / "pipelines" / name
    shutil.copy(REPO / "pipelines" / name, target)
    return target


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_pipelines_are_valid(tmp_path: Path, name: str) -> None:
    pipe = load_pipeline(_shipped_copy(tmp_path, name))
    assert pipe.generators and pipe.judges
    # offline demos and the local llama.cpp grids; other shipped pipelines mark what the user must replace
    if name not in (
        "quickstart.yaml",
        "bfcl.yaml",
        "interactive.yaml",
        "local.yaml",
        "ablation_compact_tools_local.yaml",
    ):
        assert all("REPLACE-ME" in m.model for m in pipe.judges)


def test_paper_pipeline_is_the_published_grid(tmp_path: Path) -> None:
    pipe = load_pipeline(_shipped_copy(tmp_path, "paper.yaml"))
    assert (len(pipe.generators), len(pipe.judges), len(pipe.difficulties), len(pipe.conditions)) == (
        5,
        6,
        3,
        2,
    )
    assert all(j.tier is not None for j in pipe.judges)


def test_quickstart_runs_offline(tmp_path: Path) -> None:
    pipeline = _shipped_copy(tmp_path, "quickstart.yaml")
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    meta = json.loads((rundir / "meta.json").read_text())
    assert all(g["simulated"] for g in meta["generators"].values())
    assert {j["kind"] for j in meta["judges"].values()} == {"baseline", "simjudge"}
    assert all(j["simulated"] for j in meta["judges"].values())
    # 4 records x 3 difficulties x 5 generators, each judged by 7 judges under 3 conditions,
    # 4 prompt variants and 2 temperatures
    per_judge = 60 * 3 * 4 * 2
    assert meta["units"] == {
        "predict": {"planned": 60, "done": 60, "failed": 0},
        "judge": {"planned": 7 * per_judge, "done": 7 * per_judge, "failed": 0},
        "by_judge": {j: {"planned": per_judge, "done": per_judge, "failed": 0} for j in meta["judges"]},
    }


@pytest.mark.parametrize(("folder", "size"), [("full", "full"), ("mini", "mini")])
def test_missing_dataset_hint_is_a_runnable_generate_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, size: str
) -> None:
    """Without --size, generate writes the mini split: the hint must name the size the folder stands for."""
    (tmp_path / "pipelines").mkdir()
    path = tmp_path / "pipelines" / "p.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": "p", "dataset": f"../data/{folder}/records.jsonl", "generators": ["sim/weak"]}
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineError) as err:
        load_pipeline(path)
    assert f"`agentjudge generate --size {size} --seed 0 --out data/{folder}`" in str(err.value)


def test_compact_tool_rendering_with_the_published_prompts_is_refused(tmp_path: Path) -> None:
    """`compact` applies to our prompt family only; with `paper` it would change only the config hash."""
    path = write_pipeline(tmp_path, prompt_family="paper", judge_tool_rendering="compact")
    with pytest.raises(PipelineError, match=r"compact applies to prompt_family: agentjudge only") as err:
        load_pipeline(path)
    assert "Value error" not in str(err.value)  # pydantic's prefix is not shown to the user
    assert run_cli(path, tmp_path / "run") == 2 and not (tmp_path / "run").exists()
    load_pipeline(write_pipeline(tmp_path, prompt_family="agentjudge", judge_tool_rendering="compact"))


def test_checking_a_pipeline_imports_no_judge_or_agent(tmp_path: Path) -> None:
    """The model check of a pipeline of sim/ generators and baseline judges needs names only: neither the
    baseline judges (jsonschema, the rule checks) nor the simulated agents are imported to parse it."""
    import subprocess
    import sys

    pipeline = write_pipeline(tmp_path)
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from agentjudge.runner.pipeline import load_pipeline\n"
        "pipe = load_pipeline(Path(sys.argv[1]))\n"
        "print(len(pipe.judges), *(m in sys.modules for m in ("
        "'agentjudge.judges.baselines', 'agentjudge.generators.agent_sim', 'jsonschema')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(pipeline)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["3", "False", "False", "False"]


def test_an_unknown_baseline_or_profile_is_still_refused(tmp_path: Path) -> None:
    for field, model, said in (
        ("judges", "baseline/always-2", "unknown baseline judge 'always-2'; known: always-0, always-0.5"),
        ("generators", "sim/agent-nope", "unknown simulated profile 'agent-nope'; known: "),
    ):
        with pytest.raises(PipelineError, match=said):
            load_pipeline(write_pipeline(tmp_path / field, **{field: [model]}))


def test_a_prefetched_digest_is_the_files_and_a_stale_one_is_not_used(tmp_path: Path) -> None:
    """``prefetch_digest`` hashes in a thread what ``file_digest`` then returns; a file changed since
    (another size) is hashed again, a missing one is reported by ``file_digest`` as before."""
    import hashlib
    import threading

    from agentjudge.runner import pipeline
    from agentjudge.runner.pipeline import file_digest, forget_digests, prefetch_digest

    path = tmp_path / "data.jsonl"
    path.write_bytes(b"x" * 3_000_000)
    forget_digests()
    prefetch_digest(path)
    assert file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    forget_digests()
    prefetch_digest(path)
    path.write_bytes(b"y" * 2_000_000)  # changed before anyone asked
    assert file_digest(path) == hashlib.sha256(b"y" * 2_000_000).hexdigest()
    # the stale hash's thread is joined and dropped by that file_digest already (Gate 1 and the offline units
    # fork next, and a thread must not outlive a fork)
    assert not pipeline._PREFETCHED
    assert not [t for t in threading.enumerate() if t.name == "dataset-sha256"]
    forget_digests()
    assert not [t for t in threading.enumerate() if t.name == "dataset-sha256"]  # joined
    missing = tmp_path / "missing.jsonl"
    prefetch_digest(missing)
    with pytest.raises(FileNotFoundError):
        file_digest(missing)


def test_a_misspelt_key_gets_a_suggestion_at_every_depth(tmp_path: Path) -> None:
    """Issue 36: "did you mean" from the keys valid at that place (the pipeline, a model entry, a prompt
    variant); a key like nothing valid gets none."""
    path = write_pipeline(
        tmp_path,
        dificulties=["easy"],
        judges=[{"model": "baseline/rule", "temprature": 0.2}],
        prompt_variants=[{"cott": True}],
        zzzz=1,
    )
    with pytest.raises(PipelineError) as info:
        load_pipeline(path)
    lines = str(info.value).splitlines()
    assert any(
        line.endswith("key `dificulties`: unknown key (did you mean `difficulties`?)") for line in lines
    )
    assert any(
        line.endswith("key `judges[0].temprature`: unknown key (did you mean `temperature`?)")
        for line in lines
    )
    assert any(
        line.endswith("key `prompt_variants[0].cott`: unknown key (did you mean `cot`?)") for line in lines
    )
    assert any(line.endswith("key `zzzz`: unknown key") for line in lines)


def test_a_misspelt_verb_gets_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["reprot", "runs/x"])
    assert result.exit_code == 2 and "Did you mean 'report'?" in result.output
