"""Opening a run folder for ``agentjudge run``: the store that holds this configuration, or a refusal.

What a run folder may hold when a run starts: nothing (a new run: the store is created and given the
configuration), a run of this configuration (it resumes), a run of this pipeline without some judges given
with ``--add-judge`` (they are added: only their units run), or a run of another configuration (refused
with the diff, unless ``--force-new`` archives it first). Also here: the two cheap looks into a folder
before anything is read, whether every unit of this configuration is done with its files current
(``finished``: a re-run has nothing to do), and which judges earlier invocations added (``earlier_added``).
The folder's lock is ``runner/rundir_lock.py``'s; the caller holds it around ``open_store``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentjudge import __version__, strict_json
from agentjudge.errors import InputError
from agentjudge.models.fleet import redact_model_urls
from agentjudge.provenance import git_commit
from agentjudge.rundir.units import open_readonly, read_meta
from agentjudge.runner.events import Event, FolderArchived, JudgesAdded
from agentjudge.runner.pipeline import Pipeline, config_hash, hashed_config
from agentjudge.runner.store import RunStore, archive_run, config_diff, now
from agentjudge.types import ModelSettings

OUTPUT_FILES = ("meta.json", "predictions.parquet", "scores.parquet", "judgments.parquet")
# every file an export writes (run_summary.json at its end, sampling.json in a sampled run only)
WRITTEN_FILES = (*OUTPUT_FILES, "run_summary.json", "sampling.json")


class ConfigurationChanged(InputError):
    """The run folder holds a run of another configuration; the message has the diff and what to do."""


def export_stamp(version: int, skip_invalid: bool, pipe: Pipeline) -> str:
    """What the run folder's files were built from: the store's version (it grows with every committed
    group), the code, and whether records failing Gate 1 were left out (``--skip-invalid``): a re-run
    without that flag must refuse them again rather than call the run finished. A sampled run adds its
    design (a re-run with another target has work to do although the config hash leaves it out)."""
    stamp: dict[str, Any] = {
        "store_version": version,
        "skip_invalid": skip_invalid,
        "git_commit": git_commit(),
        "version": __version__,
    }
    if pipe.sampling is not None:
        stamp["sampling"] = pipe.sampling.model_dump(mode="json", exclude={"prior_run"})
    return json.dumps(stamp, sort_keys=True)


def finished(pipe: Pipeline, rundir: Path, skip_invalid: bool) -> bool:
    """A re-run with nothing to do: the store holds this configuration (the hash covers the dataset's
    content), its last export saw every planned unit done, nothing was written to the store since, and the
    exported files are there with the bytes it wrote (``written_digests``: a file damaged or edited since
    is written again from the store by the re-run). Costs a hash of the dataset file and of the run's files
    and two queries, not a reading of the grid."""
    meta = _stored_meta(rundir)
    if meta is None:
        return False
    complete = meta.get("exported_complete")
    if complete is None or not all((rundir / name).is_file() for name in OUTPUT_FILES):
        return False
    version = int(meta.get("store_version", "0"))
    if complete not in (
        export_stamp(version, False, pipe),
        export_stamp(version, True, pipe) if skip_invalid else None,
    ):
        return False
    if meta.get("config_hash") != config_hash(pipe):
        return False
    return meta.get("exported_digests") == written_digests(rundir)


def written_digests(rundir: Path) -> str:
    """The sha256 of every file an export wrote (``WRITTEN_FILES`` present), as kept in the store's meta
    ``exported_digests`` when a run ends complete; ``finished`` compares them with the files as they are."""
    from agentjudge.runner.pipeline import sha256_file

    digests = {}
    for name in WRITTEN_FILES:
        try:
            digests[name] = sha256_file(rundir / name)
        except FileNotFoundError:
            continue
        except OSError:
            digests[name] = "unreadable"
    return json.dumps(digests, sort_keys=True)


def earlier_added(rundir: Path, given: list[str]) -> list[str]:
    """The models added to this run folder with ``--add-judge`` by earlier invocations and not given again
    (read from its store with ``rundir.units.open_readonly``; none when the folder holds no run)."""
    meta = _stored_meta(rundir)
    entries = json.loads(meta["added_judges"]) if meta and "added_judges" in meta else []
    return [e["model"] for e in entries if isinstance(e, dict) and e.get("model") and e["model"] not in given]


def _stored_meta(rundir: Path) -> dict[str, str] | None:
    """The store's meta table, read without writing; None when the folder holds no readable store."""
    conn = open_readonly(rundir / "run.sqlite")
    if conn is None:
        return None
    try:
        return read_meta(conn)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def judges_added(meta: dict[str, str], pipe: Pipeline, added: list[str]) -> list[ModelSettings] | None:
    """The judges ``--add-judge`` adds to the run a folder holds: those of ``added`` not in its stored
    configuration, when the pipeline without them is exactly the stored one (the same config hash); None
    when the pipeline differs in anything else (then the folder is refused with the diff, as any change).
    A judge added to the folder earlier and given again is part of the stored configuration already."""
    if not added:
        return None
    stored = json.loads(meta.get("hashed_config", "{}")).get("judges", [])
    entries = json.loads(json.dumps(hashed_config(pipe)["judges"]))  # as stored: through JSON
    new = [
        judge
        for judge, entry in zip(pipe.judges, entries, strict=True)
        if judge.display_name in added and entry not in stored
    ]
    base = pipe.model_copy(update={"judges": [j for j in pipe.judges if j not in new]})
    return new if new and config_hash(base) == meta.get("config_hash") else None


def open_store(
    rundir: Path,
    pipe: Pipeline,
    force_new: bool,
    report: Callable[[Event], None],
    added: list[str] | None = None,
) -> RunStore:
    """The run folder's store, holding this configuration: a new folder is given it; a folder holding
    another is refused with the diff (``ConfigurationChanged``), unless it differs only by judges of
    ``added`` (``--add-judge``), whose units are then planned beside the stored ones (the stored
    configuration becomes this one, and meta ``added_judges`` lists what was added when)."""
    rundir.mkdir(parents=True, exist_ok=True)
    if force_new:
        archived = archive_run(rundir)
        if archived is not None:
            report(FolderArchived(archived))
    store = RunStore(rundir / "run.sqlite")
    meta = store.meta()
    new_hash, new_config = config_hash(pipe), hashed_config(pipe)
    commit = git_commit()
    extension = (
        judges_added(meta, pipe, added or []) if meta and meta.get("config_hash") != new_hash else None
    )
    if meta and meta.get("config_hash") != new_hash and extension is None:
        old_config = json.loads(meta.get("hashed_config", "{}"))
        earlier = [entry["judge"] for entry in json.loads(meta.get("added_judges", "[]"))]
        store.close()
        raise ConfigurationChanged(
            _refusal(rundir, config_diff(old_config, new_config), earlier, bool(added))
        )
    update: dict[str, str] = {}
    if extension:
        predictions, judged = (sum(store.counts(stage).values()) for stage in ("predict", "judge"))
        report(JudgesAdded(rundir, tuple(j.display_name for j in extension), predictions, judged))
        record = json.loads(meta.get("added_judges", "[]"))
        record += [
            {"judge": j.display_name, "model": j.model, "added_at": now(), "git_commit": commit}
            for j in extension
        ]
        update["added_judges"] = strict_json.dumps(record)
    if not meta or extension:
        update["config_hash"] = new_hash
        update["hashed_config"] = json.dumps(new_config, sort_keys=True)
        update["pipeline"] = json.dumps(redact_model_urls(pipe.model_dump(mode="json")))
    if not meta:
        update |= {"git_commit": commit, "package_version": __version__, "seed": str(pipe.seed)}
    update |= {"git_commit_last": commit, "package_version_last": __version__}
    store.set_meta(update)  # one transaction: the configuration and the record of what was added
    return store


def _refusal(rundir: Path, diff: str, earlier: list[str], adding: bool) -> str:
    """Why a folder holding another configuration is refused, its diff, and the ways on."""
    hint = (
        f"This folder's judges were extended with --add-judge {' --add-judge '.join(earlier)}; give the "
        "same flags to resume it.\n"
        if earlier
        else ""
    )
    return (
        f"{rundir} holds a run of a different configuration; refusing to mix results.\n"
        f"Changes (old -> new):\n{diff}\n"
        f"{hint}"
        "Use another --out folder, restore the pipeline, or pass --force-new to archive the old run"
        + (
            " (--add-judge adds judges only to a folder holding the same pipeline without them)."
            if adding
            else "."
        )
    )
