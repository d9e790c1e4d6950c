"""Mutation check: does the test suite catch the bugs that matter?

Each mutation below is one small, realistic bug (a wrong column, a forgotten condition, the biased formula
the spec warns about) written as exact edits of the source: the original snippet and its replacement. The
script copies the repository to a temporary folder, applies one mutation at a time, runs the tests that
should notice (or the whole default suite with ``--full``), restores the file, and prints a table:
mutation -> caught / SURVIVED -> by which tests. A mutation whose original snippet is no longer in the
source is reported as ``stale`` (never skipped silently): update its snippet when the module changes, so
the list stays a check of the current code. Add a mutation whenever a bug slips through review.

    python bench/mutate.py                 # every mutation, its selected tests (a few minutes)
    python bench/mutate.py --full          # the whole default suite per mutation (-x: first failure)
    python bench/mutate.py --only kappa-unsnapped --only gate2-unanchored-any-value
    python bench/mutate.py --list          # names, files and expected killers only

Exit code 0 when every mutation is caught, 1 when one survived, is stale or timed out, 2 when the
unmutated copy already fails its tests (then nothing can be concluded).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.egg-info", "runs", "*.sqlite*"
)


@dataclass(frozen=True)
class Edit:
    file: str  # path relative to the repository root
    original: str  # must occur exactly once in the file
    replacement: str


@dataclass(frozen=True)
class Mutation:
    name: str
    bug: str  # what a user of the benchmark would get wrong
    edits: tuple[Edit, ...]
    killer: str  # the test written to catch it (pytest node id)
    tests: tuple[str, ...]  # what the default (fast) mode runs


SCORER_TESTS = ("tests/test_scoring.py", "tests/test_scoring_reference.py")
STATS_TESTS = ("tests/test_stats.py", "tests/test_stats_reference.py")

MUTATIONS: tuple[Mutation, ...] = (
    # ---- the three that once passed the whole suite (issue 17)
    Mutation(
        "bootstrap-record-clusters",
        "CIs resample records instead of base scenarios: every CI in the report too narrow",
        (
            Edit(
                "analysis/_context.py",
                'boot = ClusterBootstrap(\n        data["base_id"].cat.categories,',
                'boot = ClusterBootstrap(\n        data["record_id"].cat.categories,',
            ),
            Edit(
                "agentjudge/stats/bootstrap.py",
                'cluster_col: str = "base_id",',
                'cluster_col: str = "record_id",',
            ),
        ),
        "tests/test_stats_reference.py::test_report_context_resamples_base_scenarios",
        (*STATS_TESTS, "tests/test_analysis.py"),
    ),
    Mutation(
        "bootstrap-record-clusters-report",
        "the same bug confined to the report: the stats module is right, the analyses pass record ids",
        (
            Edit(
                "analysis/_context.py",
                'boot = ClusterBootstrap(\n        data["base_id"].cat.categories,',
                'boot = ClusterBootstrap(\n        data["record_id"].cat.categories,',
            ),
            Edit(
                "analysis/_common.py",
                "return ctx.boot.ratio(df, list(by), value)",
                'return ctx.boot.ratio(df, list(by), value, cluster_col="record_id")',
            ),
        ),
        "tests/test_stats_reference.py::test_report_context_resamples_base_scenarios",
        (*STATS_TESTS, "tests/test_analysis.py"),
    ),
    Mutation(
        "gate2-unanchored-any-value",
        "Gate 2 calls every missing value 'ungrounded' when the query has an unanchored relative date",
        (Edit("agentjudge/dataset/gates.py", "if is_date and unanchored:", "if unanchored:"),),
        "tests/test_gates.py::test_missing_plain_value_beside_unanchored_tomorrow_is_insufficient",
        ("tests/test_gates.py",),
    ),
    Mutation(
        "kappa-unsnapped",
        "κ and raw agreement on free-form verdicts without snapping: 0.8 and 1.0 count as disagreeing",
        (Edit("agentjudge/stats/agreement.py", "cat = snap(mat) * 2", "cat = mat * 2"),),
        "tests/test_stats_reference.py::test_kappa_on_continuous_verdicts_uses_snapped_categories",
        STATS_TESTS,
    ),
    # ---- query realiser (issue 37's audits)
    Mutation(
        "hard-joins-with-then",
        'hard joins its requests with "and then": an order the GT (doing an implicit look-up first) breaks',
        (
            Edit(
                "agentjudge/dataset/realiser.py",
                'return ", ".join(asks[:-1]) + ", and " + asks[-1]',
                'return ", ".join(asks[:-1]) + ", and then " + asks[-1]',
            ),
        ),
        "tests/test_rewrite.py::test_hard_states_no_order_between_its_requests",
        ("tests/test_rewrite.py",),
    ),
    Mutation(
        "condition-subject-unmapped",
        "an optional step's reason keeps the domain's noun (\"the employee\") for a record introduced"
        ' as "the owner"',
        (
            Edit(
                "agentjudge/dataset/realiser.py",
                '    if short == f"the {ref.noun}":\n        return cond',
                "    if short:\n        return cond",
            ),
        ),
        "tests/test_rewrite.py::test_a_condition_names_its_record_as_the_request_introduced_it",
        ("tests/test_rewrite.py",),
    ),
    Mutation(
        "create-links-listed",
        'a new record\'s two links listed ("for the account … and our client …"), not each with its'
        " preposition",
        (Edit("agentjudge/dataset/realiser.py", "preps.get(self.ref(k).noun, 'for')", "'for'"),),
        "tests/test_rewrite.py::test_a_new_record_with_two_links_says_how_each_attaches",
        ("tests/test_rewrite.py",),
    ),
    # ---- the world behind the queries (issue 51)
    Mutation(
        "possessive-after-chain",
        '"the supplier on purchase order PO-1 to its account buyer": "its" after a record named through '
        "another one, whose nearest noun has a buyer of its own",
        (
            Edit(
                "agentjudge/dataset/realiser.py",
                'return self.focus == r.key and r.how != "children" and r.key not in self.trailing',
                'return self.focus == r.key and r.how != "children"',
            ),
        ),
        "tests/test_world.py::test_a_possessive_after_a_chain_names_the_record_the_gt_takes",
        ("tests/test_world.py",),
    ),
    Mutation(
        "update-ignores-lifecycle",
        "an update picks any other value of a lifecycle field: paid -> reported, false positive -> contained",
        (
            Edit(
                "agentjudge/dataset/_calls.py",
                '    if f.gen == "enum" and f.next and avoid:',
                '    if f.gen == "enum" and f.next and not avoid:',
            ),
        ),
        "tests/test_world.py::test_the_gt_of_every_domain_follows_its_rules",
        ("tests/test_world.py",),
    ),
    Mutation(
        "world-references-disagree",
        "an alert's owner drawn apart from its host's owner: records of one task contradict each other",
        (
            Edit(
                "agentjudge/dataset/world.py",
                "                rec[fname] = ents[target][rec[via]][other]\n",
                "                pass\n",
            ),
        ),
        "tests/test_world.py::test_records_in_one_world_agree",
        ("tests/test_world.py",),
    ),
    Mutation(
        "bulk-ignores-rule",
        'a loop sets any field on every listed record ("a window seat on every booking of the flight")',
        (
            Edit(
                "agentjudge/dataset/shapes.py",
                "not field.bulk or (field.bulk_via and lt.name not in field.bulk_via)",
                "field.bulk_via and lt.name not in field.bulk_via",
            ),
        ),
        "tests/test_world.py::test_the_gt_of_every_domain_follows_its_rules",
        ("tests/test_world.py",),
    ),
    Mutation(
        "list-filter-from-first-enum",
        "a listing's filter is its first enum whatever the domain says: "
        '"filtered by status" over a priority',
        (
            Edit(
                "agentjudge/dataset/toolschemas.py",
                "        status = t.filter or first_enum(ent)",
                "        status = first_enum(ent)",
            ),
        ),
        "tests/test_world.py::test_every_tool_description_names_only_what_its_parameters_can_do",
        ("tests/test_world.py",),
    ),
    # ---- scorer (strict mode, p_value, p_seq_dag)
    Mutation(
        "strict-pseq-denominator-e-only",
        "strict p_seq divides by |E| only: trailing extra calls cost nothing (the published defect)",
        (
            Edit(
                "agentjudge/scoring/scorer.py",
                "positional / (n_e if n_e > n_g else n_g or 1)",
                "positional / (n_e or 1)",
            ),
        ),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    Mutation(
        "strict-pcov-sets",
        "strict p_cov over SETS of tool names: a loop_like repeat that is missing goes unnoticed",
        (
            Edit(
                "agentjudge/scoring/scorer.py",
                "p_cov = n_pairs / n_e if n_e else 1.0",
                "p_cov = len(set(names_g) & prep.set_e) / len(prep.set_e) if n_e else 1.0",
            ),
        ),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    Mutation(
        "strict-required-is-expected-keys",
        "a missing schema-OPTIONAL key scores 0 (required taken from the GT call, not the tool schema)",
        (Edit("agentjudge/scoring/scorer.py", "if gk >= required[i]:", "if gk >= keys[i]:"),),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    Mutation(
        "lenient-forgets-expected-keys",
        "lenient p_param scores 1 for a call that drops an expected key, as long as its keys are allowed",
        (
            Edit(
                "agentjudge/scoring/scorer.py",
                "(lenient and gk >= ek and gk <= prep.allowed[i])",
                "(lenient and gk <= prep.allowed[i])",
            ),
        ),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    Mutation(
        "pseqdag-unmatched-endpoint",
        "p_seq_dag counts an edge whose first call is missing from G as respected",
        (
            Edit(
                "agentjudge/scoring/scorer.py",
                "    for u, v in prep.edges:\n        if 0 <= match[u] < match[v]:\n            ok += 1\n"
                "    return pairs, ok / n_edges, positional",
                "    for u, v in prep.edges:\n        if match[u] < match[v]:\n            ok += 1\n"
                "    return pairs, ok / n_edges, positional",
            ),
        ),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    Mutation(
        "pvalue-fold-strip-only",
        "p_value folds case but not inner whitespace: 'New  York' no longer matches 'new york'",
        (
            Edit(
                "agentjudge/scoring/scorer.py",
                'return " ".join(s.split()).casefold()',
                "return s.strip().casefold()",
            ),
        ),
        "tests/test_scoring_reference.py::test_strict_scorer_equals_reference_on_random_cases",
        SCORER_TESTS,
    ),
    # ---- statistics
    Mutation(
        "ci-90-percent",
        "the percentile interval cut at 5/95 instead of 2.5/97.5: 90 % CIs labelled 95 %",
        (
            Edit(
                "agentjudge/stats/bootstrap.py",
                "[100 * alpha / 2, 100 * (1 - alpha / 2)]",
                "[100 * alpha, 100 * (1 - alpha)]",
            ),
        ),
        "tests/test_stats_reference.py::test_clusters_are_base_ids_and_identical_variants_change_nothing",
        STATS_TESTS,
    ),
    Mutation(
        "kappa-expected-from-rows-only",
        "κ's chance agreement built from one rater's margins twice",
        (
            Edit(
                "agentjudge/stats/agreement.py",
                "conf.sum(axis=-2)[..., None, :]",
                "conf.sum(axis=-1)[..., None, :]",
            ),
        ),
        "tests/test_stats.py::test_kappa_vs_sklearn",
        STATS_TESTS,
    ),
    Mutation(
        "snap-bankers-rounding",
        "snapping with round-half-to-even: 0.25 becomes 0 instead of 0.5 (ceiling and κ move)",
        (
            Edit(
                "agentjudge/stats/align.py",
                "np.floor(np.clip(arr, 0.0, 1.0) * 2.0 + 0.5) / 2.0",
                "np.round(np.clip(arr, 0.0, 1.0) * 2.0) / 2.0",
            ),
        ),
        "tests/test_stats.py::test_snap_and_mu_by_hand",
        STATS_TESTS,
    ),
    Mutation(
        "ceiling-includes-failed-rows",
        "the three-level ceiling averaged over rows the judge failed on too",
        (Edit("agentjudge/stats/align.py", "    ceil[~ok] = np.nan\n", ""),),
        "tests/test_stats_reference.py::test_ceiling_counts_only_rows_the_judge_answered",
        STATS_TESTS,
    ),
    Mutation(
        "tier-gap-signed",
        "κ vs capability-tier gap uses the signed difference: ρ depends on pair order",
        (Edit("agentjudge/stats/agreement.py", "abs(tiers[a] - tiers[b])", "(tiers[a] - tiers[b])"),),
        "tests/test_stats.py::test_kappa_tier_spearman_vs_scipy",
        STATS_TESTS,
    ),
    Mutation(
        "spearman-is-pearson",
        "the ranking correlation computed as Pearson's r on raw alignments",
        (
            Edit(
                "agentjudge/stats/agreement.py",
                "sps.spearmanr(x, y).statistic",
                "sps.pearsonr(x, y).statistic",
            ),
        ),
        "tests/test_stats_reference.py::test_spearman_helpers_equal_scipy_on_raw_values",
        STATS_TESTS,
    ),
    Mutation(
        "pass-hat-k-biased",
        "pass^k as p̂^k instead of the unbiased C(c,k)/C(n,k) (the spec says not p̂^k)",
        (
            Edit(
                "agentjudge/stats/passk.py",
                "ratio = comb(c[use], k, exact=False) / comb(n[use], k, exact=False)",
                "ratio = (c[use] / n[use]) ** k",
            ),
        ),
        "tests/test_stats.py::test_passk_unbiased_vs_brute_force",
        STATS_TESTS,
    ),
    Mutation(
        "binary-collapse-boundary",
        "binary collapse sends a 0.5 verdict to 0 when the reference is exactly 0.5 (spec: 'below 0.5')",
        (
            Edit(
                "agentjudge/stats/align.py",
                "np.where(ref[half] < 0.5, 0.0, 1.0)",
                "np.where(ref[half] <= 0.5, 0.0, 1.0)",
            ),
        ),
        "tests/test_stats_reference.py::test_binary_collapse_boundary_is_below_half",
        STATS_TESTS,
    ),
    # ---- report analyses
    Mutation(
        "main-slice-all-trials",
        "the headline slice keeps every judge trial: repeated trials weigh some records more than others",
        (
            Edit(
                "analysis/_context.py",
                '        mask &= (df["trial"] == df["trial"].min()).to_numpy()\n',
                "",
            ),
        ),
        "tests/test_analysis_reference.py::test_rq1_per_metric_topology_and_difficulty",
        ("tests/test_analysis.py", "tests/test_analysis_reference.py"),
    ),
    Mutation(
        "variant-delta-reversed",
        "RQ4–RQ6 deltas computed as baseline − level: every effect reported with the wrong sign",
        (
            Edit(
                "analysis/_common.py",
                "_is(base, first) else (lev, base)",
                "_is(base, first) else (base, lev)",
            ),
        ),
        "tests/test_analysis_reference.py::test_rq4_to_rq6_deltas_from_plain_groupby",
        ("tests/test_analysis.py", "tests/test_analysis_reference.py"),
    ),
    # ---- judges: parsing and baselines
    Mutation(
        "parse-percent-unscaled",
        "'50%' read as 50 (then rejected as out of range) instead of 0.5",
        (Edit("agentjudge/judges/parse.py", "return x / 100.0", "return x"),),
        "tests/test_parse.py::test_parse_table",
        ("tests/test_parse.py",),
    ),
    Mutation(
        "parse-accepts-other-scales",
        "a verdict on a 1–10 scale clamped to 1.0 instead of rejected",
        (
            Edit(
                "agentjudge/judges/parse.py",
                "if x < -RANGE_TOLERANCE or x > 1 + RANGE_TOLERANCE:",
                "if x < -RANGE_TOLERANCE or x > 100:",
            ),
        ),
        "tests/test_parse.py::test_out_of_scale_values_are_explained",
        ("tests/test_parse.py",),
    ),
    Mutation(
        "oracle-snaps-continuous",
        "the oracle baseline snaps its verdicts even when the prompt asks for a continuous scale",
        (
            Edit(
                "agentjudge/judges/baselines.py",
                "m: (min(1.0, max(0.0, scores[m])) if continuous else snap_three_level(scores[m]))",
                "m: snap_three_level(scores[m])",
            ),
        ),
        "tests/test_baselines.py::test_ceiling_continuous_variant_keeps_reference",
        ("tests/test_baselines.py",),
    ),
    # ---- models and runner
    Mutation(
        "cache-key-without-trial",
        "the call cache ignores the sample index: every repeated trial replays trial 0 (pass^k inflated)",
        (Edit("agentjudge/models/client.py", '            "sample_index": sample_index,\n', ""),),
        "tests/test_client.py::test_sample_index_gives_distinct_entries",
        ("tests/test_client.py", "tests/test_cache.py"),
    ),
    Mutation(
        "swapped-gt-is-own-gt",
        "the swapped-GT control shows the judge its own record's GT: the anchoring test measures nothing",
        (
            Edit(
                "agentjudge/runner/work.py",
                "shown = data.by_base[partners[record.id]]",
                "shown = data.by_base[record.id]",
            ),
        ),
        "tests/test_runner.py::test_conditions_show_own_no_or_swapped_gt",
        ("tests/test_runner.py::test_conditions_show_own_no_or_swapped_gt",),
    ),
    Mutation(
        "resume-skips-failed-units",
        "a resumed run treats failed units as finished: failures are never retried",
        (
            Edit(
                "agentjudge/runner/grid.py",
                'pending = [u for u in units if status.get(u) != "done"]',
                "pending = [u for u in units if u not in status]",
            ),
        ),
        "tests/test_resume.py::test_failed_units_are_retried_on_rerun",
        ("tests/test_resume.py",),
    ),
    Mutation(
        "worker-share-not-held",
        "worker processes ignore their share of a model's concurrency: with units sent ahead, a model "
        "gets more requests in flight at its server than its `concurrency`",
        (
            Edit(
                "agentjudge/models/client.py",
                "        if self.call_limits is None:\n            return http_shares.UNLIMITED",
                "        if True:\n            return http_shares.UNLIMITED",
            ),
        ),
        "tests/test_workers.py::test_units_are_sent_ahead_while_the_workers_keep_each_models_limit",
        ("tests/test_workers.py", "tests/test_client.py"),
    ),
    Mutation(
        "http-share-not-held",
        "a worker's share is no longer taken around the HTTP exchange once its model was seen sending "
        "through httpx: the model gets as many requests in flight as units out",
        (
            Edit(
                "agentjudge/fastpaths/http_shares.py",
                "        async with slot.limit:\n            return await original(self, request, **kwargs)",
                "        return await original(self, request, **kwargs)",
            ),
        ),
        "tests/test_client.py::test_a_worker_share_is_held_around_the_http_exchange_alone",
        ("tests/test_workers.py", "tests/test_client.py"),
    ),
    Mutation(
        "score-repeat-ignores-replay",
        "a prediction repeating an earlier one's calls gets its scores even when the environment saw other "
        "calls (an interactive prediction's unexecuted steps)",
        (
            Edit(
                "agentjudge/runner/work.py",
                "    if prediction.trajectory is not None:\n        replayed = [",
                "    if False:\n        replayed = [",
            ),
        ),
        "tests/test_offline.py::test_a_prediction_repeating_earlier_calls_is_scored_as_they_were_under_its_own_ids",
        ("tests/test_offline.py",),
    ),
    Mutation(
        "spill-left-behind",
        "the folder through which the judgments export's children hand over their tables is not removed, "
        "and what a killed export leaves (its folder, its temporary file) is never cleaned",
        (
            Edit(
                "agentjudge/runner/export.py",
                "                    shutil.rmtree(spill, ignore_errors=True)  # a table sent but not read "
                "(an error)",
                "                    pass",
            ),
            Edit(
                "agentjudge/atomic.py",
                "        if digits and not _alive(int(digits)):",
                "        if False:",
            ),
        ),
        "tests/test_offline.py::test_the_childrens_tables_pass_through_files_that_are_removed",
        ("tests/test_offline.py",),
    ),
    Mutation(
        "http-share-without-httpx",
        "a worker's share moves to the HTTP exchange without a request seen there: a model litellm reaches "
        "some other way is unlimited",
        (
            Edit(
                "agentjudge/fastpaths/http_shares.py",
                "    return slot.sent > 0 and not slot.streamed",
                "    return not slot.streamed",
            ),
        ),
        "tests/test_client.py::test_a_share_stays_around_whole_calls_when_no_request_goes_through_httpx",
        ("tests/test_workers.py", "tests/test_client.py"),
    ),
    Mutation(
        "dead-worker-share-lost",
        "a worker process that exits keeps its share of each model: the run goes on at part of its "
        "concurrency, or fails every unit of a model whose whole share it held",
        (
            Edit(
                "agentjudge/runner/workers.py",
                "                self._hand_over(worker)\n",
                "                pass\n",
            ),
        ),
        "tests/test_workers.py::test_a_live_worker_takes_over_the_share_of_one_that_was_killed",
        ("tests/test_workers.py",),
    ),
    Mutation(
        "retried-timeout-not-counted",
        "under --max-cost a timed-out attempt that is retried is not counted as spent: retries can take a "
        "run past the cap",
        (
            Edit(
                "agentjudge/models/client.py",
                "                if rebill is not None and kind in MAYBE_BILLED_KINDS:\n",
                "                if False:\n",
            ),
        ),
        "tests/test_client.py::test_a_retried_timeout_counts_as_spent_and_the_retry_must_fit_under_the_cap",
        ("tests/test_client.py",),
    ),
    Mutation(
        "unknown-cost-written-as-zero",
        "predictions.parquet says $0 for a prediction whose model has no known price: an invented figure",
        (
            Edit(
                "agentjudge/runner/export.py",
                '"cost_usd": usage.known_cost_usd if usage else 0.0,',
                '"cost_usd": usage.cost_usd if usage else 0.0,',
            ),
        ),
        "tests/test_cost_known.py::test_predictions_parquet_cost_is_null_for_an_unpriced_model_and_zero_for_a_cache_hit",
        ("tests/test_cost_known.py",),
    ),
    Mutation(
        "quick-valid-ignores-maximum",
        "the rule baseline's quick test passes a value above its schema's maximum, so the baseline's "
        "param verdict misses a problem jsonschema reports",
        (
            Edit(
                "agentjudge/quickvalid.py",
                "return lambda v: not _number(v) or v <= high",
                "return lambda v: True",
            ),
        ),
        "tests/test_quickvalid.py::test_random_schemas_and_values_never_quickly_valid_where_jsonschema_reports",
        ("tests/test_quickvalid.py",),
    ),
    Mutation(
        "quick-valid-complete-ignores-required",
        "Gate 1 lets a GT call without a required argument through: its quick test skips jsonschema for it",
        (
            Edit(
                "agentjudge/quickvalid.py",
                "return lambda v: type(v) is not dict or all(name in v for name in names)",
                "return lambda v: True",
            ),
        ),
        "tests/test_quickvalid.py::test_complete_also_holds_required_and_closed_objects",
        ("tests/test_quickvalid.py", "tests/test_gates.py"),
    ),
    Mutation(
        "score-cache-digests-dumped-again",
        "the grid writes every prediction out again to name it in the score cache (a serial 1.5 s on a "
        "paper grid) although it holds the text it read it from",
        (Edit("agentjudge/runner/grid.py", "            digests=digests,\n", ""),),
        "tests/test_resume_cache.py::test_a_run_digests_its_predictions_from_their_stored_text_and_a_caller_with_objects_agrees",
        ("tests/test_resume_cache.py",),
    ),
    # ---- the money and routing paths (issue 42): each passed every test before its test was written
    Mutation(
        "cost-cap-completion-at-input-rate",
        "--max-cost reserves max_tokens of completion at the input price (a quarter of gpt-4o-mini's real "
        "worst case): a judge that writes long answers overspends the cap",
        (
            Edit(
                "agentjudge/models/cost_gate.py",
                "        worst += out_tokens * prices[1]\n",
                "        worst += out_tokens * prices[0]\n",
            ),
        ),
        "tests/test_client.py::test_answers_of_max_tokens_never_take_spending_past_the_cap",
        ("tests/test_client.py",),
    ),
    Mutation(
        "batch-answer-without-usage-costs-nothing",
        "under --max-cost a batch answer that reports no usage settles at $0 instead of its worst case: "
        "the cap stops counting what such a provider bills",
        (
            Edit(
                "agentjudge/models/batch_path.py",
                "await self.cost_gate.settle(reserved, cost if usage.prompt_tokens else reserved, held=True)",
                "await self.cost_gate.settle(reserved, cost, held=True)",
            ),
        ),
        "tests/test_batch.py::test_a_batch_answer_without_usage_counts_its_worst_case_as_spent",
        ("tests/test_batch.py",),
    ),
    Mutation(
        "fleet-routes-by-fewest-sent",
        "a fleet routes each call to the replica sent the fewest calls, not the one with the fewest in "
        "flight: calls pile up behind a slow replica while another is idle",
        (
            Edit(
                "agentjudge/models/fleet.py",
                "key=lambda e: (e.in_flight, e.sent, self.endpoints.index(e))",
                "key=lambda e: (e.sent, e.in_flight, self.endpoints.index(e))",
            ),
        ),
        "tests/test_fleet.py::test_calls_avoid_the_replica_holding_a_slow_request",
        ("tests/test_fleet.py",),
    ),
    Mutation(
        "fleet-cool-down-does-not-grow",
        "a failing replica's cool-down stays at its base however often it fails: a dead replica is sent a "
        "request every second for the whole run",
        (
            Edit(
                "agentjudge/models/fleet.py",
                "cooldown = self.cooldown_base_s * 2 ** min(endpoint.failures_in_a_row - 1, 16)",
                "cooldown = self.cooldown_base_s",
            ),
        ),
        "tests/test_fleet.py::test_a_failing_endpoints_cool_down_doubles_honours_retry_after_and_is_capped",
        ("tests/test_fleet.py",),
    ),
    Mutation(
        "fleet-ignores-retry-after",
        "a replica that answered 429 with Retry-After is asked again after its own short cool-down: "
        "rate-limited requests, retried into more 429s",
        (
            Edit(
                "agentjudge/models/fleet.py",
                "cooldown = min(max(cooldown, retry_after or 0.0), MAX_COOLDOWN_S)",
                "cooldown = min(cooldown, MAX_COOLDOWN_S)",
            ),
        ),
        "tests/test_fleet.py::test_a_failing_endpoints_cool_down_doubles_honours_retry_after_and_is_capped",
        ("tests/test_fleet.py",),
    ),
    Mutation(
        "bfcl-drops-falsy-first-value",
        "a BFCL argument whose first accepted value is 0, False or [] is left out of the GT call, as if it "
        'were the "" that means optional',
        (
            Edit(
                "agentjudge/tracks/bfcl.py",
                '        if alternatives[0] != "":\n',
                "        if alternatives[0]:\n",
            ),
        ),
        "tests/test_bfcl.py::test_a_first_accepted_value_that_is_falsy_stays_in_the_gt_call",
        ("tests/test_bfcl.py",),
    ),
    Mutation(
        "bfcl-nested-drops-falsy-first-value",
        "the same inside a dict argument's accepted alternatives",
        (
            Edit(
                "agentjudge/tracks/bfcl.py",
                'return {k: first_value(alts[0]) for k, alts in alternative.items() if alts[0] != ""}',
                "return {k: first_value(alts[0]) for k, alts in alternative.items() if alts[0]}",
            ),
        ),
        "tests/test_bfcl.py::test_a_first_accepted_value_that_is_falsy_stays_in_the_gt_call",
        ("tests/test_bfcl.py",),
    ),
    Mutation(
        "outcome-ci-ignores-ci-choice",
        "RQ7's intervals (outcome_predictors, outcome_judges) are the plain percentile interval whatever "
        "--ci says: too narrow with few scenarios under the default expanded interval",
        (
            Edit(
                "agentjudge/stats/outcome.py",
                "lo, hi = percentile_ci(d, boot.alpha)",
                "lo, hi = percentile_ci(d)",
            ),
        ),
        "tests/test_outcome_stats.py::test_the_intervals_follow_the_plans_ci_choice",
        ("tests/test_outcome_stats.py", "tests/test_rq7_outcome.py"),
    ),
    Mutation(
        "paired-runs-ci-ignores-ci-choice",
        "the paired difference of two runs (the compact-tools ablation) reads the plain percentile "
        "interval whatever interval was asked",
        (
            Edit(
                "agentjudge/stats/paired_runs.py",
                "    lo, hi = percentile_ci(draws[:, None], alpha)",
                "    lo, hi = percentile_ci(draws[:, None])",
            ),
        ),
        "tests/test_paired_runs.py::test_the_interval_follows_ci_expanded_by_default",
        ("tests/test_paired_runs.py",),
    ),
)


@dataclass
class Result:
    mutation: Mutation
    outcome: str  # caught | SURVIVED | stale | timeout
    failing: list[str]
    seconds: float
    detail: str = ""


_FAIL_LINE = re.compile(r"^(FAILED|ERROR) (.+?)(?: - .*)?$")  # node ids of parametrized tests hold spaces


# Both must come from the copy: the package, and a folder setup.py maps into it (an editable install of the
# checkout would otherwise serve agentjudge.analysis from the checkout, and a mutation of analysis/ would
# go unseen by every test that reaches it through the package).
_PROBE = "import agentjudge, agentjudge.analysis as a; print(agentjudge.__file__, a.__file__)"


def _link_mapped_folders(copy: Path) -> None:
    """Give the copy what setup.py's package_dir mapping gives an install: agentjudge/analysis,
    agentjudge/prompts … as links to the copy's own top-level folders, found before any installed mapping."""
    tree = ast.parse((copy / "setup.py").read_text())
    mapped = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "MAPPED" for t in node.targets)
    )
    for package, folder in sorted(mapped.items()):
        link = copy / Path(*package.split("."))
        if link.exists() or link.is_symlink():
            continue  # a parent's link already covers it (agentjudge/prompts/paper)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(copy / folder, target_is_directory=True)


def _env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutated and a restored file may share size and mtime
    env["AGENTJUDGE_CACHE"] = str(copy / "mutate-cache.sqlite")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def _pytest(copy: Path, tests: tuple[str, ...], full: bool, timeout: float) -> tuple[int, list[str], str]:
    """Run pytest in the copy; (exit code, failing node ids, tail of the output). -1 on timeout."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "--no-header"]
    cmd += ["-x"] if full else list(tests)
    try:
        proc = subprocess.run(cmd, cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, [], f"no result after {timeout:.0f} s"
    out = proc.stdout + proc.stderr
    failing = []
    for line in out.splitlines():
        m = _FAIL_LINE.match(line)
        if m and m.group(2) not in failing:
            failing.append(m.group(2))
    return proc.returncode, failing, "\n".join(out.strip().splitlines()[-3:])


def _snippet_problem(copy: Path, edit: Edit) -> str | None:
    path = copy / edit.file
    if not path.exists():
        return f"{edit.file} no longer exists"
    n = path.read_text().count(edit.original)
    if n == 0:
        return f"{edit.file}: snippet {edit.original.splitlines()[0].strip()!r} not found"
    if n > 1:
        return f"{edit.file}: snippet {edit.original.splitlines()[0].strip()!r} occurs {n} times"
    return None


def run_one(copy: Path, mutation: Mutation, full: bool, timeout: float) -> Result:
    problems = [p for e in mutation.edits if (p := _snippet_problem(copy, e))]
    if problems:
        return Result(mutation, "stale", [], 0.0, "; ".join(problems))
    saved = {e.file: (copy / e.file).read_text() for e in mutation.edits}
    try:
        for e in mutation.edits:
            path = copy / e.file
            path.write_text(path.read_text().replace(e.original, e.replacement, 1))
        start = time.perf_counter()
        code, failing, tail = _pytest(copy, mutation.tests, full, timeout)
        seconds = time.perf_counter() - start
    finally:
        for file, text in saved.items():
            (copy / file).write_text(text)
    if code == -1:
        return Result(mutation, "timeout", [], seconds, tail)
    if code == 0:
        return Result(mutation, "SURVIVED", [], seconds)
    if not failing:  # pytest could not run (usage error, nothing collected): not evidence of a catch
        return Result(mutation, f"error (pytest exit {code})", [], seconds, tail)
    return Result(mutation, "caught", failing, seconds)


def _short(node: str) -> str:
    return node.removeprefix("tests/")


def _is_killer(node: str, killer: str) -> bool:
    return node == killer or node.startswith((killer + "::", killer + "["))


def table(results: list[Result], full: bool = False) -> str:
    """Markdown: the expected killer is listed first in 'caught by' when it failed. With ``full`` (-x) only
    the first failing test is known, so an expected killer that did not fail first is "not reached"."""
    lines = [
        "| mutation | file(s) | result | caught by | expected killer failed | s |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        files = ", ".join(sorted({e.file.removeprefix("agentjudge/") for e in r.mutation.edits}))
        hits = [f for f in r.failing if _is_killer(f, r.mutation.killer)]
        others = [f for f in r.failing if f not in hits]
        shown = (hits[:1] + others)[:3]
        by = ", ".join(_short(f) for f in shown)
        if len(r.failing) > len(shown):
            by += f" (+{len(r.failing) - len(shown)} more)"
        if r.outcome != "caught":
            by = r.detail or "—"
        missed = "not reached (-x)" if full else "no"
        expected = "yes" if hits else (missed if r.outcome == "caught" else "—")
        lines.append(f"| {r.mutation.name} | {files} | {r.outcome} | {by} | {expected} | {r.seconds:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="run the whole default suite (-x) per mutation")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only these mutations")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutation (default 900)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    args = ap.parse_args(argv)
    known = {m.name for m in MUTATIONS}
    unknown = [n for n in args.only if n not in known]
    if unknown:
        print(f"error: unknown mutation(s) {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name:34} {', '.join(e.file for e in m.edits):44} {m.killer}")
        return 0
    for m in chosen:
        if not any(m.killer.split("::")[0] == t.split("::")[0] for t in m.tests):
            print(f"error: {m.name}: killer {m.killer} is not among its tests {m.tests}", file=sys.stderr)
            return 2
    tmp = Path(tempfile.mkdtemp(prefix="agentjudge-mutate-"))
    copy = tmp / "repo"
    try:
        shutil.copytree(ROOT, copy, ignore=IGNORE)
        _link_mapped_folders(copy)
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE], cwd=copy, env=_env(copy), capture_output=True, text=True
        )
        imported = probe.stdout.split()
        if len(imported) != 2 or not all(f.startswith(str(copy)) for f in imported):
            print(
                f"error: the copy's agentjudge is not the one imported ({probe.stdout.strip()})",
                file=sys.stderr,
            )
            return 2
        union = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        print(
            f"copy: {copy}\nbaseline: {'full default suite' if args.full else ' '.join(union)}",
            file=sys.stderr,
        )
        code, failing, tail = _pytest(copy, union, args.full, args.timeout * 2)
        if code != 0:
            print(f"error: the UNMUTATED copy fails ({failing or tail}); fix that first", file=sys.stderr)
            return 2
        results = []
        for m in chosen:
            r = run_one(copy, m, args.full, args.timeout)
            print(f"{m.name}: {r.outcome} ({r.seconds:.0f} s)", file=sys.stderr)
            results.append(r)
    finally:
        if args.keep:
            print(f"kept {copy}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(table(results, args.full))
    caught = sum(r.outcome == "caught" for r in results)
    print(
        f"\n{caught} of {len(results)} mutations caught"
        + ("" if args.full else " (selected tests per mutation)")
    )
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
