"""Writing the run folder's parquet files without importing pandas, in a process that ends afterwards.

Why: pyarrow imports pandas the first time it builds an array from Python values (``pa.array`` asks
whether the values are a pandas object), although the export never hands it one. That import is ~0.3 s,
a quarter of what retrying a few failed units of a finished run costs. While a finder at the front of
``sys.meta_path`` refuses pandas, that question's import fails and pyarrow carries on without pandas; the
files are the same bytes (``tests/test_resume_cache.py`` compares them with an in-process export that
imported pandas).

Only for a process that does not hand pandas objects to pyarrow afterwards, because pyarrow remembers the
failed import: until a call that needs pandas (``Table.from_pandas``, ``to_pandas``) imports it, it treats
a pandas Series given to ``pa.array`` as a plain sequence (a categorical Series becomes ``string``, not
``dictionary``; checked with pyarrow 26). So only ``run`` under the console script or
``python -m agentjudge`` uses it (``cli.main``: the process ends with the verb); ``grid.run_cli`` called
from Python and ``cli.app`` invoked in-process (tests, notebooks) do not. When pandas is already imported
there is nothing to save and nothing is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any


class _NoPandas:
    """A finder that says pandas cannot be imported (ModuleNotFoundError, as for a missing package).
    ``sys.modules["pandas"] = None`` is not enough: pyarrow's compiled import reads sys.modules directly
    and would take the None for the module."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> Any:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"pandas is kept out of this export ({__name__})", name=name)
        return None


@contextmanager
def without_pandas(enabled: bool = True) -> Iterator[None]:
    """Inside, ``import pandas`` fails (ModuleNotFoundError); afterwards it works as before."""
    if not enabled or "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
