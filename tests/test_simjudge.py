"""Simulated judges: each planted rule does what simjudge_profiles.yaml says, seeded and labelled."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from scipy import stats

from agentjudge.judges.simjudge import Draws, SimulatedJudge, load_profiles, planted_verdicts
from agentjudge.models.client import ModelClient
from agentjudge.registry.factory import ModelResolutionError, make_generator, make_judge
from agentjudge.registry.model_strings import model_kind, model_problem
from agentjudge.types import GTStep, JudgeRequest, ModelSettings, PromptVariant, Task, ToolCall


def _profile(**update: object):  # type: ignore[no-untyped-def]
    return load_profiles()["noiseless"].model_copy(update=update)


def _run(p, truth, *, gt_shown=False, shown=0.0, cot=False, free=False, d05=False, temp=np.nan, d=None):  # type: ignore[no-untyped-def]
    truth = np.asarray(truth, dtype=float)
    n = truth.size
    d = d or Draws(*(np.full(n, 0.5) for _ in range(5)), np.zeros(n))
    return planted_verdicts(
        p,
        truth,
        np.zeros(n, dtype=int),
        np.zeros(n, dtype=int),
        np.zeros(n),
        np.full(n, gt_shown),
        np.full(n, shown),
        np.full(n, cot),
        np.full(n, free),
        np.full(n, d05),
        np.full(n, temp),
        d,
    )


def _errors(rate: float) -> dict[str, dict[str, float]]:
    return {m: dict.fromkeys(("easy", "medium", "hard"), rate) for m in ("tool", "param", "seq", "cov")}


def test_noiseless_is_the_truth() -> None:
    assert _run(_profile(), [0.0, 0.5, 1.0]).tolist() == [0.0, 0.5, 1.0]


def test_wrong_verdicts_move_one_level_in_the_planted_direction() -> None:
    # every verdict wrong (draw 0.5 < error 0.9); lenient_share 1 -> up where possible, else down
    p = _profile(error=_errors(0.9), lenient_share=1.0)
    assert _run(p, [0.0, 0.5, 1.0]).tolist() == [0.5, 1.0, 0.5]
    p = _profile(error=_errors(0.9), lenient_share=0.0)
    assert _run(p, [0.0, 0.5, 1.0]).tolist() == [0.5, 0.0, 0.5]


def test_gt_gain_cot_freeform_and_temperature_scale_the_error_rate() -> None:
    # base error 0.6 > draw 0.5: wrong; a GT gain of 0.5 makes it 0.3 < 0.5: right
    p = _profile(error=_errors(0.6), gt_gain=0.5, cot_gain=0.5, freeform_penalty=1.0, temperature_noise=0.3)
    assert _run(p, [1.0]).tolist() == [0.5]
    assert _run(p, [1.0], gt_shown=True, shown=1.0).tolist() == [1.0]
    assert _run(p, [1.0], cot=True).tolist() == [1.0]
    q = _profile(error=_errors(0.3), freeform_penalty=1.0, temperature_noise=0.3)
    assert _run(q, [1.0]).tolist() == [1.0]  # 0.3 < 0.5
    assert _run(q, [1.0], free=True).tolist() == [0.5]  # 0.6 > 0.5 (freeform_sd 0: no noise)
    assert _run(q, [1.0], temp=1.0).tolist() == [0.5]  # 0.3 + 0.3 * 1.0 = 0.6 > 0.5


def test_anchoring_hedging_and_parse_failures() -> None:
    p = _profile(anchoring=0.6)  # anchor draw 0.5 < 0.6: the verdict is the shown GT's level
    assert _run(p, [1.0], gt_shown=True, shown=0.0).tolist() == [0.0]
    assert _run(p, [1.0], gt_shown=False, shown=0.0).tolist() == [1.0]
    h = _profile(anchoring=0.6, hedge_05=0.6)  # anchored to 0.0 (wrong), then hedged to 0.5 by the prompt
    assert _run(h, [1.0], gt_shown=True, shown=0.0).tolist() == [0.0]
    assert _run(h, [1.0], gt_shown=True, shown=0.0, d05=True).tolist() == [0.5]
    ok = _profile(hedge_05=0.6)  # correct verdicts hedge with hedge_05 / 4 = 0.15 < draw 0.5: kept
    assert _run(ok, [1.0], d05=True).tolist() == [1.0]
    f = _profile(parse_failure={"json": 0.6, "freeform": 0.0})
    assert np.isnan(_run(f, [1.0])).all()
    assert _run(f, [1.0], free=True).tolist() == [1.0]


def test_planted_error_rate_is_realised() -> None:
    p = _profile(error=_errors(0.2), item_sd=0.0)
    n = 20_000
    v = _run(p, np.ones(n), d=Draws.sample(np.random.default_rng(3), n))
    wrong = int((v != 1.0).sum())
    assert stats.binomtest(wrong, n, 0.2).pvalue > 0.001


def _request(condition: str, gt: bool = True, variant: PromptVariant | None = None) -> JudgeRequest:
    task = Task(
        record_id="itsm-0001:hard",
        base_id="itsm-0001",
        difficulty="hard",
        query="q",
        system_prompt="",
        tools=[],
    )
    call = ToolCall(name="get_ticket", arguments={"id": "T-1"})
    return JudgeRequest(
        task=task,
        calls=[call],
        gt=[GTStep(call=call, output={}, depends_on=[])] if gt else None,
        condition=condition,  # type: ignore[arg-type]
        variant=variant or PromptVariant(),
        reference={
            "strict": {"tool": 1.0, "param": 0.6, "seq": 0.2, "cov": 0.0},
            "paper": {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0},
        },
    )


def test_judge_is_seeded_and_reads_the_strict_reference() -> None:
    judge = make_judge(ModelSettings(model="simjudge/noiseless"), ModelClient())
    assert isinstance(judge, SimulatedJudge)
    res = asyncio.run(judge(_request("with_gt")))
    assert res.parse_ok and res.verdicts == {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 0.0}
    careful = make_judge(ModelSettings(model="simjudge/careful"), ModelClient())
    a = asyncio.run(careful(_request("without_gt", gt=False)))
    b = asyncio.run(careful(_request("without_gt", gt=False)))
    assert a.verdicts == b.verdicts and "simulated" in a.raw_output


def test_registry_and_kinds() -> None:
    assert model_kind("simjudge/careful") == "simjudge"
    assert model_problem("simjudge/careful", "judge") is None
    assert "not generators" in (model_problem("simjudge/careful", "generator") or "")
    assert "unknown" in (model_problem("simjudge/nope", "judge") or "")
    with pytest.raises(ModelResolutionError, match="known: anchored, careful, noiseless"):
        make_judge(ModelSettings(model="simjudge/nope"), ModelClient())
    with pytest.raises(ModelResolutionError, match="not a generator"):
        make_generator(ModelSettings(model="simjudge/careful"), ModelClient())


def test_meta_marks_simulated_judges() -> None:
    from agentjudge.runner.meta import model_info

    info = model_info([ModelSettings(model="simjudge/careful")])
    assert info["simjudge/careful"]["kind"] == "simjudge" and info["simjudge/careful"]["simulated"] is True
