"""A small finished run for the people tests (labelling, human-agree, the report's section), and the HTTP
helpers that talk to a label server as a browser or an attacker would.

The run: the shipped mini split (60 base scenarios, six topologies) at easy and hard, three simulated
generators, a rule-based baseline and a simulated judge, with and without GT; about three seconds.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import Any

import yaml

from agentjudge import api
from agentjudge.resources import data_dir
from agentjudge.viewer.serving import TOKEN_HEADER


def build_people_run(folder: Path) -> Path:
    pipeline = {
        "name": "people-test",
        "dataset": str(data_dir() / "mini" / "records.jsonl"),
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/mid", "sim/perfect"],
        "judges": ["baseline/rule", "simjudge/careful"],
        "conditions": ["with_gt", "without_gt"],
        "scoring": "both",
        "concurrency": 8,
        "cache": "cache.sqlite",
        "seed": 0,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")
    result = api.run(path, folder / "run")
    assert result.status == "complete"
    return folder / "run"


def request(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
    host: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, Any]:
    """One request to 127.0.0.1:``port`` with the Host header ``host`` (default the server's own name)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": f"127.0.0.1:{port}" if host is None else host}
    if token is not None:
        headers[TOKEN_HEADER] = token
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode("utf-8"))
    if data is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    kind = response.getheader("Content-Type") or ""
    return response.status, json.loads(payload) if kind.startswith("application/json") else payload.decode()


def page_token(port: int) -> str:
    """The token the served page carries, read as the page's script reads it."""
    status, page = request(port, "GET", "/")
    assert status == 200
    found = re.search(r'<meta name="agentjudge-token" content="([^"]+)">', page)
    assert found, page[:400]
    return found.group(1)


def label_body(
    entry: dict[str, Any], verdicts: dict[str, float] | None = None, note: str = ""
) -> dict[str, Any]:
    return {
        "record_id": entry["record_id"],
        "generator": entry["generator"],
        "generator_trial": entry["generator_trial"],
        "verdicts": {"tool": 1, "param": 0.5, "seq": 1, "cov": 0} if verdicts is None else verdicts,
        "note": note,
    }
