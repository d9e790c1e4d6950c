"""RUNDIR/meta.json: how a run was made and what its folder holds, and the folder's format version.

Written by every export of ``agentjudge run`` (``runner/grid.py`` assembles it) and by the synthetic folders
of ``rundir/synthetic.py``. ``format_version`` names the version of the whole folder's file contracts
(docs/formats.md): it grows when a file changes in a way an older reader would misread (a column or key
renamed, removed or given another meaning), not when a column or key is added that readers may lack.

A folder written before the key existed (no ``format_version``) is version 0: its files are those of
version 1, except that columns and keys added over time may be missing, which every reader already handles
(``columns.LATER_*`` for the tables; here the keys with a default). So version 0 is read as version 1.

The models forbid unknown keys (a key this code does not know is a folder of a newer format, or a writer
that forgot to bump the version): every key any writer has ever written is modelled, the ones added later
with a default, so that ``model_dump(exclude_unset=True)`` gives back the file as written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from agentjudge.rundir.errors import RunFolderError, validation_problem
from agentjudge.types import Strict

META_FILE = "meta.json"
#: the format this code writes; see the module docstring and docs/formats.md for what changes bump it.
#: 2: run.sqlite's ``units.result`` is zlib-compressed (``units.encode_result``; versions 0 and 1 hold text,
#: read alike by ``units.decode_result``)
FORMAT_VERSION = 2
#: the oldest format this code reads (0: folders written before format versions existed)
OLDEST_READABLE_VERSION = 0

Number = int | float  # JSON numbers as written: an int stays an int, so a dump gives the file back


class ModelInfo(Strict):
    """A judge's or generator's entry under ``judges`` / ``generators``."""

    model: str | None = None  # the model string (synthetic folders have none)
    tier: Number | None  # the pipeline's tier (null: none given)
    # sim, simjudge, baseline, imported, plugin, litellm (``registry.model_strings.model_kind``);
    # synthetic folders say llm / simulated / baseline
    kind: str
    simulated: bool  # no real model behind it (sim/, simjudge/, baseline/)


class AddedJudge(Strict):
    """One judge added to the folder's run by ``agentjudge run ... --add-judge``."""

    judge: str  # display name
    model: str
    added_at: str  # UTC, ISO 8601
    git_commit: str


class UnitCounts(Strict):
    planned: int = Field(ge=0)
    done: int = Field(ge=0)
    failed: int = Field(ge=0)


class Units(Strict):
    """Units of each stage at the export: planned, and stored as done or failed (the rest were not run);
    ``by_judge``: the judge stage's per judge (absent in folders written before it was kept)."""

    predict: UnitCounts
    judge: UnitCounts
    by_judge: dict[str, UnitCounts] | None = None


class EndpointCount(Strict):
    ok: int = Field(ge=0)
    failed: int = Field(ge=0)


class ModelRow(Strict):
    """One model's row of the end-of-run table (``runner/summary.py``: ``summary_rows``), for the last
    invocation that did work. Keys added over time have a default (older folders lack them)."""

    model: str
    role: Literal["generator", "judge"]
    kind: str
    done: int
    failed: int
    calls: int
    requests: int | None = None  # HTTP requests sent, retries included
    retries_by_kind: dict[str, int] | None = None
    cache_hits: int | None  # null: an in-process model (no call cache)
    parse_failures: int
    tokens: int
    cost_usd: Number  # the known costs (a lower bound when unknown_cost_calls or unseen_cost_requests)
    unknown_cost_calls: int | None = None  # answers whose price is not known
    unseen_cost_requests: int | None = None  # requests that may have been billed without usage
    cached_prompt_tokens: int | None = None
    prompt_tokens: int | None = None
    cache_saved_usd: Number | None = None
    endpoints: dict[str, EndpointCount] | None = None  # a fleet (``api_bases``): per redacted endpoint


class StoppedModel(Strict):
    """A model a fatal failure stopped: its reason (``models.failures.REASONS``) and the error."""

    reason: str
    error: str


class LastInvocation(Strict):
    per_model: list[ModelRow]
    spent_usd: Number  # the known costs of the answers read
    cost_cap_usd: Number | None  # --max-cost (null: none)
    # what the cap counted: the known costs plus the worst case of every answer that may have been billed
    # unseen (null without a cap; absent in folders written before it was recorded)
    cost_cap_counted_usd: Number | None = None
    units_not_run_at_cost_cap: int
    # the models a fatal failure stopped in that invocation, with the error that stopped each, and the
    # command line that continues the run (absent in folders written before they were kept)
    stopped_models: dict[str, StoppedModel] | None = None
    resume_command: str | None = None


class UnitShare(Strict):
    planned: int = Field(ge=0)
    full_grid: int = Field(ge=0)


class SamplingSummary(Strict):
    """meta.json's summary of a sampled run's design (the design itself is sampling.json)."""

    file: Literal["sampling.json"]
    target_ci_pp: Number
    fpc: bool
    stages: int
    judge_units: UnitShare
    predict_units: UnitShare


# keys every folder written by ``agentjudge run`` has; only a synthetic folder may lack them
_RUN_KEYS = ("config_hash", "git_commit", "git_commit_last", "package_version", "units", "last_invocation")


class RunMeta(Strict):
    """meta.json. ``pipeline`` is the resolved pipeline as ``runner.pipeline.Pipeline`` dumps it (that
    model, above this layer, owns its keys: docs/pipeline-keys.md), with model URLs' credentials redacted."""

    format_version: int = Field(default=0, ge=0)  # 0: written before format versions existed
    synthetic: bool = False  # made by rundir/synthetic.py for tests and benchmarks, not by a run
    pipeline: dict[str, Any]
    config_hash: str | None = None
    git_commit: str | None = None  # the commit of the code that started the run ("unknown" outside git)
    git_commit_last: str | None = None  # the commit of the last invocation
    package_version: str | None = None
    seed: int
    judges: dict[str, ModelInfo]
    generators: dict[str, ModelInfo]
    added_judges: list[AddedJudge] | None = None  # only when --add-judge extended the folder's run
    units: Units | None = None
    last_invocation: LastInvocation | None = None
    sampling: SamplingSummary | None = None  # only in a sampled run

    @model_validator(mode="after")
    def _a_run_says_how_it_was_made(self) -> RunMeta:
        if not self.synthetic:
            missing = [key for key in _RUN_KEYS if getattr(self, key) is None]
            if missing:
                raise ValueError(
                    f"missing key(s) {', '.join(missing)} (a run's meta.json has them; only a synthetic "
                    "folder, with synthetic: true, may lack them)"
                )
        return self

    @property
    def dataset(self) -> str | None:
        """The records file the run read, as the pipeline names it (an absolute path for a run; synthetic
        folders name none)."""
        for key in ("dataset", "data"):  # ``data``: the synthetic folders' pipeline
            value = self.pipeline.get(key)
            if isinstance(value, str) and value:
                return value
        return None


def read_meta(path: Path) -> RunMeta:
    """meta.json checked: JSON, a format version this code reads, the keys of the model. Every refusal is
    one line that names the file and says what to do."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RunFolderError(f"{path}: not UTF-8 text (is this a meta.json written by agentjudge?)") from None
    except OSError as exc:
        raise RunFolderError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunFolderError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} (the file is damaged; "
            "a re-run of the pipeline into this folder writes it again)"
        ) from None
    if not isinstance(raw, dict):
        raise RunFolderError(f"{path}: not a JSON object (is this a meta.json written by agentjudge?)")
    version = raw.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise RunFolderError(f"{path}: field format_version: {version!r} is not a format version")
    if version > FORMAT_VERSION:
        raise RunFolderError(
            f"{path}: format_version {version} is newer than this agentjudge reads (up to {FORMAT_VERSION}): "
            "upgrade agentjudge (pip install -U agentjudge) to read this folder"
        )
    if version < OLDEST_READABLE_VERSION:
        written_by = raw.get("package_version") or "an older release"
        raise RunFolderError(
            f"{path}: format_version {version} is older than this agentjudge reads (from "
            f"{OLDEST_READABLE_VERSION} on): re-run its pipeline into a new folder (agentjudge run PIPELINE "
            f"--out NEWFOLDER), or read it with the agentjudge that wrote it ({written_by})"
        )
    try:
        return RunMeta.model_validate(raw)
    except ValidationError as exc:
        raise RunFolderError(f"{path}: {validation_problem(exc)}") from None
