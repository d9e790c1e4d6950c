"""Credentials a model's settings name by environment variable (``headers_env``), read at call time.

Kept apart from ``client`` so that batch mode's provider calls (``models/batch.py``) read the same headers and
raise the same error as a direct call without importing the client (which imports batch mode lazily)."""

from __future__ import annotations

import os

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
