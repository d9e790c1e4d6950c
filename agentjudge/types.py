"""The whole vocabulary of agentjudge on one screen.

Data flows one way: Record -> Prediction -> Score -> Judgment -> analysis tables.
Every file format is a pydantic model with ``extra="forbid"`` so a typo in a file is an error, not a
silently ignored field. The two seams where users plug things in are small async protocols:
a ``Generator`` turns a task into tool calls, a ``Judge`` turns a graded task into verdicts.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentjudge.limits import MAX_CONCURRENCY, MAX_RETRIES, MAX_TOKENS, MAX_TURNS

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")
Topology = Literal["linear", "fan_out", "fan_in", "diamond", "optional_enrichment", "loop_like"]
TOPOLOGIES: tuple[Topology, ...] = (
    "linear",
    "fan_out",
    "fan_in",
    "diamond",
    "optional_enrichment",
    "loop_like",
)
Metric = Literal["tool", "param", "seq", "cov"]
METRICS: tuple[Metric, ...] = ("tool", "param", "seq", "cov")
Condition = Literal["with_gt", "without_gt", "swapped_gt", "trajectory_with_gt", "trajectory_without_gt"]
CONDITIONS: tuple[Condition, ...] = ("with_gt", "without_gt", "swapped_gt")
# The judge sees the interactive trajectory (calls, outputs, errors, answer) and gives an outcome verdict too.
TRAJECTORY_CONDITIONS: tuple[Condition, ...] = ("trajectory_with_gt", "trajectory_without_gt")
ScoringMode = Literal["paper", "strict"]
PromptFamily = Literal["paper", "agentjudge"]  # judge prompts: the published ones or ours
PROMPT_FAMILIES: tuple[PromptFamily, ...] = ("paper", "agentjudge")
# our generator's records; tasks people wrote elsewhere (BFCL); an agent's recorded conversations (traces)
Source = Literal["synthetic", "imported", "traces"]
VERDICT_LEVELS: tuple[float, ...] = (0.0, 0.5, 1.0)
Generation = Literal["single_shot", "interactive"]  # plan blind (published) / act on tool outputs
# why an interactive episode ended; "ended": a recorded conversation stops without a final message
StopReason = Literal["answered", "max_turns", "unparseable", "ended"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolSchema(Strict):
    """One tool in the function-calling convention; ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] = Field(default_factory=dict)  # JSON Schema of the output (our extension)


class ToolCall(Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class GTStep(Strict):
    """One executed step of the ground-truth trace."""

    call: ToolCall
    output: Any
    depends_on: list[int] = Field(default_factory=list)  # indices of earlier steps
    description: str = ""
    # Imported records: every accepted value per argument, in the source's own nesting ("" = may be omitted)
    accepted: dict[str, list[Any]] | None = None


class GateFinding(Strict):
    gate: Literal["gate1", "gate2"]
    code: str  # stable reason code, e.g. "arg_schema", "ungrounded_value", "topology_shape"
    difficulty: Difficulty | None = None
    detail: str


class ValidationReport(Strict):
    gates_run: list[str] = Field(default_factory=list)
    findings: list[GateFinding] = Field(default_factory=list)
    regenerations: int = 0

    @property
    def passed(self) -> bool:
        return not self.findings


class Record(Strict):
    """One base scenario, holding its three difficulty variants (they share tools and GT)."""

    id: str
    domain: str
    scenario: str
    topology: Topology
    queries: dict[Difficulty, str]
    rewrite_status: dict[Difficulty, Literal["OK", "FAILED"]] = Field(default_factory=dict)
    system_prompt: str
    tools: list[ToolSchema]
    gt: list[GTStep]
    condition_holds: bool | None = None  # optional_enrichment: whether the extra step is required
    seed: int | None = None
    version: str | None = None
    validation: ValidationReport | None = None
    source: Source = "synthetic"
    origin: str | None = None  # imported records: where from, e.g. "bfcl/multiple"
    human_query: bool = False  # the only query is a person's own words (no easy/medium/hard rewrites)
    # False: nobody gave the expected calls (an agent's trace imported without them). ``gt`` is then empty,
    # nothing is scored, no reference exists, and judges grade it without GT only (an empty ``gt`` with
    # ``gt_known`` True is a GT that expects no call)
    gt_known: bool = True
    # published-layout fields kept as read (spelling the model does not hold: JSON-string tool_calls or
    # arguments, "type": "dict", assistant text): rundir/records.py writes them back when still equivalent
    source_layout: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _no_gt_is_empty(self) -> Record:
        if not self.gt_known and self.gt:
            raise ValueError("gt_known is false, yet the record has GT steps")
        return self

    def record_id(self, difficulty: Difficulty) -> str:
        return f"{self.id}:{difficulty}"

    def task(self, difficulty: Difficulty) -> Task:
        """What a generator sees of this record at ``difficulty`` (KeyError when it has no query there)."""
        query = self.queries[difficulty]
        return Task(record_id=self.record_id(difficulty), base_id=self.id, difficulty=difficulty, query=query,
                    system_prompt=self.system_prompt, tools=self.tools)  # fmt: skip

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(u, v) for v, step in enumerate(self.gt) for u in step.depends_on]

    @property
    def expected_calls(self) -> list[ToolCall]:
        return [step.call for step in self.gt]


class Task(Strict):
    """What a generator sees: one record at one difficulty."""

    record_id: str
    base_id: str
    difficulty: Difficulty
    query: str
    system_prompt: str
    tools: list[ToolSchema]


class Usage(Strict):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the provider's prefix cache
    cache_saved_usd: float = 0.0  # list price of those tokens minus what they cost
    cached: bool = False
    # False when some call behind this usage had no known price (litellm has none and the pipeline gives
    # none: a self-hosted model) or a request that may have been billed unseen (it timed out, or came back
    # unreadable or empty); ``cost_usd`` then counts only the priced part, and the predictions file
    # says null, not a $0 that looks known. True for a cache hit (nothing was spent: a known $0) and for
    # in-process models. The default keeps results stored before the field as they were, and costs nothing
    # in the compact store (``exclude_defaults``).
    cost_known: bool = True

    @property
    def known_cost_usd(self) -> float | None:
        """``cost_usd`` when it is the whole cost, else None: what a file's ``cost_usd`` cell holds (null
        for unknown, never a $0 or a part that looks like the whole)."""
        return self.cost_usd if self.cost_known else None

    def plus(self, more: Usage, first: bool = False) -> Usage:
        """Two calls' usage summed (re-asks, interactive turns); ``cached`` only when every call was a
        cache hit (``first``: ``self`` is the empty start, so ``more`` alone decides); ``cost_known`` only
        when every call's price was known (``first`` changes nothing: the empty start's is True)."""
        return Usage(
            prompt_tokens=self.prompt_tokens + more.prompt_tokens,
            completion_tokens=self.completion_tokens + more.completion_tokens,
            cost_usd=self.cost_usd + more.cost_usd,
            cached_prompt_tokens=self.cached_prompt_tokens + more.cached_prompt_tokens,
            cache_saved_usd=self.cache_saved_usd + more.cache_saved_usd,
            cached=more.cached if first else (self.cached and more.cached),
            cost_known=self.cost_known and more.cost_known,
        )


class ToolStep(Strict):
    """One executed call of an interactive episode: the tool's output, or its error message."""

    turn: int
    call: ToolCall
    output: Any = None
    error: str | None = None
    executed: bool = True  # False: the arguments were not a JSON object, so nothing was run


class Trajectory(Strict):
    """An interactive episode: the messages exchanged, the executed steps, and why it ended."""

    messages: list[dict[str, Any]]
    steps: list[ToolStep]
    turns: int
    stop_reason: StopReason
    answer: str = ""  # the agent's final text


class Prediction(Strict):
    record_id: str
    base_id: str
    difficulty: Difficulty
    generator: str
    trial: int = 0
    calls: list[ToolCall] | None  # None exactly when ``error`` is set: a failure is never an empty list
    raw_output: str = ""
    error: str | None = None
    # the failure's kind and the requests the model client sent for it, as fields (models/failures.py)
    error_kind: str | None = None
    error_attempts: int | None = None
    simulated: bool = False
    usage: Usage = Field(default_factory=Usage)
    trajectory: Trajectory | None = None  # interactive generation only; ``calls`` = every call made
    # Imported generators only: the source released no output for this task (why); not a failure of a run
    # (nothing to retry), never judged or scored, its row in predictions.parquet says why in ``error``
    absent: str | None = None

    @classmethod
    def for_task(cls, task: Task, generator: str, trial: int, **fields: Any) -> Prediction:
        """A prediction carrying the task's coordinates; ``fields`` are the outcome (calls or error, ...)."""
        return cls(
            record_id=task.record_id,
            base_id=task.base_id,
            difficulty=task.difficulty,
            generator=generator,
            trial=trial,
            **fields,
        )


class Score(Strict):
    record_id: str
    generator: str
    trial: int
    scoring_mode: ScoringMode
    p_tool: float
    p_param: float
    p_seq: float
    p_cov: float
    p_value: float
    p_seq_dag: float
    state_match: bool | None = None  # None when the record has no executable environment
    writes_done: float | None = None  # share of the GT's state-changing calls done exactly (None: no writes)


class ModelSettings(Strict):
    """How to call one model. Keys come from the environment (``api_key_env``, ``headers_env``: names).

    ``model`` is a litellm string ("openai/gpt-4o-mini", "hosted_vllm/x", "ollama/llama3"), "sim/<profile>",
    "baseline/<name>", a registered entry-point name, or "package.module:factory". No number may be NaN
    or infinite, nor a count or price negative: the pipeline is refused naming the key.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str
    name: str | None = None  # display name in results; defaults to ``model``
    api_base: str | None = None
    # a fleet: several endpoints serving this same model (e.g. vLLM replicas); instead of api_base
    api_bases: list[str] | None = Field(default=None, min_length=1)
    # per endpoint of api_bases
    endpoint_concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    api_key_env: str | None = None
    headers_env: dict[str, str] = Field(default_factory=dict)  # HTTP header -> NAME of the env var holding it
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=MAX_RETRIES)
    concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    drop_params: bool = False
    native_tools: bool = True  # generators: function calling; False = ask for a raw JSON array of calls
    generation: Generation = "single_shot"  # generators: interactive = calls executed, outputs shown
    # interactive: model turns before the episode is cut off
    max_turns: int = Field(default=12, ge=1, le=MAX_TURNS)
    tier: int | None = None  # capability tier (1 = strongest) for the kappa-vs-tier-gap analysis
    # send the answer's JSON Schema as response_format: true/"json_schema" (OpenAI, vLLM, Ollama, llama.cpp's
    # llama-server) or "json_object" ({"type": "json_object", "schema": ...}: llama-cpp-python's server)
    structured_output: bool | Literal["json_schema", "json_object"] = False
    input_cost_per_token: float | None = Field(default=None, ge=0)  # USD; overrides litellm's price (needed
    output_cost_per_token: float | None = Field(
        default=None, ge=0
    )  # for --max-cost on models it cannot price)
    extra: dict[str, Any] = Field(default_factory=dict)  # passed through to litellm.acompletion
    batch: bool = False  # send through the provider's batch API (OpenAI, Azure OpenAI; runner.batches)

    @model_validator(mode="after")
    def _consistent(self) -> ModelSettings:
        """A pipeline price replaces litellm's; half of one would price the other half at 0 as if known.
        One endpoint or a fleet: both at once would leave it unclear where calls go."""
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ValueError(
                f"{self.model}: set both input_cost_per_token and output_cost_per_token, or neither"
            )
        if self.api_bases is not None and self.api_base is not None:
            raise ValueError(f"{self.model}: set api_base (one endpoint) or api_bases (a fleet), not both")
        if self.api_bases is not None and len(set(self.api_bases)) != len(self.api_bases):
            raise ValueError(f"{self.model}: api_bases lists an endpoint twice")
        if self.batch and self.api_bases is not None:
            raise ValueError(
                f"{self.model}: batch mode sends to one provider endpoint; drop api_bases or batch"
            )
        return self

    @property
    def display_name(self) -> str:
        return self.name or self.model


class PromptVariant(Strict):
    """Everything about how a judge is asked, apart from the GT condition."""

    prompt_format: Literal["json", "freeform"] = "json"
    cot: bool = False
    default_mode: Literal["1.0", "0.5"] = "1.0"

    @property
    def key(self) -> str:
        return f"{self.prompt_format}-cot{int(self.cot)}-d{self.default_mode}"


class JudgeRequest(Strict):
    task: Task
    calls: list[ToolCall]
    gt: list[GTStep] | None  # None for without_gt; another record's GT for swapped_gt
    # that GT's record as published (`expected_responses`, for the paper prompt family); None: built from gt
    gt_responses: list[dict[str, Any]] | None = None
    condition: Condition
    variant: PromptVariant = Field(default_factory=PromptVariant)
    temperature: float | None = None
    trial: int = 0
    # Only judges with needs_reference (baseline/ceiling, simjudge/*) read this; LLM judges never see it.
    reference: dict[ScoringMode, dict[Metric, float]] | None = None
    trajectory: Trajectory | None = None  # trajectory conditions: what the judge is shown
    outcome_reference: bool | None = None  # oracle baselines only: state_match of the prediction
    # the display name of the generator whose calls these are, set only for judges that replay recorded
    # verdicts (``needs_generator``: imported/*), to find the verdict their source gave to this very output
    generator: str | None = None


class JudgeResult(Strict):
    # JSON text keeps NaN and infinities as Python's json module spells them (pydantic's default is null,
    # which would read back as "unparsed"): the offline runner stores this text (runner.grid)
    model_config = ConfigDict(ser_json_inf_nan="constants")  # merged with Strict's extra="forbid"

    verdicts: dict[Metric, float | None]  # None = this metric could not be parsed
    rationales: dict[str, str] = Field(default_factory=dict)  # per metric, plus "overall"
    parse_ok: bool
    raw_output: str = ""
    error: str | None = None  # transport / provider failure (distinct from a parse failure)
    # the failure's kind and the requests the model client sent for it, as fields (models/failures.py)
    error_kind: str | None = None
    error_attempts: int | None = None
    usage: Usage = Field(default_factory=Usage)
    # Oracle baselines only: verdicts that differ by scoring mode (the reference differs by mode).
    mode_verdicts: dict[ScoringMode, dict[Metric, float]] | None = None
    outcome: float | None = None  # trajectory conditions: "was the request accomplished?" (None: unparsed)


@runtime_checkable
class Generator(Protocol):
    name: str

    async def __call__(self, task: Task, trial: int) -> Prediction: ...


@runtime_checkable
class Judge(Protocol):
    name: str

    async def __call__(self, request: JudgeRequest) -> JudgeResult: ...
