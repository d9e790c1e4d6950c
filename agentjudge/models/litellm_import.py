"""The one place litellm is imported: offline (bundled price table), quiet, without litellm's own retries.

Kept apart from ``client`` so that modules the client itself uses lazily (batch mode, token counting) can
load litellm without importing the client back, which would be an import circle. What is done right after
the import only for speed (its first call's imports ahead, the heap frozen) is
``fastpaths/litellm_warmup.py``.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

from agentjudge.fastpaths.litellm_warmup import warm_up

_LITELLM: Any = None


def litellm_module() -> Any:
    """Import litellm once, offline and quiet (never call this inside a running event loop the first time)."""
    global _LITELLM
    if _LITELLM is None:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True
        litellm.set_verbose = False
        litellm.num_retries = 0
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
            logging.getLogger(name).setLevel(logging.ERROR)
        # an answer with fields of the wrong type (a number as the content) makes litellm's response models
        # warn on every dump, a wall of text on stderr; the answer is classified and counted as a failure
        # (models/completion.py) and the unit's row says why
        warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
        warm_up()
        _LITELLM = litellm
    return _LITELLM
