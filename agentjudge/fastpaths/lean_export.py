"""Writing the run folder's parquet files without importing pandas or numpy, in a process that ends
afterwards.

Patches: pyarrow's lazy imports of pandas and numpy, by a finder put at the front of ``sys.meta_path`` for
the duration of the export.

Why: pyarrow imports pandas the first time it builds an array from Python values (``pa.array`` asks
whether the values are a pandas object), although the export never hands it one; and pyarrow imports
numpy when it is itself imported, although the export hands it Python lists only. Those imports are
~0.3 s and ~0.15 s, a good part of what retrying a few failed units of a finished run costs. While a
finder at the front of ``sys.meta_path`` refuses them, those imports fail and pyarrow carries on without
them; the files are the same bytes (``tests/test_resume_cache.py`` and ``tests/test_export_small.py``
compare them with an in-process export that imported both).

numpy is kept out only when neither it nor pyarrow is imported yet and the installed pyarrow does not
require it (its metadata lists no numpy requirement: numpy became optional in later pyarrow releases;
an older one is left to import it). The export itself never imports numpy.

Only for a process that does not hand pandas or numpy objects to pyarrow afterwards, because pyarrow
remembers the failed imports: until a call that needs pandas (``Table.from_pandas``, ``to_pandas``)
imports it, it treats a pandas Series given to ``pa.array`` as a plain sequence (a categorical Series
becomes ``string``, not ``dictionary``; checked with pyarrow 26), and a pyarrow imported without numpy
never converts numpy arrays. So only ``run`` under the console script or ``python -m agentjudge`` uses
it (``commands.main`` says so with ``process_ends_after_run``: the process ends with the verb);
``agentjudge.api.run`` called from Python and the typer app invoked in-process (tests, notebooks) do
not. When pandas (numpy) is already imported there is nothing to save and it is not refused.

Falls back: with ``AGENTJUDGE_NO_FAST_PATHS=1`` nothing is refused (pyarrow imports pandas and numpy as it
likes; the files are the same bytes).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from types import ModuleType
from typing import Any

from agentjudge import fastpaths

_ENDS_AFTER_RUN = False  # set by the console script: this process ends with the run


def process_ends_after_run(value: bool = True) -> None:
    """Say that this process ends after the run it starts (the ``agentjudge`` console script), so the
    run's export may keep pandas and numpy out (``lean_imports``)."""
    global _ENDS_AFTER_RUN
    _ENDS_AFTER_RUN = value


def ends_after_run() -> bool:
    return _ENDS_AFTER_RUN


class _Refuse:
    """A finder that says the named top-level packages cannot be imported (ModuleNotFoundError, as for a
    missing package). ``sys.modules["pandas"] = None`` is not enough: pyarrow's compiled import reads
    sys.modules directly and would take the None for the module."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> Any:
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{name} is kept out of this export ({__name__})", name=name)
        return None


def pyarrow_requires_numpy() -> bool:
    """Whether the installed pyarrow declares numpy a requirement (not only of an extra); True when its
    metadata cannot be read (nothing is refused then)."""
    try:
        requires = metadata.requires("pyarrow") or []
    except metadata.PackageNotFoundError:
        return True
    for line in requires:
        name = line.split(";")[0].strip().lower()
        if name.startswith("numpy") and "extra" not in line.partition(";")[2]:
            return True
    return False


def kept_out() -> frozenset[str]:
    """What ``lean_imports`` refuses in this process now."""
    names = set() if "pandas" in sys.modules else {"pandas"}
    if "numpy" not in sys.modules and "pyarrow" not in sys.modules and not pyarrow_requires_numpy():
        names.add("numpy")
    return frozenset(names)


@contextmanager
def lean_imports(enabled: bool = True) -> Iterator[None]:
    """Inside, ``import pandas`` fails (ModuleNotFoundError), and ``import numpy`` too (``kept_out``);
    afterwards they work as before. Nothing is refused with the fast paths off."""
    names = kept_out() if enabled and fastpaths.enabled() else frozenset()
    if not names:
        yield
        return
    finder = _Refuse(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
