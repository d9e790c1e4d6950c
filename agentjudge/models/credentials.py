"""Credentials: read from the environment at call time, and scrubbed out of everything that is kept.

A model's settings name its credentials by environment variable (``api_key_env``, ``headers_env``); their
values are read when a call is made and never reach a file, a log or an error: ``secrets_of`` lists what
to scrub (the call's own key and header values, and every key-like variable of the environment, which
litellm may read itself) and ``scrub`` replaces them. Kept apart from ``client`` so that batch mode's
provider calls (``models/batch.py``, ``runner/batches.py``) read the same headers, raise the same error and
scrub the same values as a direct call without importing the client (which imports batch mode lazily)."""

from __future__ import annotations

import os
import re

from agentjudge.fastpaths.env_scan import matching_values
from agentjudge.types import ModelSettings


class MissingCredentialError(Exception):
    """A credential the pipeline names (``headers_env``) is not in the environment: an ``auth`` failure."""


def env_headers(settings: ModelSettings) -> dict[str, str]:
    """The ``headers_env`` headers with their values read from the environment now ("" for an unset one)."""
    return {header: os.environ.get(var, "") for header, var in settings.headers_env.items()}


def required_env_headers(settings: ModelSettings) -> dict[str, str]:
    """``env_headers``, every one set: else ``MissingCredentialError`` naming each unset variable and its
    header (never a value)."""
    headers = env_headers(settings)
    unset = [f"{var} ({header})" for header, var in settings.headers_env.items() if not headers[header]]
    if unset:
        raise MissingCredentialError(
            f"environment variable {', '.join(unset)} (headers_env) is not set or empty"
        )
    return headers


_SECRET_ENV_RE = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)
# A value shorter than this is a placeholder, not a secret: local servers take any key, and "EMPTY", "none" or
# "x" is what users give them. Scrubbed, it would be replaced in every answer and error it occurs in (a
# judge's "none" rationale, a word of a generated argument), corrupting what is stored.
MIN_SECRET_CHARS = 8


def settings_secrets(settings: ModelSettings) -> list[str]:
    """``secrets_of`` a model's own key and ``headers_env`` values, read from the environment."""
    api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    return secrets_of(api_key, env_headers(settings))


def secrets_of(api_key: str | None, headers: dict[str, str] | None = None) -> list[str]:
    """Values to scrub: the call's key, its ``headers_env`` values (and the credential after a scheme such
    as ``Basic``/``Bearer``), and every key-like env var (litellm reads e.g. OPENAI_API_KEY itself when no
    ``api_key_env`` is given, and a provider may echo it in an error), of ``MIN_SECRET_CHARS`` or more."""
    values = set(matching_values(_SECRET_ENV_RE))
    if api_key:
        values.add(api_key)
    for value in (headers or {}).values():
        values.add(value)
        values.add(value.partition(" ")[2].strip())
    values = {value for value in values if len(value) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)  # longest first: no partial replacement of a longer key


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
