"""Fixtures of the hostile cases: a few real records, a small pipeline beside them, one finished run folder
(made once, copied by the cases that change it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "data" / "mini" / "records.jsonl"


def mini_records(folder: Path, n: int = 4, name: str = "records.jsonl") -> Path:
    """The first ``n`` records of the shipped mini dataset (real records: they pass Gate 1)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = MINI.read_text(encoding="utf-8").splitlines(keepends=True)[:n]
    path = folder / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_pipeline(folder: Path, records: int = 4, **fields: Any) -> Path:
    """A small offline grid beside ``records`` real records; ``fields`` override its keys."""
    mini_records(folder, records)
    data = {
        "name": "hostile",
        "dataset": "records.jsonl",
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": ["baseline/rule", "simjudge/careful"],
        "conditions": ["with_gt", "without_gt"],
        "scoring": "both",
        "concurrency": 4,
        "cache": "calls.sqlite",
        **fields,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder of the small grid (read only: copy it with ``fresh_run`` to change it)."""
    from agentjudge import api

    folder = tmp_path_factory.mktemp("hostile-run")
    pipeline = write_pipeline(folder / "p")
    result = api.run(pipeline, folder / "run")
    assert result.exit_code == 0
    return folder / "run"


@pytest.fixture
def fresh_run(finished_run: Path, tmp_path: Path) -> Callable[..., Path]:
    """A copy of ``finished_run`` (and its pipeline folder) under this case's tmp_path."""

    def copy(where: Path | None = None) -> Path:
        target = where if where is not None else tmp_path
        shutil.copytree(finished_run.parent / "p", target / "p", dirs_exist_ok=True)
        shutil.copytree(finished_run, target / "run")
        return target / "run"

    return copy


@pytest.fixture(scope="session")
def mini_predictions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(records, predictions): every shipped mini record at every difficulty, predicted by ``sim/weak``
    (180 predictions: a scores file of ~47 KB)."""
    from agentjudge import api

    folder = tmp_path_factory.mktemp("hostile-predictions")
    data = mini_records(folder, 60)
    preds = folder / "predictions.jsonl"
    api.infer(data, "sim/weak", preds)
    return data, preds


def tau_episode(task_id: int, trial: int, reward: float, **over: Any) -> dict[str, Any]:
    """One τ-bench episode of the published file's shape: a user asks, the agent reads and writes once."""
    user = f"user_{task_id}"
    actions = [
        {"name": "get_user_details", "kwargs": {"user_id": user}},
        {"name": "cancel_reservation", "kwargs": {"reservation_id": f"R{task_id}"}},
    ]
    calls = actions if reward == 1.0 else actions[:1]
    traj: list[dict[str, Any]] = [
        {"role": "system", "content": "# Airline Agent Policy"},
        {"role": "user", "content": f"Please cancel reservation R{task_id} for {user}."},
    ]
    for i, call in enumerate(calls):
        call_id = f"call_{task_id}_{trial}_{i}"
        traj.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call["name"], "arguments": json.dumps(call["kwargs"])},
                    }
                ],
            }
        )
        traj.append({"role": "tool", "content": "{}", "tool_call_id": call_id, "name": call["name"]})
    traj.append({"role": "assistant", "content": "Done."})
    episode = {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {
            "task": {"user_id": user, "instruction": f"You are {user}.", "actions": actions, "outputs": []},
            "source": "user",
            "user_cost": 0.0,
            "reward_info": None,
        },
        "traj": traj,
    }
    episode.update(over)
    return episode


def tau_file(path: Path, episodes: list[dict[str, Any]] | None = None) -> Path:
    """A τ-bench trajectories file (8 episodes: 4 tasks x 2 trials) or the episodes given."""
    if episodes is None:
        episodes = [tau_episode(t, k, float((t + k) % 2)) for t in range(4) for k in range(2)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(episodes), encoding="utf-8")
    return path
