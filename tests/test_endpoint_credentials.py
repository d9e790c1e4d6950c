"""A credential written into a pipeline (``agentjudge/registry/preflight.py``): a user name or password in an
endpoint URL, a key in its query string, an ``api_key`` or ``Authorization`` header in ``extra``. Each is
refused
before any call, exit 2, one line naming the pipeline file, the model and the field and saying where the
key goes instead; the secret itself appears in no message and no file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY_ENV, FakeLLM
from test_runner import write_pipeline
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.registry.preflight import ModelUse, preflight
from agentjudge.types import ModelSettings

SECRET = "pw-7c1e-secret"
TO_ENV = "name the environment variable holding the API key with api_key_env"


def _judge(**fields: Any) -> dict[str, Any]:
    return {"model": "openai/test-model", "name": "j", "api_key_env": TEST_KEY_ENV, **fields}


def _lines(settings: dict[str, Any]) -> list[str]:
    return preflight([ModelUse("judge", ModelSettings(**settings), "judges[0]")])


def test_a_user_name_or_password_in_an_endpoint_url_is_refused_without_showing_it(
    fake_llm: FakeLLM,
) -> None:
    good = fake_llm.base_url
    with_password = good.replace("http://", f"http://judge:{SECRET}@")
    (line,) = _lines(_judge(api_bases=[good, with_password]))
    assert line == (
        f"judges[0] ('openai/test-model'): api_bases[1] {good} has a user name or password in it "
        "(user:password@host), which litellm refuses next to an API key; remove them from the URL: for basic "
        "auth set headers_env: {Authorization: VAR} with VAR holding 'Basic <base64 of user:password>', or "
        f"{TO_ENV}"
    )
    (line,) = _lines(_judge(api_base=good.replace("http://", "http://judge@")))  # a user name alone
    assert line.startswith(f"judges[0] ('openai/test-model'): api_base {good} has a user name or password")
    assert _lines(_judge(api_bases=[good])) == [] and _lines(_judge(api_base=good)) == []
    assert fake_llm.requests == []  # no call was made


def test_a_key_in_a_query_string_is_refused_and_another_query_is_not(fake_llm: FakeLLM) -> None:
    good = fake_llm.base_url
    (line,) = _lines(_judge(api_base=f"{good}?api-key={SECRET}&x=1"))
    assert line.startswith(f"judges[0] ('openai/test-model'): api_base {good} has a credential in its query")
    assert "(api-key=...)" in line and TO_ENV in line and SECRET not in line
    (line,) = _lines(_judge(api_bases=[good, f"{good}?code={SECRET}"]))
    assert "api_bases[1]" in line and "(code=...)" in line and SECRET not in line
    assert _lines(_judge(api_base=f"{good}?api-version=2024-06-01")) == []  # not a key: checked as before


def test_a_credential_in_extra_is_refused_at_any_depth() -> None:
    extra: dict[str, Any] = {
        "api_key": SECRET,
        "extra_headers": {"Authorization": f"Bearer {SECRET}", "X-Title": "agentjudge"},
        "extra_body": {"clients": [{"Client-Secret": SECRET}]},
    }
    lines = _lines({"model": "baseline/rule", "extra": extra})  # any kind: the file is the problem
    where = "judges[0] ('baseline/rule'): "
    assert [line.removeprefix(where).split(" holds")[0] for line in lines] == [
        "extra.api_key",
        "extra.extra_headers.Authorization",
        "extra.extra_body.clients[0].Client-Secret",
    ]
    assert all(line.startswith(where) and SECRET not in line for line in lines)
    assert TO_ENV in lines[0] and TO_ENV in lines[2] and "(the API key)" not in lines[1]
    assert lines[1].endswith(
        "remove it: set headers_env: {Authorization: VAR} instead, VAR naming the variable holding it"
    )
    harmless = {"extra_headers": {"X-Title": "agentjudge"}, "max_tokens": 5, "budget_tokens": 10}
    assert _lines({"model": "baseline/rule", "extra": harmless}) == []


def test_the_run_command_refuses_it_in_one_line_and_writes_nothing(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTJUDGE_CACHE", str(tmp_path / "calls.sqlite"))
    urls = [fake_llm.base_url, fake_llm.base_url.replace("http://", f"http://judge:{SECRET}@")]
    pipeline = write_pipeline(tmp_path, judges=[_judge(api_bases=urls)], conditions=["with_gt"])
    rundir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(rundir)])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: {pipeline}: judges[0] ('openai/test-model'): api_bases[1] {fake_llm.base_url} has a user "
        "name or password"
    )
    assert SECRET not in result.output and "Traceback" not in result.output
    assert not rundir.exists() and fake_llm.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline.yaml", "records.jsonl"]  # no cache


def test_an_api_key_field_is_refused_with_where_the_key_goes_and_not_shown(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=[_judge(api_key=SECRET)], conditions=["with_gt"])
    result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and SECRET not in result.output and "Traceback" not in result.output
    assert result.output.strip() == (
        f"error: {pipeline}: key `judges[0].api_key`: unknown key (keys are read from the environment: "
        "name the variable with api_key_env)"
    )


# ------------------------------------------------------------------------ --probe, os.environ/, names
def _with_credential(kind: str, base: str) -> dict[str, Any]:
    if kind == "query":
        return {"api_base": f"{base}?api-key={SECRET}"}
    if kind == "userinfo":
        return {"api_base": base.replace("http://", f"http://judge:{SECRET}@")}
    return {"api_base": base, "extra": {"extra_headers": {"Authorization": f"Bearer {SECRET}"}}}


@pytest.mark.parametrize("kind", ["query", "userinfo", "extra-header"])
def test_probe_sends_nothing_for_a_model_refused_for_a_credential(
    tmp_path: Path, fake_llm: FakeLLM, kind: str
) -> None:
    fake_llm.set_responder(lambda req: "OK")
    bad = _with_credential(kind, fake_llm.base_url)
    other = FakeLLM().start()  # a good model next to it is still probed: the probe itself works
    other.set_responder(lambda req: "OK")
    try:
        good = _judge(name="good", api_base=other.base_url)
        lines = preflight(
            [ModelUse("judge", ModelSettings(**_judge(**bad)), "judges[0]"),
             ModelUse("judge", ModelSettings(**good), "judges[1]")],
            probe=True,
        )  # fmt: skip
        assert len(lines) == 1 and lines[0].startswith("judges[0]") and SECRET not in lines[0]
        assert fake_llm.seen == []  # neither GET /models nor the 1-token call
        assert other.seen == ["GET /v1/models", "POST /v1/chat/completions"]
        pipeline = write_pipeline(tmp_path, judges=[_judge(**bad)], conditions=["with_gt"])
        result = CliRunner().invoke(app, ["run", str(pipeline), "--out", str(tmp_path / "run"), "--probe"])
        assert result.exit_code == 2 and SECRET not in result.output and "Traceback" not in result.output
        assert [line for line in result.output.splitlines() if line.startswith("error:")] == [
            f"error: {pipeline}: {lines[0]}"
        ]
        assert fake_llm.seen == [] and not (tmp_path / "run").exists()
    finally:
        other.stop()


def test_a_litellm_environment_reference_in_extra_is_not_refused() -> None:
    # litellm reads "os.environ/NAME" itself (bedrock's aws_* settings, Azure AD's client_secret): no secret
    extra = {
        "aws_secret_access_key": "os.environ/AWS2_SECRET",
        "aws_session_token": "os.environ/AWS2_TOKEN",
        "client_secret": "os.environ/AZURE_CLIENT_SECRET",
    }
    assert _lines({"model": "baseline/rule", "extra": extra}) == []
    (line,) = _lines({"model": "baseline/rule", "extra": {**extra, "client_secret": SECRET}})
    assert line.startswith("judges[0] ('baseline/rule'): extra.client_secret holds a credential")
    assert "write 'os.environ/VAR' as its value" in line and SECRET not in line


@pytest.mark.parametrize(
    "query",
    ["subscription-key=S", "api%2Dkey=S", "a=1;api-key=S", "secret_key=S", "auth=S", "subscription_key=S",
     "x_token=S", "my-key=S", "api+key=S"],
)  # fmt: skip
def test_more_query_names_are_refused(fake_llm: FakeLLM, query: str) -> None:
    (line,) = _lines(_judge(api_base=f"{fake_llm.base_url}?{query.replace('S', SECRET)}"))
    assert "has a credential in its query string" in line and SECRET not in line
    assert fake_llm.seen == []


def test_ordinary_query_parameters_pass(fake_llm: FakeLLM) -> None:
    query = "api-version=2024-06-01&api_version=1&max_tokens=5&budget_tokens=3;deployment=x&tokens=2"
    assert _lines(_judge(api_base=f"{fake_llm.base_url}?{query}")) == []
    assert fake_llm.seen == ["GET /v1/models"]  # checked as before


def test_more_credential_names_in_extra_are_refused_and_ordinary_parameters_pass() -> None:
    refused = {
        "azure_ad_token": SECRET,
        "vertex_credentials": '{"private_key": "' + SECRET + '"}',
        "aws_bearer_token_bedrock": SECRET,
        "watsonx_token": SECRET,
        "extra_headers": {
            "Ocp-Apim-Subscription-Key": SECRET,
            "Helicone-Auth": f"Bearer {SECRET}",
            "Cookie": f"session={SECRET}",
            "X-Title": "agentjudge",
        },
    }
    lines = _lines({"model": "baseline/rule", "extra": refused})
    assert [line.split(": ", 1)[1].split(" holds")[0] for line in lines] == [
        "extra.azure_ad_token",
        "extra.vertex_credentials",
        "extra.aws_bearer_token_bedrock",
        "extra.watsonx_token",
        "extra.extra_headers.Ocp-Apim-Subscription-Key",
        "extra.extra_headers.Helicone-Auth",
        "extra.extra_headers.Cookie",
    ]
    assert all(SECRET not in line for line in lines)
    ordinary = {
        "max_tokens": 5,
        "budget_tokens": 10,
        "api_version": "2024-06-01",
        "prompt_cache_key": "k",
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "extra_body": {"skip_special_tokens": True, "min_tokens": 1},
        "extra_headers": {"X-Title": "agentjudge", "api-version": "1"},
    }
    assert _lines({"model": "baseline/rule", "extra": ordinary}) == []


def test_a_credential_in_api_base_on_the_command_line_is_named_by_its_flag(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-other-key-1234")  # a --judge model reads the provider's
    pipeline = write_pipeline(tmp_path, judges=[_judge()], conditions=["with_gt"])
    url = f"{fake_llm.base_url}?api-key={SECRET}"
    args = ["run", str(pipeline), "--out", str(tmp_path / "run"), "--judge", "openai/test-model"]
    result = CliRunner().invoke(app, [*args, "--api-base", url, "--probe"])
    assert result.exit_code == 2 and SECRET not in result.output and "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: --judge[0] ('openai/test-model'): --api-base {fake_llm.base_url} has a")
    assert line.endswith(
        "remove it from the URL: export the key in the variable the provider reads (e.g. OPENAI_API_KEY), "
        "or name the model in a pipeline with api_key_env or headers_env"
    )
    assert fake_llm.seen == []


# ------------------------------------------------------------------- what is not a credential
def test_an_empty_user_name_in_an_endpoint_url_is_no_credential(fake_llm: FakeLLM) -> None:
    """``http://@host``: nothing is sent for it and the calls go through, so it is accepted (probed, and
    answered); a password, even an empty one, is still refused (litellm's client refuses every call)."""
    fake_llm.set_responder(lambda req: "OK")
    empty = fake_llm.base_url.replace("http://", "http://@")
    uses = [
        ModelUse("judge", ModelSettings(**_judge(api_base=empty)), "judges[0]"),
        ModelUse(
            "judge", ModelSettings(**_judge(name="k", api_bases=[fake_llm.base_url, empty])), "judges[1]"
        ),
    ]
    assert preflight(uses, probe=True) == []
    assert fake_llm.seen.count("POST /v1/chat/completions") == 3  # one probe per model, per fleet endpoint
    (line,) = _lines(_judge(api_base=fake_llm.base_url.replace("http://", "http://:@")))
    assert line.startswith(f"judges[0] ('openai/test-model'): api_base {fake_llm.base_url} has a user name")


def test_flags_about_a_credential_and_tokens_of_text_are_not_credentials() -> None:
    ordinary = {
        "no_password": True,
        "no-password": "yes",
        "require_api_key": False,
        "skip_auth_token": 1,
        "is_secret": "no",
        "eos_token": "</s>",
        "next_page_token": "p2",
        "extra_body": {"chat_template_kwargs": {"bos_token": "<s>", "pad_token": "<pad>"}},
        "use_auth_token": True,  # true, false or null holds no secret, whatever the name
        "password": None,
    }
    assert _lines({"model": "baseline/rule", "extra": ordinary}) == []


def test_credentials_are_still_refused_next_to_names_that_are_not() -> None:
    refused = {
        "password": SECRET,
        "api_key": SECRET,
        "x_api_key": SECRET,
        "token": SECRET,
        "secret": SECRET,
        "auth_token": SECRET,
        "use_auth_token": SECRET,  # Hugging Face's takes the token itself
        "refresh_token": SECRET,
        "passwd": 123456,  # a number can be a password (true/false cannot)
        "private_key": SECRET,
        "clientSecret": SECRET,  # camelCase
        "minio_secret_key": SECRET,
        "azure_credentials": SECRET,
        "extra_headers": {
            "X-Api-Key": SECRET,
            "no-cache": "1",
            "cf-aig-authorization": SECRET,  # Cloudflare AI Gateway
            "x-functions-key": SECRET,  # Azure Functions
            "api-subscription-key": SECRET,
            "maxTokens": "1",  # camelCase, not a credential
        },
    }
    lines = _lines({"model": "baseline/rule", "extra": refused})
    headers = ["X-Api-Key", "cf-aig-authorization", "x-functions-key", "api-subscription-key"]
    assert [line.split(": ", 1)[1].split(" holds")[0] for line in lines] == [
        f"extra.{name}" for name in list(refused)[:-1]
    ] + [f"extra.extra_headers.{name}" for name in headers]
    assert all(SECRET not in line for line in lines)
