"""Who is calling, the same on `brisk serve` and `brisk gateway`: one Authorization
parser (src/http/caller_identity.h) answers every case alike on both, in one run.

RFC 9110 (11.4) and RFC 6750 (2.1): credentials = auth-scheme 1*SP token68; the
scheme is case-insensitive, one or more spaces separate it from the token, and
whitespace around the field value is not part of it. A tab between scheme and token,
a missing scheme, another scheme or an empty token is refused (401 invalid_api_key).
"""
import http.client
import json

import pytest

from conftest import BriskServer
from gateway_util import start_engine, start_gateway, write_gateway_config, SMOL

KEY = "sk-caller-a"
KEYS_YAML = f"keys:\n  - {{key: {KEY}, tenant: acme, name: caller-a}}\n"

# (Authorization header or None, accepted?)
CASES = [
    (f"Bearer {KEY}", True),
    (f"bearer {KEY}", True),
    (f"BEARER {KEY}", True),
    (f"bEaReR {KEY}", True),
    (f"Bearer   {KEY}", True),         # 1*SP
    (f"  Bearer {KEY}  ", True),       # whitespace around the field value
    (f"Bearer\t{KEY}", False),         # a tab is not SP
    (f"Bearer \t{KEY}", False),
    (KEY, False),                      # no scheme
    ("Bearer", False),                 # no token
    ("Bearer ", False),
    ("Bearer    ", False),
    (f"Basic {KEY}", False),           # another scheme
    (f"Bearer{KEY}", False),
    (f"Bearer {KEY}x", False),         # another key
    (f"Bearer {KEY[:-1]}", False),
    (None, False),                     # no header
]


def post(url, path, body, auth):
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    try:
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def servers(brisk_bin, tmp_path_factory):
    """A keyed `brisk serve`, and a keyed gateway in front of an open engine."""
    tmp = tmp_path_factory.mktemp("caller_identity")
    serve = BriskServer(brisk_bin, config_text=KEYS_YAML)
    engine = start_engine(brisk_bin, SMOL, "smol")
    cfg = write_gateway_config(tmp / "gateway.yaml", [("small", [engine.url], (0.1, 0.02, 0.4))],
                               KEYS_YAML)
    gateway = start_gateway(brisk_bin, cfg, tmp / "ledger.db")
    yield {"serve": (serve, "SmolLM2-135M-Instruct.Q4_1"), "gateway": (gateway, "small")}
    for p in (gateway, engine, serve):
        p.stop()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_every_authorization_case_answers_alike_on_serve_and_gateway(servers, path):
    answers = {}
    for name, (proc, model) in servers.items():
        for auth, _ in CASES:
            body = {"model": model, "max_tokens": 1, "temperature": 0}
            if path == "/v1/chat/completions":
                body["messages"] = [{"role": "user", "content": "Hi"}]
            else:
                body["prompt"] = "Hi"
            status, data = post(proc.url, path, body, auth)
            code = None
            if status != 200:
                code = json.loads(data)["error"]["code"]
            answers[(name, auth)] = (status, code)
    for auth, accepted in CASES:
        serve, gateway = answers[("serve", auth)], answers[("gateway", auth)]
        assert serve == gateway, f"{auth!r}: serve {serve}, gateway {gateway}"
        want = (200, None) if accepted else (401, "invalid_api_key")
        assert serve == want, f"{auth!r}: {serve}, want {want}"


def test_a_missing_key_and_a_wrong_key_say_which(servers):
    for name, (proc, model) in servers.items():
        body = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        _, missing = post(proc.url, "/v1/chat/completions", body, None)
        assert "Missing API key" in json.loads(missing)["error"]["message"], name
        _, wrong = post(proc.url, "/v1/chat/completions", body, "BEARER sk-nope")
        assert "Incorrect API key" in json.loads(wrong)["error"]["message"], name
