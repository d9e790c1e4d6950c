"""The one place litellm is imported: offline (bundled price table), quiet, without litellm's own retries.

Kept apart from ``client`` so that modules the client itself uses lazily (batch mode, token counting) can
load litellm without importing the client back, which would be an import circle.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
from typing import Any

_LITELLM: Any = None

# Modules litellm (1.110) imports lazily inside its first ``acompletion``: ~90 ms of CPU that would stall the
# event loop once, and once more in every worker process forked before that first call (runner/workers.py).
# Importing them with litellm itself pays that once, before any loop or fork. A name a later litellm no longer
# has is skipped: this only moves work earlier, it never changes what a call does.
_FIRST_CALL_MODULES = (
    "litellm.proxy._types",
    "litellm._service_logger",
    "litellm.integrations.prometheus_services",
    "litellm.integrations.generic_api.generic_api_callback",
    "litellm.litellm_core_utils.logging_callback_manager",
    "litellm.llms.github_copilot.per_user_auth",
    "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.openai.chat.gpt_audio_transformation",
    "litellm.llms.openai_like.dynamic_config",
    "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm.proxy.spend_tracking.savings",
)


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
        for module in _FIRST_CALL_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
        # litellm, openai and pydantic leave ~a million long-lived objects (modules, classes, schemas): moved
        # out of the collector's generations, a full collection no longer walks them again and again
        # (CPython's gc.freeze, meant for this), and a forked worker does not copy their pages by reading them
        gc.freeze()
        _LITELLM = litellm
    return _LITELLM
