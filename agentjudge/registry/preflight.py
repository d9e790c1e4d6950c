"""Preflight: every mistake in a run's model set-up found before the first unit, one line per problem.

Why: without it a missing key, a typo'd model name or a placeholder left in a pipeline shows up as
thousands of failed units (and money spent on the ones that did not fail). Checked for every model of an
invocation, pipeline and command line alike, without spending anything (unless ``probe``):

* no placeholder (``REPLACE-ME``) in any of the model's settings;
* no user name or password in an ``api_base`` / ``api_bases`` URL (``user:password@host``): litellm
  refuses such a URL next to the API key it sends, so every call would fail (retried as a server error;
  an empty user name with no password, ``http://@host``, is none and passes);
  no key in its query string either (``?api-key=``: litellm appends the request path after the query, so
  every call goes to a wrong URL, and a server's "no route" answer echoes the key into errors and
  results). A key belongs in the environment (``api_key_env``; another header, or basic auth's
  ``Authorization``: ``headers_env``); the message shows the URL without them;
* no credential in ``extra`` (``api_key``, an ``Authorization`` header, ...: any key of that name, at any
  depth, unless its value is litellm's ``os.environ/VAR`` reference or true/false/null; a flag about a
  credential, ``no_password``, and a text token, ``eos_token``, are no credential): ``extra`` is part of the
  configuration written to meta.json and run.sqlite. A model refused for a credential is sent nothing:
  neither ``GET /models`` nor ``probe``'s call (that call would carry it, and an error would echo it);
* ``sim/``, ``baseline/`` and plugin names resolve (``model_strings.model_problem``);
* a litellm model: litellm resolves its provider; the key variable it needs is set (named in the message:
  ``api_key_env`` if given, else the provider's own, e.g. ``OPENAI_API_KEY``), and every ``headers_env`` one;
* a provider with no default host (``hosted_vllm``, ``azure``) has an ``api_base`` (or the environment's);
* an ``api_base``, every endpoint of ``api_bases``, or the provider base URL the environment sets
  (``OPENAI_BASE_URL``, ...) answers ``GET {api_base}/models`` (any HTTP status counts as an answer; the URL
  is shown without userinfo or query string);
* ``probe``: one real 1-token call per litellm model, per endpoint of a fleet (catches a wrong model name,
  a rejected key, or a replica serving another model);
* ``max_cost``: the model has a price (litellm's, or ``input/output_cost_per_token`` in the pipeline) and a
  bound on its answer length (``max_tokens``, or litellm's limit for the model).

Values of keys are never read into a message; only variable names are.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote_plus, urlsplit

from agentjudge.models.fleet import redact_url
from agentjudge.types import ModelSettings

PLACEHOLDER_RE = re.compile(r"REPLACE[-_ ]?ME", re.IGNORECASE)
Role = Literal["generator", "judge"]


@dataclass(frozen=True)
class ModelUse:
    """One model of an invocation: its role and where it was named (``judges[2]``, ``--judge``)."""

    role: Role
    settings: ModelSettings
    where: str


def uses_of(generators: Iterable[ModelSettings], judges: Iterable[ModelSettings]) -> list[ModelUse]:
    out = [ModelUse("generator", s, f"generators[{i}]") for i, s in enumerate(generators)]
    return out + [ModelUse("judge", s, f"judges[{i}]") for i, s in enumerate(judges)]


def _placeholder_fields(settings: ModelSettings) -> list[str]:
    found = []
    for key, value in settings.model_dump(mode="json").items():
        text = value if isinstance(value, str) else json.dumps(value)
        if PLACEHOLDER_RE.search(text):
            found.append(key)
    return found


def _has_userinfo(url: str) -> bool:
    """A user name or password in ``url``. An empty user name with no password (``http://@host``) is none:
    nothing is sent for it and litellm's calls go through, so it is accepted like the URL without the
    ``@``. A password, even an empty one (``http://:@host``), is refused: litellm's HTTP client then
    refuses every call ("cannot combine AUTHORIZATION header with ... credentials encoded in URL")."""
    try:
        parts = urlsplit(url)
    except ValueError:  # unparseable: the answer check reports it
        return False
    return bool(parts.username) or parts.password is not None


def _query_credentials(url: str) -> list[str]:
    """Names of query parameters of ``url`` that hold a credential (``?api-key=``, ``?code=``, ...), read
    as a server reads them: percent-decoded, ``&`` or ``;`` between parameters."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return []
    names = [unquote_plus(pair.partition("=")[0]) for pair in re.split(r"[&;]", query) if pair]
    return [n for n in names if _is_credential_name(n) or _is_query_key(n)]


# what to use instead of a credential written into the pipeline, by where it was written
_USE_KEY_ENV = "name the environment variable holding the API key with api_key_env"
_USE_HEADER_ENV = "send another credential as a header with headers_env: {Header: NAME of the variable}"
_USE_BASIC = (
    "for basic auth set headers_env: {Authorization: VAR} with VAR holding 'Basic <base64 of user:password>'"
)
# names of settings that hold a credential (lower case, '-' and spaces as '_'), anywhere in ``extra``
_CREDENTIAL_NAMES = frozenset(
    {
        "api_key",
        "apikey",
        "x_api_key",
        "api_token",
        "access_token",
        "auth_token",
        "bearer_token",
        "authorization",
        "proxy_authorization",
        "auth",
        "password",
        "passwd",
        "passphrase",
        "token",
        "secret",
        "private_key",
        "credentials",
        "secret_key",
        "client_secret",
        "subscription_key",
        "ocp_apim_subscription_key",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_bearer_token_bedrock",
        "azure_ad_token",
        "vertex_credentials",
        "helicone_auth",
        "cookie",
    }
)
# a singular ``_token`` (``watsonx_token``); ``max_tokens``, ``budget_tokens`` are plural and pass; a
# gateway's own header (``cf-aig-authorization``, ``x-functions-key``, ``api-subscription-key``)
_CREDENTIAL_SUFFIXES = (
    "_api_key", "_secret", "_password", "_token", "_authorization", "_credentials", "_secret_key",
    "_subscription_key", "_functions_key", "_access_key",
)  # fmt: skip
# a first word that makes such a name a setting about a credential, not one: a negation or a flag
# (``no_password``, ``require_api_key``, ``skip_auth_token``, ``is_secret``); ``use_auth_token`` is not one of
# them (Hugging Face's takes the token itself)
_FLAG_WORDS = frozenset(
    {"no", "not", "without", "skip", "disable", "disabled", "omit", "ignore", "allow", "enable", "enabled"}
    | {"require", "requires", "required", "need", "needs", "has", "have", "is", "max", "min", "num"}
)
# a word before ``_token`` that makes it a token of text or a page of results, not a credential
# (``eos_token``, ``pad_token``, ``skip_special_token``, ``next_page_token``)
_TEXT_TOKENS = frozenset(
    {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "stop", "special", "start", "end", "image", "audio"}
    | {"video", "first", "last", "next", "page", "pagination", "continuation", "cursor"}
)
_QUERY_KEY_NAMES = frozenset({"key", "token", "code", "sig"})  # also keys in a URL (e.g. Azure's ?code=)
# a litellm reference to an environment variable, resolved by litellm itself: no secret in the file
ENV_REFERENCE = "os.environ/"


def _normal(name: object) -> str:
    """``clientSecret``, ``Client-Secret`` and ``client secret`` all as ``client_secret``."""
    return re.sub(r"[-\s]", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(name)).lower())


def _is_credential_name(key: object) -> bool:
    """Does ``key`` name a credential: a known name (``password``, ``api_key``, ``token``, ...) or one ending
    like a credential (``x_api_key``, ``auth_token``, ``client_secret``), unless its words say it is a flag
    about one (``no_password``) or a token of text (``eos_token``)?"""
    name = _normal(key)
    if name not in _CREDENTIAL_NAMES and not name.endswith(_CREDENTIAL_SUFFIXES):
        return False
    words = name.split("_")
    if len(words) > 1 and words[0] in _FLAG_WORDS:
        return False
    return not (len(words) > 1 and words[-1] == "token" and words[-2] in _TEXT_TOKENS)


def _is_query_key(name: str) -> bool:
    """Query names that hold a key only in a URL (``?subscription-key=``, ``?code=``); in ``extra`` a
    ``..._key`` is often a plain parameter (``prompt_cache_key``)."""
    name = _normal(name)
    return name in _QUERY_KEY_NAMES or name.endswith("_key")


def _credential_problems(settings: ModelSettings, command_line: bool = False) -> list[str]:
    """One line per endpoint URL of ``settings`` that carries userinfo or a credential in its query
    string, and per credential-named key of ``extra``, naming the field, never the value (a URL is shown
    through ``redact_url``), and saying what to use instead. ``command_line``: a model named by a flag,
    whose URL came from ``--api-base`` (no flag names a key variable: a pipeline entry does)."""
    urls = [("--api-base" if command_line else "api_base", settings.api_base)] if settings.api_base else []
    urls += [(f"api_bases[{i}]", url) for i, url in enumerate(settings.api_bases or [])]
    found = []
    cli = (
        "export the key in the variable the provider reads (e.g. OPENAI_API_KEY), or name the model in a "
        "pipeline with api_key_env or headers_env"
    )
    for field, url in urls:
        if _has_userinfo(url):
            instead = cli if command_line else f"{_USE_BASIC}, or {_USE_KEY_ENV}"
            found.append(
                f"{field} {redact_url(url)} has a user name or password in it (user:password@host), which "
                f"litellm refuses next to an API key; remove them from the URL: {instead}"
            )
        elif names := _query_credentials(url):
            instead = cli if command_line else f"{_USE_KEY_ENV}, or {_USE_HEADER_ENV}"
            found.append(
                f"{field} {redact_url(url)} has a credential in its query string ({', '.join(names)}=...), "
                f"which litellm puts before the request's path (every call would go to a wrong URL); "
                f"remove it from the URL: {instead}"
            )
    for path, header in _credential_keys(settings.extra, "extra"):
        instead = (
            f"set headers_env: {{{path.rsplit('.', 1)[-1]}: VAR}} instead, VAR naming the variable holding it"
            if header
            else f"{_USE_KEY_ENV}, or write '{ENV_REFERENCE}VAR' as its value for litellm to read"
        )
        found.append(
            f"{path} holds a credential, and extra is written to the run's meta.json; remove it: {instead}"
        )
    return found


def _holds_no_secret(value: object) -> bool:
    return (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, str) and value.startswith(ENV_REFERENCE))
    )


def _credential_keys(value: object, path: str, header: bool = False) -> list[tuple[str, bool]]:
    """Where in ``value`` (nested dicts and lists) a key names a credential, as (``extra.a.b`` path, whether
    it is an HTTP header of ``extra_headers``). A litellm ``os.environ/VAR`` reference holds no secret, and
    neither does true, false or null (``use_auth_token: true``, ``password: null``)."""
    if isinstance(value, dict):
        found = []
        for key, inner in value.items():
            if _is_credential_name(key):
                if not _holds_no_secret(inner):
                    found.append((f"{path}.{key}", header))
            else:
                found += _credential_keys(inner, f"{path}.{key}", header or key == "extra_headers")
        return found
    if isinstance(value, list):
        return [p for i, inner in enumerate(value) for p in _credential_keys(inner, f"{path}[{i}]", header)]
    return []


def _provider_problem(settings: ModelSettings) -> str | None:
    from agentjudge.models.litellm_import import litellm_module as _litellm

    litellm = _litellm()
    try:
        base = settings.api_bases[0] if settings.api_bases else settings.api_base
        _, provider, _, _ = litellm.get_llm_provider(settings.model, api_base=base)
    except Exception:  # noqa: BLE001 - litellm raises BadRequestError for an unknown provider
        return (
            "litellm cannot tell which provider serves this model; write it as provider/model "
            "(e.g. openai/gpt-4o-mini, hosted_vllm/NAME, ollama/NAME), or use sim/<profile>, "
            "baseline/<name> or module:factory"
        )
    if settings.api_key_env:
        value = os.environ.get(settings.api_key_env, "")
        if not value:
            return f"environment variable {settings.api_key_env} (api_key_env) is not set or empty"
        if PLACEHOLDER_RE.search(value):
            return f"environment variable {settings.api_key_env} holds a placeholder, not a key"
        return None
    try:
        missing = litellm.validate_environment(settings.model).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - no rule for this provider: nothing to check
        missing = []
    missing = [k for k in missing if not k.endswith("_API_BASE")]  # a base is checked by answering
    if missing:
        names = " and ".join(missing)
        return (
            f"provider {provider} needs {names} in the environment (not set); export it, or name "
            "another variable with api_key_env"
        )
    return None


def _no_host_problem(settings: ModelSettings, command_line: bool) -> str | None:
    """A provider with no default host (``hosted_vllm``: litellm would send its calls to api.openai.com;
    ``azure``) named without an endpoint: refused before any call, instead of failing every one."""
    from agentjudge.models.endpoints import DEFAULT_ENDPOINTS, endpoint_override, provider_of

    provider = provider_of(settings.model)
    if settings.api_base or settings.api_bases or provider not in DEFAULT_ENDPOINTS:
        return None
    names, default = DEFAULT_ENDPOINTS[provider]
    if default is not None or endpoint_override(settings.model):
        return None
    where = "--api-base URL" if command_line else "api_base: URL on the model's entry"
    return (
        f"provider {provider} has no default host: give its server's address with {where} "
        f"(e.g. http://127.0.0.1:8000/v1), or set {' / '.join(names)} in the environment"
    )


def _header_env_problems(settings: ModelSettings) -> list[str]:
    """A ``headers_env`` variable that is not set (or holds a placeholder), named, never its value."""
    out = []
    for header, var in settings.headers_env.items():
        value = os.environ.get(var, "")
        if not value:
            out.append(f"environment variable {var} (headers_env {header}) is not set or empty")
        elif PLACEHOLDER_RE.search(value):
            out.append(f"environment variable {var} (headers_env {header}) holds a placeholder, not a value")
    return out


def _endpoints_to_check(settings: ModelSettings) -> list[str]:
    """The endpoints ``GET /models`` checks: ``api_bases``, ``api_base``, or the provider's base URL set in
    the environment (``OPENAI_BASE_URL``, ...). A provider's own default address is not asked (the preflight
    stays offline for a dry run): a run that cannot reach it stops after its first call (``unreachable``)."""
    from agentjudge.models.endpoints import endpoint_override

    if settings.api_bases:
        return list(settings.api_bases)
    if settings.api_base:
        return [settings.api_base]
    override = endpoint_override(settings.model)
    return [override] if override else []


def _api_base_problem(api_base: str, timeout_s: float = 3.0) -> str | None:
    # without userinfo/query: urllib cannot send user:password@ itself, and any HTTP status is an answer
    url = redact_url(api_base).rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # it answered (401/404 are answers: the server is there)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return (
            f"api_base {redact_url(api_base)} does not answer: connection failed (GET {url}: {reason}); "
            "check the URL, that the server is up, and the network"
        )


def _cost_problem(settings: ModelSettings) -> str | None:
    from agentjudge.models.prices import max_completion_tokens, model_prices

    if model_prices(settings) is None:
        return (
            "--max-cost needs a price and litellm has none for this model; set input_cost_per_token and "
            "output_cost_per_token (USD) on it in the pipeline"
        )
    if max_completion_tokens(settings) is None:
        return "--max-cost needs a bound on the answer length: set max_tokens on it in the pipeline"
    return None


# a 1-token call answers in seconds from a server that works; one that takes the connection and never
# answers would otherwise hold the preflight for the model's whole timeout (120 s by default)
PROBE_TIMEOUT_S = 15.0


async def _probe(settings: ModelSettings) -> str | None:
    from agentjudge.judges.llm import call_settings
    from agentjudge.models.client import ModelClient
    from agentjudge.models.errors import ModelCallError
    from agentjudge.models.failures import clip

    client = ModelClient(cache=None)
    try:  # judge-only extra keys (thinking switches) are not provider parameters: send what a judge would
        call = call_settings(settings, cot=False)
    except ValueError as exc:
        return f"--probe: {exc}"
    timeout = min(settings.timeout_s, PROBE_TIMEOUT_S)
    one_token = call.model_copy(update={"max_tokens": 1, "max_retries": 0, "timeout_s": timeout})
    try:
        await client.complete(one_token, [{"role": "user", "content": "Say OK."}])
    except ModelCallError as exc:
        if exc.kind == "empty_response":
            return None  # it answered, with nothing in one token: the model and key work
        if exc.kind == "timeout" or (exc.kind == "unreachable" and exc.message.startswith("no answer")):
            return (
                f"--probe: no answer to a 1-token call within {timeout:g} s (the server took the "
                "connection and said nothing); check that the model is loaded and the server is not hung"
            )
        return f"--probe: a 1-token call failed: {exc.kind}: {clip(exc.message, 600)}"
    return None


def preflight(
    uses: list[ModelUse],
    *,
    max_cost: float | None = None,
    probe: bool = False,
    cache: Path | None = None,
    cache_key: str | None = None,
) -> list[str]:
    """Every problem found, one line each, ``"{where} ({model}): {problem}"``; empty when all is well.
    ``cache``: the call cache the models will use (None: ``$AGENTJUDGE_CACHE`` or the default), checked
    when some model calls through it; ``cache_key`` names where it was given (a pipeline's ``cache`` key)."""
    from agentjudge.registry.model_strings import model_kind, model_problem

    problems: list[str] = []
    if any(model_kind(u.settings.model) in ("litellm", "plugin") for u in uses):
        problems += _cache_problems(cache, cache_key)
    bases_checked: dict[str, str | None] = {}
    to_probe: list[tuple[str, ModelSettings]] = []  # (where, settings); a fleet: one per endpoint
    for use in uses:
        s = use.settings

        def say(problem: str, s: ModelSettings = s, use: ModelUse = use) -> None:
            problems.append(f"{use.where} ({s.model!r}): {problem}")

        placeholders = _placeholder_fields(s)
        if placeholders:
            say(f"placeholder REPLACE-ME left in {', '.join(placeholders)}; fill it in")
            continue
        credentials = _credential_problems(s, use.where.startswith("--"))  # any kind of model
        for credential in credentials:
            say(credential)
        kind = model_kind(s.model)
        if kind != "litellm":
            problem = model_problem(s.model, use.role)
            if problem:
                say(problem)
            continue
        found = [
            _provider_problem(s),
            _no_host_problem(s, use.where.startswith("--")),
            *_header_env_problems(s),
        ]
        # a model refused for a credential is sent nothing, not even GET /models (its URL may hold it)
        for base in [] if credentials else _endpoints_to_check(s):
            if base not in bases_checked:
                bases_checked[base] = _api_base_problem(base)
            found.append(bases_checked[base])
        if max_cost is not None:
            found.append(_cost_problem(s))
        for problem in found:
            if problem:
                say(problem)
        if probe and not credentials and not any(found):
            for one in _each_endpoint(s):
                at = f" endpoint {redact_url(one.api_base or '')}" if s.api_bases else ""
                to_probe.append((use.where + at, one))
    if to_probe:
        probed = asyncio.run(_probe_all([s for _, s in to_probe]))
        for (where, s), problem in zip(to_probe, probed, strict=True):
            if problem:
                problems.append(f"{where} ({s.model!r}): {problem}")
    return problems


def _cache_problems(cache: Path | None, cache_key: str | None) -> list[str]:
    """The call cache, named as it was given: the pipeline's key, ``AGENTJUDGE_CACHE``, or the default."""
    from agentjudge.models.cache import cache_problem

    problem = cache_problem(cache)
    if problem is None:
        return []
    if cache is not None and cache_key:
        where = cache_key
    elif cache is None and os.environ.get("AGENTJUDGE_CACHE"):
        where = "AGENTJUDGE_CACHE"
    else:
        where = "the call cache"
    return [f"{where}: {problem}"]


def _each_endpoint(settings: ModelSettings) -> list[ModelSettings]:
    """A fleet as one single-endpoint model per ``api_bases`` entry (each is probed); else the model."""
    if not settings.api_bases:
        return [settings]
    return [settings.model_copy(update={"api_base": url, "api_bases": None}) for url in settings.api_bases]


async def _probe_all(models: list[ModelSettings]) -> list[str | None]:
    return list(await asyncio.gather(*(_probe(s) for s in models)))
