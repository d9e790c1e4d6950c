"""The pipeline YAML: what a grid run does, validated completely before a single model is called.

A pipeline names a dataset, the generators and judges, and the axes of the grid (difficulties, GT
conditions, prompt variants, temperatures, trials). ``load_pipeline`` turns every problem a person can
make in that file -- a typo'd key, an unknown ``sim/`` profile, a missing dataset, a zero concurrency, a
YAML syntax error -- into one ``PipelineError`` whose message names the file and the key, so a run never
fails an hour in because of line 3.

``config_hash`` fingerprints what the results depend on, so a resumed run can refuse to mix results of
two different configurations in one run folder.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from agentjudge.errors import InputError
from agentjudge.limits import (
    MAX_BATCH_BYTES,
    MAX_BATCH_REQUESTS,
    MAX_CONCURRENCY,
    MAX_REASK,
    MAX_RECORDS,
    MAX_TRIALS,
)
from agentjudge.runner.sampling.spec import Sampling
from agentjudge.types import (
    DIFFICULTIES,
    Condition,
    Difficulty,
    ModelSettings,
    PromptFamily,
    PromptVariant,
    Strict,
)

ScoringChoice = Literal["paper", "strict", "both"]

# Fields that change how a run is carried out but not what its results mean. They are left out of the
# config hash so that e.g. raising concurrency, moving a local server to another port, or renaming the
# pipeline does not force a fresh run folder. `sampling` chooses which units run, not what a unit's
# result is: a re-run with a tighter target continues in the same folder (the design's order and pilot are
# checked by agentjudge/runner/sampling/stages.py instead).
_COSMETIC_PIPELINE_FIELDS = (
    "name", "description", "concurrency", "max_cost_usd", "cache", "batch_poll_s", "batch_poll_max_s",
    "batch_max_requests", "batch_max_bytes", "workers", "sampling",
)  # fmt: skip
_COSMETIC_MODEL_FIELDS = (
    "api_base", "api_key_env", "headers_env", "timeout_s", "max_retries", "concurrency",
    "input_cost_per_token", "output_cost_per_token", "batch", "api_bases", "endpoint_concurrency",
)  # fmt: skip
# Model fields added after runs existed: left out of the hash at their default so older run folders keep
# their hash (generation mode, structured output).
_LATER_MODEL_DEFAULTS: dict[str, Any] = {
    "generation": "single_shot",
    "max_turns": 12,
    "structured_output": False,
}
# What a command-line --judge/--generator takes from the pipeline's first model of the same role.
_INHERITED_FIELDS = (
    "temperature", "max_tokens", "timeout_s", "max_retries", "concurrency", "drop_params", "native_tools",
    "structured_output", "generation", "max_turns",
)  # fmt: skip


_DEFAULT_CONDITIONS: tuple[Condition, ...] = ("with_gt", "without_gt")
_DEFAULT_TEMPERATURES: tuple[float | None, ...] = (None,)


class PipelineError(InputError):
    """A pipeline file (or a command-line override) that cannot be run; the message names file and key."""


def _model_entry(value: Any) -> Any:
    """Allow ``- sim/weak`` as shorthand for ``- {model: sim/weak}`` in the YAML lists."""
    return {"model": value} if isinstance(value, str) else value


class Pipeline(Strict):
    """One grid run. ``dataset`` and ``cache`` are resolved relative to the pipeline file's folder.
    No number may be NaN or infinite (``.nan``/``.inf`` in YAML): a cap of NaN would mean no cap."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    description: str | None = None
    dataset: Path
    limit: int | None = Field(
        default=None, gt=0, le=MAX_RECORDS, description="only the first N base scenarios of the file"
    )
    difficulties: list[Difficulty] = Field(default_factory=lambda: list(DIFFICULTIES), min_length=1)
    generators: list[ModelSettings] = Field(min_length=1)
    generator_trials: int = Field(default=1, ge=1, le=MAX_TRIALS)
    judges: list[ModelSettings] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=lambda: list(_DEFAULT_CONDITIONS), min_length=1)
    prompt_variants: list[PromptVariant] = Field(default_factory=lambda: [PromptVariant()], min_length=1)
    # judge prompts: `paper` = the published prompts, `agentjudge` = ours (prompts/README.md)
    prompt_family: PromptFamily = "agentjudge"
    # tool schemas in `agentjudge` judge prompts: `full` (with returns and descriptions) or `compact`
    judge_tool_rendering: Literal["full", "compact"] = "full"
    temperatures: list[float | None] = Field(
        default_factory=lambda: list(_DEFAULT_TEMPERATURES), min_length=1
    )
    trials: int = Field(default=1, ge=1, le=MAX_TRIALS)
    scoring: ScoringChoice = "both"
    lenient: bool = False
    concurrency: int = Field(default=16, gt=0, le=MAX_CONCURRENCY)
    max_cost_usd: float | None = Field(default=None, ge=0)
    seed: int = 0
    cache: Path | None = None
    # parse-failure re-asks, applied to judges with a `reask` attribute
    reask: int = Field(default=0, ge=0, le=MAX_REASK)
    # models with `batch: true`: first wait between polls of the provider's batches, doubling up to the max
    batch_poll_s: float = Field(default=30.0, gt=0)
    batch_poll_max_s: float = Field(default=600.0, gt=0)
    # requests / bytes per batch file, below the provider's own limits (None: the provider's limit)
    batch_max_requests: int | None = Field(default=None, gt=0, le=MAX_BATCH_REQUESTS)
    batch_max_bytes: int | None = Field(default=None, gt=0, le=MAX_BATCH_BYTES)
    # processes making litellm calls (runner/workers.py); None: the cores (at most 8) for >= 200 calls
    workers: int | None = Field(default=None, gt=0, le=64)
    # judge a prefix of a random order of base scenarios per cell, as long as a CI target needs
    # (agentjudge/runner/sampling/); None: every scenario, as always
    sampling: Sampling | None = None

    @model_serializer(mode="wrap")
    def _without_unset_sampling(self, handler: Any) -> Any:
        """An unsampled pipeline dumps as it did before the key existed (meta.json, the store's meta)."""
        data = handler(self)
        if self.sampling is None and isinstance(data, dict):
            data.pop("sampling", None)
        return data

    @field_validator("generators", "judges", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return [_model_entry(v) for v in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _unique(self) -> Pipeline:
        """Coordinates use display names and variant keys, so duplicates would collide in the store."""
        for field, models in (("generators", self.generators), ("judges", self.judges)):
            names = [m.display_name for m in models]
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                raise ValueError(f"{field}: duplicate display name(s) {dups}; give each a distinct `name`")
        for field, seq in (
            ("difficulties", self.difficulties),
            ("conditions", self.conditions),
            ("temperatures", self.temperatures),
            ("prompt_variants", [v.key for v in self.prompt_variants]),
        ):
            if len(set(seq)) != len(seq):
                raise ValueError(f"{field}: duplicate entries {seq}")
        if self.judge_tool_rendering == "compact" and self.prompt_family != "agentjudge":
            # the published prompts show the tools as the published records list them: compact would be
            # silently ignored, yet it is part of the config hash
            raise ValueError(
                "judge_tool_rendering: compact applies to prompt_family: agentjudge only "
                f"(this pipeline has prompt_family: {self.prompt_family})"
            )
        return self

    @property
    def scoring_modes(self) -> list[Literal["paper", "strict"]]:
        return ["paper", "strict"] if self.scoring == "both" else [self.scoring]


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model whose keys are written at ``loc`` of a pipeline (``()``: the pipeline itself;
    ``("judges", 0)``: a model entry), found by walking the field annotations; None when it is not one."""
    model: Any = Pipeline
    for part in loc:
        if isinstance(part, int):
            continue  # an item of the list the previous key named: its type was taken from the list already
        field = (
            model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        )
        if field is None:
            return None
        model = next(_models_in(field.annotation), None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation holds (``list[ModelSettings] | None`` → ModelSettings)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in get_args(annotation):
        yield from _models_in(arg)


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """`` (did you mean `difficulties`?)`` for a misspelt key, from the keys valid at that place."""
    model = _model_at(tuple(loc[:-1]))
    if model is None or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1, cutoff=0.7)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _yaml_error(path: Path, exc: yaml.YAMLError) -> PipelineError:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc)
    return PipelineError(f"{where}: invalid YAML: {problem}")


def generate_hint(dataset: Path) -> str:
    """A copy-pasteable ``generate`` command that writes ``dataset`` (path relative to the working folder).

    The size is spelled out: without ``--size`` generate writes the mini split, which in a folder named
    ``full`` would overwrite the committed full manifest with a mini one.
    """
    folder = dataset.parent
    try:
        shown = folder.relative_to(Path.cwd())
    except ValueError:
        shown = folder
    size = "mini" if folder.name == "mini" else "full"
    return f"agentjudge generate --size {size} --seed 0 --out {shown}"


def parse_pipeline(data: Any, path: Path) -> Pipeline:
    """Validate already-parsed YAML; errors name ``path`` and each offending key."""
    if not isinstance(data, dict):
        raise PipelineError(f"{path}: the top level must be a mapping of keys, got {type(data).__name__}")
    try:
        pipeline = Pipeline.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            if err["type"] == "extra_forbidden" and err["loc"][-1] == "api_key":  # never its value
                msg += " (keys are read from the environment: name the variable with api_key_env)"
            elif err["type"] == "extra_forbidden":
                msg += _did_you_mean(err["loc"])
            msg = msg.removeprefix("Value error, ")  # pydantic's wording around our own messages
            lines.append(f"{path}: key `{_loc(err['loc'])}`: {msg}")
        raise PipelineError("\n".join(lines)) from None
    base = path.parent
    dataset = (base / pipeline.dataset).resolve()
    if not dataset.is_file():
        written = "" if dataset.name == "records.jsonl" else ", which writes records.jsonl there"
        raise PipelineError(
            f"{path}: key `dataset`: file not found: {dataset} (build it with "
            f"`{generate_hint(dataset)}`{written}, or fix the path: it is relative to the pipeline file's "
            "folder)"
        )
    updates: dict[str, Any] = {"dataset": dataset}
    if pipeline.cache is not None:
        updates["cache"] = (base / pipeline.cache).resolve()
    if pipeline.sampling is not None and pipeline.sampling.prior_run is not None:
        prior = (base / pipeline.sampling.prior_run).resolve()
        updates["sampling"] = pipeline.sampling.model_copy(update={"prior_run": prior})
    pipeline = pipeline.model_copy(update=updates)
    from agentjudge.registry.model_strings import add_import_folders, add_plugin_folders

    add_plugin_folders(base)  # module:factory plugins may sit next to the pipeline file
    add_import_folders(base)  # imported/ models replay the imported.sqlite next to it (agentjudge import)
    check_models(pipeline, str(path))
    return pipeline


def batch_problem(model: str) -> str | None:
    """Why ``batch: true`` cannot apply to ``model`` (no provider batch API litellm drives), or None."""
    from agentjudge.models.batch import PROVIDER_LIMITS, batch_provider
    from agentjudge.registry.model_strings import model_kind

    if model_kind(model) == "litellm" and batch_provider(model) is not None:
        return None
    return (
        f"batch mode needs a provider with a batch API litellm drives ({', '.join(sorted(PROVIDER_LIMITS))})"
    )


def check_models(pipeline: Pipeline, where: str) -> None:
    """Resolve every model string by the registry's rules without calling anything."""
    from agentjudge.registry.model_strings import model_problem

    problems = []
    for role in ("generators", "judges"):
        for i, settings in enumerate(getattr(pipeline, role)):
            problem = model_problem(settings.model, "generator" if role == "generators" else "judge")
            if problem:
                problems.append(f"{where}: key `{role}[{i}].model` ({settings.model!r}): {problem}")
            elif settings.batch:
                problem = batch_problem(settings.model)
                if problem:
                    problems.append(f"{where}: key `{role}[{i}].batch` ({settings.model!r}): {problem}")
    if problems:
        raise PipelineError("\n".join(problems))


def load_pipeline(path: Path) -> Pipeline:
    """Read and validate a pipeline YAML; raise ``PipelineError`` for anything that would stop a run."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelineError(f"{path}: cannot read pipeline file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise PipelineError(
            f"{path}: line {line}: not UTF-8 text (byte {exc.start}); a pipeline is a YAML text file"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    return parse_pipeline(data, path)


def _cli_model(
    pipeline: Pipeline, model: str, template: list[ModelSettings], api_base: str | None
) -> ModelSettings:
    """A model named on the command line: it inherits the settings of the pipeline's first model of the same
    role (``_INHERITED_FIELDS``: concurrency, temperature, max_tokens, ...), and never more concurrency than
    the pipeline's ``concurrency``: swapping the model must not change how hard a server is driven."""
    inherited = template[0].model_dump(include=set(_INHERITED_FIELDS)) if template else {}
    inherited["concurrency"] = min(inherited.get("concurrency", 8), pipeline.concurrency)
    return ModelSettings(model=model, api_base=api_base, **inherited)


def override_models(
    pipeline: Pipeline,
    judges: list[str] | None,
    generators: list[str] | None,
    api_base: str | None,
    add_judges: list[str] | None = None,
) -> Pipeline:
    """Apply ``--judge``/``--generator`` (which replace the pipeline's lists), ``--add-judge`` (appended to
    the judges, after ``--judge`` if both are given) and ``--api-base`` (for the models of those flags).
    A command-line model inherits settings as ``_cli_model`` says."""
    updates: dict[str, Any] = {}
    if judges:
        updates["judges"] = [_cli_model(pipeline, m, pipeline.judges, api_base) for m in judges]
    if generators:
        updates["generators"] = [_cli_model(pipeline, m, pipeline.generators, api_base) for m in generators]
    if add_judges:
        kept = updates.get("judges", pipeline.judges)
        names = {j.display_name for j in kept}
        problems = [f"--add-judge {m}: already a judge of the pipeline" for m in add_judges if m in names]
        repeated = sorted({m for m in add_judges if add_judges.count(m) > 1})
        problems += [f"--add-judge {m}: given more than once" for m in repeated]
        if problems:
            raise PipelineError("command line: " + "; ".join(problems))
        updates["judges"] = [*kept, *(_cli_model(pipeline, m, pipeline.judges, api_base) for m in add_judges)]
    if not updates:
        return pipeline
    try:
        new = Pipeline.model_validate({**pipeline.model_dump(), **updates})
    except ValidationError as exc:
        raise PipelineError(
            "command line: " + "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        ) from None
    check_models(new, "command line")
    return new


def flag_value(key: str, flag: str, value: Any) -> Any:
    """A command-line flag that sets pipeline key ``key`` (``--max-cost`` → ``max_cost_usd``), validated by
    that key's own rule (negative, NaN or infinite refused alike); ``PipelineError`` names the flag."""
    field = Pipeline.model_fields[key]
    rule: Any = Annotated[field.annotation, *field.metadata]  # the annotation with its ge/gt/...
    adapter: TypeAdapter[Any] = TypeAdapter(rule, config=ConfigDict(allow_inf_nan=False))
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"]
        raise PipelineError(
            f"{flag} {value}: {message[:1].lower()}{message[1:]} (the rule of the pipeline key `{key}`)"
        ) from None


_DigestKey = tuple[str, int, int, int]
_DIGESTS: dict[_DigestKey, str] = {}
_PREFETCHED: dict[_DigestKey, tuple[threading.Thread, dict[str, str]]] = {}


def _digest_key(path: Path) -> _DigestKey:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks of 1 MiB (OSError when it cannot be read)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read once while its size, mtime and inode stay the same, until
    ``forget_digests``. One ``agentjudge run`` asks for the dataset's several times (the no-op check, the
    store's config hash, the caches of ``runner/resume_cache.py``; each read of the full dataset costs ~50
    ms); it forgets them when it starts, since an mtime is too coarse to notice a same-size edit made a
    moment later by the same process (tests do that). A hash ``prefetch_digest`` started for the same
    size, mtime and inode is waited for rather than computed again."""
    key = _digest_key(path)
    if key not in _DIGESTS:
        thread, box = _PREFETCHED.pop(key, (None, {}))
        if thread is not None:
            thread.join()
        _DIGESTS[key] = box.get("sha256") or sha256_file(path)  # (a failed read is read again here)
        for stale in [k for k in _PREFETCHED if k[0] == key[0]]:  # the file changed since its prefetch:
            _PREFETCHED.pop(stale)[0].join()  # that hash is not wanted, and no thread may outlive a fork
    return _DIGESTS[key]


def prefetch_digest(path: Path) -> None:
    """Start hashing ``path`` in a thread, for a ``file_digest`` asked soon after: reading and hashing
    release the GIL, so on a second core the dataset's hash (~85 ms for the full dataset) overlaps the
    imports and parsing before it instead of adding to them. Nothing when the file cannot be read (its
    ``file_digest`` says why). The thread is joined by ``file_digest`` or ``forget_digests`` (before
    anything forks)."""
    try:
        key = _digest_key(path)
    except OSError:
        return
    if key in _DIGESTS or key in _PREFETCHED:
        return
    box: dict[str, str] = {}

    def work() -> None:
        with contextlib.suppress(OSError):
            box["sha256"] = sha256_file(path)

    thread = threading.Thread(target=work, name="dataset-sha256", daemon=True)
    thread.start()
    _PREFETCHED[key] = (thread, box)


def forget_digests() -> None:
    for thread, _ in _PREFETCHED.values():
        thread.join()
    _PREFETCHED.clear()
    _DIGESTS.clear()


def hashed_config(pipeline: Pipeline) -> dict[str, Any]:
    """The part of the resolved pipeline that results depend on (see ``_COSMETIC_*``).

    The dataset enters by content (sha256), not by path, so moving the project folder keeps the hash
    while editing a record changes it.
    """
    data = pipeline.model_dump(mode="json", exclude=set(_COSMETIC_PIPELINE_FIELDS))
    data["dataset"] = {"sha256": file_digest(pipeline.dataset)}
    if data["prompt_family"] == "agentjudge":
        del data["prompt_family"]  # the default: run folders made before the key existed still resume
    if data["judge_tool_rendering"] == "full":
        del data["judge_tool_rendering"]  # likewise
    for role in ("generators", "judges"):
        for entry in data[role]:
            for key in _COSMETIC_MODEL_FIELDS:
                entry.pop(key, None)
            for key, default in _LATER_MODEL_DEFAULTS.items():  # keeps older runs' hashes valid
                if entry.get(key) == default:
                    entry.pop(key)
    return data


def config_hash(pipeline: Pipeline) -> str:
    """sha256 over ``hashed_config`` serialised canonically (sorted keys, no whitespace)."""
    blob = json.dumps(hashed_config(pipeline), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def with_target(pipeline: Pipeline, target_ci_pp: float) -> Pipeline:
    """``--target-ci PP``: the pipeline's ``sampling`` with this target (a sampling of its own when it has
    none); a target that is not a number above 0 and at most 100 is a PipelineError naming the flag."""
    current = pipeline.sampling.model_dump() if pipeline.sampling is not None else {}
    try:
        sampling = Sampling.model_validate({**current, "target_ci_pp": target_ci_pp})
    except ValidationError as exc:
        problem = "; ".join(e["msg"] for e in exc.errors())
        raise PipelineError(  # worded as ``flag_value`` words the other numeric flags
            f"--target-ci {target_ci_pp}: {problem[:1].lower()}{problem[1:]} "
            "(the rule of the pipeline key `sampling.target_ci_pp`)"
        ) from None
    return pipeline.model_copy(update={"sampling": sampling})
