"""litellm's import finished early and its objects kept out of the collector, once per process.

Patches: nothing of litellm's code; it imports modules litellm would import later, inside its first
``acompletion``, and freezes the heap after the import (CPython's ``gc.freeze``).

Why: litellm (1.110) imports ~a dozen modules lazily inside its first ``acompletion``: ~90 ms of CPU that
would stall the event loop once, and once more in every worker process forked before that first call
(``runner/workers.py``). Imported with litellm itself, that is paid once, before any loop or fork. And
litellm, openai and pydantic leave about a million long-lived objects (modules, classes, schemas): moved
out of the collector's generations, a full collection no longer walks them again and again, and a forked
worker does not copy their pages by reading them.

Falls back: a module name a later litellm no longer has is skipped (this only moves work earlier, it never
changes what a call does); with ``AGENTJUDGE_NO_FAST_PATHS=1`` nothing is imported ahead and nothing frozen.
"""

from __future__ import annotations

import contextlib
import gc
import importlib

from agentjudge import fastpaths

# Modules litellm 1.110 imports lazily inside its first ``acompletion``.
FIRST_CALL_MODULES = (
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


def warm_up() -> None:
    """Right after litellm's import (``models/litellm_import.py``): its first call's imports, then
    ``gc.freeze``. Nothing with the fast paths off."""
    if not fastpaths.enabled():
        return
    for module in FIRST_CALL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    gc.freeze()
