"""Real processes for the gateway's end-to-end tests: `brisk serve` engines and
`brisk gateway` in front of them, on loopback ports, plus a throw-away
PostgreSQL server (scripts/pg_test_server.sh)."""
import contextlib
import http.client
import http.server
import json
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import openai
import pytest

from conftest import skip_or_fail
from server_process import ServerProcess, free_port

REPO = pathlib.Path(__file__).resolve().parents[2]
SMOL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = REPO / "models" / "gemma-3-270m-q4_k_m.gguf"
SMOL_Q8 = REPO / "models" / "SmolLM2-135M-Instruct.Q8_0.gguf"


def variant_model():
    """The Q8_0 variant of the default model (the gateway's third model), made
    once from the installed Q4_1 file by tools/make_variant_model.py."""
    if not SMOL_Q8.exists():
        subprocess.run([sys.executable, str(REPO / "tools" / "make_variant_model.py"), str(SMOL),
                        str(SMOL_Q8)], check=True, capture_output=True, timeout=600)
    return SMOL_Q8


def start_engine(brisk_bin, model, name, port=0, threads=1):
    cmd = [brisk_bin, "serve", "--model", str(model), "--model-name", name, "--port", str(port),
           "--threads", str(threads), "--kv-cache", "64MiB"]
    return ServerProcess(cmd, f"engine {name}")


def write_gateway_config(path, tiers, extra=""):
    """tiers: [(name, [urls], prices(input, cached, output))]"""
    lines = ["server: {port: 0, http_threads: 2}", "replicas: {health_interval_s: 0.2, eject_s: 1}",
             "tiers:"]
    for name, urls, (pin, pcached, pout) in tiers:
        lines.append(f"  - name: {name}")
        lines.append(f"    prices: {{input: {pin}, cached_input: {pcached}, output: {pout}}}")
        lines.append("    upstreams: [" + ", ".join(urls) + "]")
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def start_gateway(brisk_bin, config_path, ledger, env=None):
    """`ledger` None: the config's own ledger settings (url or url_env)."""
    cmd = [brisk_bin, "gateway", "--config", str(config_path)]
    if ledger is not None:
        cmd += ["--ledger", str(ledger)]
    return ServerProcess(cmd, "gateway", env=env)


def wait_models_known(gw, n_tiers, timeout=30, headers=None):
    """Until every tier's model id was discovered (listed by /v1/models)."""
    import json
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, body = gw.get("/v1/models", headers=headers)
        if status == 200 and len(json.loads(body)["data"]) >= 1 + 2 * n_tiers:
            return
        time.sleep(0.1)
    raise RuntimeError("the gateway did not learn its tiers' models")


def sqlite_rows(path):
    con = sqlite3.connect(str(path))
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM brisk_ledger ORDER BY time_unix_ms")]
    finally:
        con.close()


class Postgres:
    """scripts/pg_test_server.sh start/stop around a temp directory."""

    def __init__(self, tmp_path):
        self.dir = tmp_path / "pg"
        self.port = free_port()
        out = subprocess.run(["bash", str(REPO / "scripts" / "pg_test_server.sh"), "start",
                              str(self.dir), str(self.port)], capture_output=True, text=True,
                             timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"postgres did not start ({out.returncode}): {out.stderr}")
        self.url = out.stdout.strip().splitlines()[-1]

    def stop(self):
        subprocess.run(["bash", str(REPO / "scripts" / "pg_test_server.sh"), "stop",
                        str(self.dir)], capture_output=True, timeout=60)

    def pause(self, mode="immediate"):
        """Stops the server (`immediate`: as a crash does), keeping its data."""
        subprocess.run(["bash", str(REPO / "scripts" / "pg_test_server.sh"), "pause",
                        str(self.dir), mode], check=True, capture_output=True, timeout=60)

    def resume(self):
        subprocess.run(["bash", str(REPO / "scripts" / "pg_test_server.sh"), "resume",
                        str(self.dir), str(self.port)], check=True, capture_output=True,
                       timeout=120)


def pg_rows(url, sql):
    """Rows of a query as lists of strings (psql, from the postgresql client)."""
    out = subprocess.run(["psql", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"psql failed: {out.stderr}")
    return [line.split("\t") for line in out.stdout.splitlines() if line]


def pg_available():
    return subprocess.run(["bash", str(REPO / "scripts" / "pg_test_server.sh"), "bindir"],
                          capture_output=True).returncode == 0


# ---------------------------------------------------------------- shared by the tests

PRICES = {"small": (0.1, 0.02, 0.4), "medium": (1.0, 0.2, 4.0), "large": (10.0, 2.0, 40.0)}


def cost_of(tier, prompt, cached, output):
    pin, pcached, pout = PRICES[tier]
    return ((prompt - cached) * pin + cached * pcached + output * pout) / 1e6


def tiers_of(engines):
    return [("small", [engines["small1"].url, engines["small2"].url], PRICES["small"]),
            ("medium", [engines["medium"].url], PRICES["medium"]),
            ("large", [engines["large"].url], PRICES["large"])]


def client(gw, **kw):
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="none", max_retries=0, **kw)


def tier_of(gw, model, messages, headers=None, **kw):
    c = client(gw)
    raw = c.chat.completions.with_raw_response.create(model=model, messages=messages,
                                                      extra_headers=headers or {}, **kw)
    return raw.headers["x-brisk-tier"], raw.headers["x-brisk-route"], raw.parse()


class SchemaBlindUpstream(http.server.BaseHTTPRequestHandler):
    """A generic OpenAI-compatible server that ignores response_format (as a
    llama-server without a grammar would): it answers whatever follows "say:"
    in the last message."""

    def log_message(self, *args):
        pass

    def _send(self, code, body, ctype="application/json"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [{"id": "blind"}]}))
        else:
            self._send(404, "{}")

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = req["messages"][-1]["content"].split("say:", 1)[1]
        usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        if req.get("stream"):
            chunks = [{"id": "b", "object": "chat.completion.chunk", "model": "blind",
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}]},
                      {"id": "b", "object": "chat.completion.chunk", "model": "blind",
                       "choices": [], "usage": usage}]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, body, "text/event-stream")
            return
        self._send(200, json.dumps({
            "id": "b", "object": "chat.completion", "model": "blind",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": usage}))


class RawStream:
    def __init__(self, resp):
        self.resp = resp
        self.headers = {k.lower(): v for k, v in resp.getheaders()}

    def iter_lines(self):
        for line in self.resp:
            line = line.decode().rstrip("\r\n")
            if line:
                yield line


@contextlib.contextmanager
def stream_raw(gw, model, max_tokens, prompt="Tell a long story about a dragon."):
    """A streamed chat request over a plain HTTP connection (closing it is a
    client going away)."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=120)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    try:
        yield RawStream(conn.getresponse())
    finally:
        conn.sock and conn.sock.close()
        conn.close()


# The fixtures of the gateway e2e modules (test_gateway.py,
# test_gateway_failover.py), imported by name into each: one set of engines per
# module.
@pytest.fixture(scope="module")
def engines(brisk_bin):
    if not GEMMA.exists():
        skip_or_fail("Gemma 3 model missing: run scripts/install_models.sh")
    started = {
        "small1": start_engine(brisk_bin, SMOL, "smol"),
        "small2": start_engine(brisk_bin, SMOL, "smol"),
        "medium": start_engine(brisk_bin, variant_model(), "smol-medium"),
        "large": start_engine(brisk_bin, GEMMA, "gemma"),
    }
    yield started
    for p in started.values():
        p.stop(signal.SIGKILL)


@pytest.fixture
def gateway(brisk_bin, engines, tmp_path):
    """Factory: a gateway over the engines with extra YAML; stopped after the test."""
    started = []

    def make(extra="", ledger=None, key=None):
        cfg = write_gateway_config(tmp_path / f"gateway{len(started)}.yaml", tiers_of(engines),
                                   extra)
        ledger = ledger or tmp_path / f"ledger{len(started)}.db"
        gw = start_gateway(brisk_bin, cfg, ledger)
        gw.ledger = ledger
        started.append(gw)
        wait_models_known(gw, 3, headers={"Authorization": f"Bearer {key}"} if key else None)
        return gw

    yield make
    for gw in started:
        gw.stop()
