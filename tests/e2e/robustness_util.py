"""Shared helpers of the `brisk serve` robustness tests
(test_server_robustness.py and test_hostile_input.py)."""
import http.client
import json
import socket
import time

import pytest

from conftest import MODEL_ID

HELLO = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]


# ---------------------------------------------------------------- helpers

def request(server, method, path, body=None, headers=None, timeout=60):
    """One HTTP request on a fresh connection: (status, headers dict (lower-case), body bytes)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def post(server, path, body, headers=None, timeout=60):
    return request(server, "POST", path, body, headers, timeout)


def chat_body(**kw):
    return {"model": MODEL_ID, "messages": HELLO, "max_tokens": 2, **kw}


def assert_openai_error(body, status=None, code=None, param=None):
    """The body is OpenAI's error shape; returns the inner object."""
    try:
        doc = json.loads(body)
    except ValueError:
        pytest.fail(f"error body is not JSON (status {status}): {body[:300]!r}")
    assert isinstance(doc, dict) and set(doc) == {"error"}, doc
    err = doc["error"]
    assert {"message", "type", "param", "code"} <= set(err), err
    assert isinstance(err["message"], str) and err["message"], err
    assert isinstance(err["type"], str) and err["type"], err
    assert err["param"] is None or isinstance(err["param"], str), err
    assert err["code"] is None or isinstance(err["code"], str), err
    if code is not None:
        assert err["code"] == code, err
    if param is not None:
        assert err["param"] == param, err
    return err


def assert_normal_request_works(server):
    """A small valid chat completion succeeds (the server is alive and well)."""
    assert server.proc.poll() is None, f"server died (exit {server.proc.returncode})"
    status, _, body = post(server, "/v1/chat/completions", chat_body(max_tokens=2), timeout=60)
    assert status == 200, body[:500]
    doc = json.loads(body)
    assert doc["object"] == "chat.completion"
    assert doc["choices"][0]["finish_reason"] in ("stop", "length")
    assert 1 <= doc["usage"]["completion_tokens"] <= 2


def wait_until(pred, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def metric(server, name, labels=None):
    return server.metric(name, labels) or 0.0


def assert_engine_idle(server, timeout=10):
    """KV blocks held by sequences, running and waiting sequences all drop to 0."""
    def idle():
        return (metric(server, "brisk:kv_cache_blocks", {"state": "used"}) == 0
                and metric(server, "brisk:num_requests_running") == 0
                and metric(server, "brisk:num_requests_waiting") == 0
                and metric(server, "brisk:http_requests_in_flight") == 0)
    if not wait_until(idle, timeout, 0.1):
        _, text = server.get("/metrics")
        lines = [l for l in text.splitlines()
                 if l.startswith(("brisk:kv_cache_blocks", "brisk:num_requests",
                                  "brisk:http_requests_in_flight"))]
        pytest.fail(f"engine not idle {timeout} s after the last request:\n" + "\n".join(lines))


def raw_exchange(server, data, read_timeout=5.0, wait_close=True):
    """Sends raw bytes, reads until the server closes (or read_timeout); returns
    (bytes received, closed by server?, seconds until close or timeout)."""
    s = socket.create_connection((server.host, server.port), timeout=read_timeout)
    t0 = time.monotonic()
    got = b""
    closed = False
    try:
        if data:
            s.sendall(data)
        s.settimeout(read_timeout)
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if not wait_close and b"\r\n\r\n" in got:
                break
    finally:
        s.close()
    return got, closed, time.monotonic() - t0


def status_of(raw):
    line = raw.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    assert len(parts) >= 2 and parts[0].startswith(b"HTTP/1."), raw[:200]
    return int(parts[1])


def sse_request_bytes(server, body, extra_headers=""):
    data = json.dumps(body).encode()
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            f"{extra_headers}\r\n").encode() + data


def read_sse(resp):
    """Yields the payload of each `data:` line of a streaming http.client response."""
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.strip()
        if line.startswith(b"data:"):
            yield line[5:].strip()
