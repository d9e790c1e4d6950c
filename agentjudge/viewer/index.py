"""The verdict rows of a run folder as code arrays: filter, sort and page them without a DataFrame.

A paper-sized grid has 5.48 M verdict rows. Held as pandas objects they would take gigabytes and every
filter would copy them; here each column the list can filter or show is read once from judgments.parquet
as dictionary codes (one small integer per row) or a float32, about 25 bytes a row, and a request is a
numpy mask, a partial sort of the masked rows (only the rows up to the requested page are ordered) and the
page's rows turned into dicts. A response costs what it shows, whatever the grid's size.
The rationale and raw answer are not held: ``item.py`` reads them for the one item a person opens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from agentjudge.rundir import RunFolder

#: what the list can be filtered by (URL query keys), in the order the page shows them
FACETS: tuple[str, ...] = (
    "judge",
    "generator",
    "difficulty",
    "condition",
    "metric",
    "topology",
    "domain",
    "variant",
    "temperature",
    "mode",
)
_DICTIONARY_COLUMNS = (
    "record_id",
    "difficulty",
    "generator",
    "judge",
    "condition",
    "prompt_format",
    "default_mode",
    "metric",
    "topology",
    "domain",
    "scoring_mode",
)
_NUMERIC_COLUMNS = ("cot", "temperature", "generator_trial", "trial", "reference", "verdict", "parse_ok")
_COLUMNS = (*_DICTIONARY_COLUMNS, *_NUMERIC_COLUMNS)
SORTS = ("disagreement", "record")
MAX_PAGE = 500


@dataclass
class StateMatch:
    """The predictions' state_match in one scoring mode (it is the same in both), as columns: record ids and
    generators as Arrow string arrays (looked up by Arrow), trials and values as numpy arrays."""

    record_id: Any  # pyarrow.Array of str
    generator: Any  # pyarrow.Array of str
    trial: np.ndarray  # int64
    value: np.ndarray  # float64, NaN where unknown


class QueryError(ValueError):
    """A request the index cannot answer (an unknown filter value, a bad number); the message says which."""


def variant_label(prompt_format: str, cot: bool, default_mode: str) -> str:
    """How the page names a prompt variant: ``json``, ``json + CoT``, ``freeform, 0.5-default``."""
    label = prompt_format + (" + CoT" if cot else "")
    return label if default_mode == "1.0" else f"{label}, {default_mode}-default"


def temperature_label(value: float) -> str:
    return "model default" if math.isnan(value) else f"{value:g}"


ROW_FACETS = ("judge", "generator", "condition", "metric", "mode", "variant", "temperature")
RECORD_FACETS = ("difficulty", "topology", "domain")  # the same for every row of a record


class _Codebook:
    """Global codes for the values of one column, read row group by row group (each group's dictionary
    is mapped onto the global list with a small lookup table: O(rows), no sort)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._pos: dict[Any, int] = {}

    def code(self, value: Any) -> int:
        key = "nan" if isinstance(value, float) and math.isnan(value) else value
        if key not in self._pos:
            self._pos[key] = len(self.values)
            self.values.append(value)
        return self._pos[key]

    def dictionary(self, column: Any) -> np.ndarray:
        """Global codes of a dictionary-encoded column (one row group)."""
        out = []
        for chunk in column.chunks:
            lookup = np.array([self.code(str(v)) for v in chunk.dictionary.to_pylist()], dtype=np.int32)
            indices = chunk.indices.to_numpy(zero_copy_only=False)
            out.append(lookup[indices] if len(lookup) else np.zeros(len(indices), dtype=np.int32))
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int32)

    def floats(self, values: np.ndarray) -> np.ndarray:
        """Global codes of a float column (NaN a value of its own): a group's distinct values are few.
        numpy's ``unique`` rather than pandas' ``factorize``: importing pandas alone costs the viewer's
        start ~0.7 s on 2 shared cores."""
        if len(values) and (np.all(values == values[0]) or np.all(np.isnan(values))):
            return np.full(len(values), self.code(float(values[0])), dtype=np.int32)  # the usual group
        uniques, local = np.unique(values, return_inverse=True, equal_nan=True)
        lookup = np.array([self.code(float(u)) for u in uniques], dtype=np.int32)
        return lookup[local.reshape(-1)] if len(lookup) else np.zeros(len(values), dtype=np.int32)


@dataclass
class VerdictIndex:
    """Every verdict row of judgments.parquet, as codes. ``values[facet]`` lists the labels of a facet;
    ``codes[facet]`` gives each row's position in it (for ``RECORD_FACETS``, each record's)."""

    rows: int
    codes: dict[str, np.ndarray]
    values: dict[str, list[str]]
    record: np.ndarray  # code into record_ids
    record_ids: list[str]
    generator_trial: np.ndarray
    trial: np.ndarray
    reference: np.ndarray  # float32
    verdict: np.ndarray  # float32, NaN where the verdict failed
    failed: np.ndarray  # bool: unparseable answer or transport error
    outcome: np.ndarray | None = None  # int8 per row: the prediction's state_match (1/0), -1 unknown

    @classmethod
    def load(cls, folder: RunFolder, state_match: StateMatch | None = None) -> VerdictIndex:
        handle = folder.parquet_file("judgments", read_dictionary=_DICTIONARY_COLUMNS)
        n = handle.metadata.num_rows
        books = {name: _Codebook() for name in (*_DICTIONARY_COLUMNS, "temperature", "variant")}
        small = {name: np.zeros(n, dtype=np.int8) for name in ROW_FACETS}
        record = np.zeros(n, dtype=np.int32)
        per_record: dict[str, dict[int, int]] = {name: {} for name in RECORD_FACETS}
        gtrial = np.zeros(n, dtype=np.int16)
        trial = np.zeros(n, dtype=np.int16)
        reference = np.zeros(n, dtype=np.float32)
        verdict = np.zeros(n, dtype=np.float32)
        failed = np.zeros(n, dtype=bool)
        at = 0
        for group in range(handle.metadata.num_row_groups):
            table = handle.read_row_group(group, columns=list(_COLUMNS))
            size = table.num_rows
            rows = slice(at, at + size)
            for name in ("judge", "generator", "condition", "metric"):
                small[name][rows] = books[name].dictionary(table.column(name))
            small["mode"][rows] = books["scoring_mode"].dictionary(table.column("scoring_mode"))
            rec = books["record_id"].dictionary(table.column("record_id"))
            record[rows] = rec
            # one value per record: its first row's. The rows come in record order, so the first row of
            # each run of equal record codes is enough (O(rows), no sort); a record met again later keeps
            # the value it was first seen with.
            starts = np.flatnonzero(np.diff(rec, prepend=-1) != 0)
            start_records = rec[starts].tolist()
            for name in RECORD_FACETS:
                codes = books[name].dictionary(table.column(name))[starts].tolist()
                seen = per_record[name]
                for r, c in zip(start_records, codes, strict=True):
                    seen.setdefault(r, c)
            fmt = books["prompt_format"].dictionary(table.column("prompt_format"))
            dmode = books["default_mode"].dictionary(table.column("default_mode"))
            cot = table.column("cot").to_numpy(zero_copy_only=False).astype(np.int32)
            combo = (fmt * 64 + dmode) * 2 + cot
            small["variant"][rows] = books["variant"].floats(combo.astype(np.float64))
            temps = table.column("temperature").to_numpy(zero_copy_only=False).astype(np.float64)
            small["temperature"][rows] = books["temperature"].floats(temps)
            gtrial[rows] = table.column("generator_trial").to_numpy(zero_copy_only=False)
            trial[rows] = table.column("trial").to_numpy(zero_copy_only=False)
            reference[rows] = table.column("reference").to_numpy(zero_copy_only=False)
            verdict[rows] = table.column("verdict").to_numpy(zero_copy_only=False)
            parse_ok = table.column("parse_ok").to_numpy(zero_copy_only=False).astype(bool)
            failed[rows] = ~parse_ok
            at += size
            del table
        failed |= np.isnan(verdict)
        record_ids = [str(v) for v in books["record_id"].values]
        facet_codes: dict[str, np.ndarray] = dict(small)
        values: dict[str, list[str]] = {
            name: [str(v) for v in books[name].values]
            for name in ("judge", "generator", "condition", "metric")
        }
        values["mode"] = [str(v) for v in books["scoring_mode"].values]
        for name in RECORD_FACETS:
            facet_codes[name] = np.array(
                [per_record[name].get(r, 0) for r in range(len(record_ids))], dtype=np.int16
            )
            values[name] = [str(v) for v in books[name].values]
        fmts, dmodes = books["prompt_format"].values, books["default_mode"].values
        values["variant"] = []
        for key in books["variant"].values:
            whole = int(key)
            values["variant"].append(
                variant_label(fmts[whole // 128], bool(whole % 2), dmodes[(whole // 2) % 64])
            )
        values["temperature"] = [temperature_label(float(v)) for v in books["temperature"].values]
        index = cls(
            rows=n,
            codes=facet_codes,
            values=values,
            record=record,
            record_ids=record_ids,
            generator_trial=gtrial,
            trial=trial,
            reference=reference,
            verdict=verdict,
            failed=failed,
        )
        if state_match is not None and len(state_match.value):
            index.outcome = index._outcomes(state_match)
        return index

    def row_codes(self, name: str, rows: np.ndarray | slice | None = None) -> np.ndarray:
        """The codes of facet ``name`` for ``rows`` (all rows when None)."""
        if name in RECORD_FACETS:
            record = self.record if rows is None else self.record[rows]
            return self.codes[name][record]
        return self.codes[name] if rows is None else self.codes[name][rows]

    def disagreement(self, rows: np.ndarray) -> np.ndarray:
        """|reference − verdict| of ``rows``, NaN where the verdict failed."""
        value = np.abs(self.reference[rows] - self.verdict[rows])
        return np.where(self.failed[rows], np.nan, value)

    def _outcomes(self, state_match: StateMatch) -> np.ndarray:
        """Each row's prediction's state_match as 1 / 0, -1 where the prediction has none. A join on codes
        (the scores' record ids and generators looked up in the index's lists by Arrow), not a dict of
        tuples: a paper-sized grid has 114,240 predictions."""
        import pyarrow as pa
        import pyarrow.compute as pc

        gens = self.values["generator"]
        trials = int(self.generator_trial.max(initial=0)) + 1
        table = np.full(len(self.record_ids) * len(gens) * trials, -1, dtype=np.int8)
        rec = pc.index_in(state_match.record_id, value_set=pa.array(self.record_ids, pa.string()))
        gen = pc.index_in(state_match.generator, value_set=pa.array(gens, pa.string()))
        rec_np = rec.to_numpy(zero_copy_only=False)
        gen_np = gen.to_numpy(zero_copy_only=False)
        rec_code = np.where(np.isnan(rec_np), -1, rec_np).astype(np.int64) if rec.null_count else rec_np
        gen_code = np.where(np.isnan(gen_np), -1, gen_np).astype(np.int64) if gen.null_count else gen_np
        trial, value = state_match.trial, state_match.value
        ok = (rec_code >= 0) & (gen_code >= 0) & (trial >= 0) & (trial < trials) & ~np.isnan(value)
        slot = (rec_code[ok].astype(np.int64) * len(gens) + gen_code[ok]) * trials + trial[ok]
        table[slot] = (value[ok] >= 1).astype(np.int8)
        key = (
            self.record.astype(np.int64) * len(gens) + self.codes["generator"]
        ) * trials + self.generator_trial
        return table[key]

    # ------------------------------------------------------------------ queries

    def facets(self) -> dict[str, list[str]]:
        """Each facet's values in the order a person reads them (difficulties easy → hard, the metrics and
        topologies in the paper's order, the rest alphabetical)."""
        from agentjudge.types import CONDITIONS, DIFFICULTIES, METRICS, TOPOLOGIES

        canonical: dict[str, tuple[str, ...]] = {
            "difficulty": DIFFICULTIES,
            "condition": CONDITIONS,
            "topology": TOPOLOGIES,
            "metric": (*METRICS, "outcome"),
        }
        out = {}
        for name in FACETS:
            known = list(canonical.get(name, ()))
            out[name] = sorted(
                self.values[name], key=lambda v: (known.index(v) if v in known else len(known), v)
            )
        return out

    def primary_mode(self) -> str | None:
        """The scoring mode the report reads (strict when the run has it)."""
        modes = self.values["mode"]
        return "strict" if "strict" in modes else (modes[0] if modes else None)

    def mask(self, filters: Mapping[str, Sequence[str]], params: Mapping[str, str]) -> np.ndarray:
        """The rows a request keeps: each facet's listed values (any of them), the record, the smallest
        disagreement, failed rows only, the outcome."""
        keep = np.ones(self.rows, dtype=bool)
        for name, wanted in filters.items():
            if name not in FACETS or not wanted:
                continue
            known = self.values[name]
            bad = [w for w in wanted if w not in known]
            if bad:
                raise QueryError(f"{name}: no such value {bad[0]!r} in this run (known: {', '.join(known)})")
            positions = np.array([known.index(w) for w in wanted])
            keep &= np.isin(self.row_codes(name), positions)
        if params.get("record"):
            try:
                code = self.record_ids.index(params["record"])
            except ValueError:
                raise QueryError(f"record: no verdict rows for record {params['record']!r}") from None
            keep &= self.record == code
        if params.get("min_disagreement"):
            floor = _number(params, "min_disagreement", 0.0, 1.0)
            keep &= ~self.failed & (np.abs(self.reference - self.verdict) >= floor - 1e-6)
        if params.get("failures") in ("1", "true", "only"):
            keep &= self.failed
        if params.get("outcome"):
            if self.outcome is None:
                raise QueryError("outcome: this run has no state_match for its predictions")
            wanted_outcome = {"matched": 1, "not_matched": 0, "unknown": -1}.get(params["outcome"])
            if wanted_outcome is None:
                raise QueryError("outcome: one of matched, not_matched, unknown")
            keep &= self.outcome == wanted_outcome
        return keep

    def page(self, keep: np.ndarray, sort: str, offset: int, limit: int) -> tuple[int, np.ndarray]:
        """(rows kept, the row numbers of one page in the requested order). ``disagreement``: largest
        first, failed rows last, ties in file order; ``record``: file order (records, then generators,
        judges, conditions, metrics)."""
        if sort not in SORTS:
            raise QueryError(f"sort: one of {', '.join(SORTS)}")
        rows = np.flatnonzero(keep)
        total = len(rows)
        end = min(offset + limit, total)
        if offset >= total:
            return total, rows[:0]
        if sort == "record":
            return total, rows[offset:end]
        value = np.nan_to_num(self.disagreement(rows), nan=-1.0)  # failed rows after every real one
        if end < total:  # only the rows up to the page's end need ordering; ties at the cut in file order
            kth = value[np.argpartition(-value, end - 1)[end - 1]]
            above = np.flatnonzero(value > kth)
            head = np.concatenate([above, np.flatnonzero(value == kth)[: end - len(above)]])
        else:
            head = np.arange(total)
        order = head[np.lexsort((rows[head], -value[head]))]
        return total, rows[order[offset:end]]

    def describe(self, row: int) -> dict[str, Any]:
        """One list row as the page shows it."""
        out: dict[str, Any] = {}
        for name in FACETS:
            code = self.codes[name][self.record[row]] if name in RECORD_FACETS else self.codes[name][row]
            out[name] = self.values[name][int(code)]
        out["record"] = self.record_ids[int(self.record[row])]
        out["generator_trial"] = int(self.generator_trial[row])
        out["trial"] = int(self.trial[row])
        out["reference"] = _finite(self.reference[row])
        out["verdict"] = _finite(self.verdict[row])
        out["disagreement"] = _finite(self.disagreement(np.array([row]))[0])
        out["failed"] = bool(self.failed[row])
        if self.outcome is not None:
            out["outcome"] = {1: "matched", 0: "not_matched"}.get(int(self.outcome[row]), "unknown")
        return out

    def nbytes(self) -> int:
        arrays = [*self.codes.values(), self.record, self.generator_trial, self.trial, self.reference]
        arrays += [self.verdict, self.failed]
        return sum(a.nbytes for a in arrays) + (self.outcome.nbytes if self.outcome is not None else 0)


def _finite(value: Any) -> float | None:
    v = float(value)
    return None if math.isnan(v) else round(v, 6)  # float32 in the index: six places are exact enough


def _number(params: Mapping[str, str], key: str, low: float, high: float) -> float:
    try:
        value = float(params[key])
    except ValueError:
        raise QueryError(f"{key}: not a number: {params[key]!r}") from None
    if not (low <= value <= high):
        raise QueryError(f"{key}: {value:g} is outside [{low:g}, {high:g}]")
    return value
