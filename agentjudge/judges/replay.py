"""``imported/<key>`` judges (and ``imported-baseline/<key>``: a publication's judge-specific baseline, which
the report shows apart): verdicts released by a publication, replayed from ``imported.sqlite``
(``generators/replay.py`` describes the file). Each request is answered with the verdict the publication
gave to this generator's output for this task under this condition (``JudgeRequest.generator`` says
whose output it is). A metric the source left without a value is a verdict of None, and a judgment the
source lost (its judge call failed there) has every metric None: both are counted as unparseable answers
of that judge with the source's reason (``failure``), never defaulted, and never retried (the source will
not change)."""

from __future__ import annotations

import json

from agentjudge.generators.replay import ImportedSource
from agentjudge.types import METRICS, JudgeRequest, JudgeResult, ModelSettings


class ImportedJudge:
    needs_reference = False
    needs_generator = True  # the runner fills JudgeRequest.generator for it

    def __init__(self, settings: ModelSettings, source: ImportedSource) -> None:
        self.name = settings.display_name
        self.source = source

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        row = self.source.verdict(
            self.name, request.generator or "", request.task.record_id, request.condition
        )
        if row is None:
            return _unread(f"imported: the source has no verdict of {self.name} for this output")
        verdicts, rationale, raw, failure = row
        if verdicts is None:  # the source lost this judgment (its judge call failed there)
            return _unread(f"imported: {failure or 'no verdict in the source'}", raw)
        values = json.loads(verdicts)
        missing = sorted(m for m, v in values.items() if v is None)
        rationales = {"overall": rationale} if rationale else {}
        if missing:  # the source's reason when the import recorded one
            why = failure or f"the source gives no value for {', '.join(missing)}"
            rationales["_parse_problems"] = f"imported: {why}"
        return JudgeResult(verdicts=values, rationales=rationales, parse_ok=not missing, raw_output=raw)


def _unread(why: str, raw: str = "") -> JudgeResult:
    """A judgment the source does not have: every metric a failure (counted unparseable, never defaulted)."""
    return JudgeResult(
        verdicts=dict.fromkeys(METRICS), rationales={"_parse_problems": why}, parse_ok=False, raw_output=raw
    )
