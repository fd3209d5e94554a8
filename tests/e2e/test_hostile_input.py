"""`brisk serve` against malformed and hostile input: bad JSON and fields,
oversize bodies and headers, malformed HTTP, slowloris, idle connections.
The server must answer each with a clear error and keep serving."""
import http.client
import json
import signal
import socket
import time

import openai
import pytest

from conftest import MODEL_ID, BriskServer

from robustness_util import (HELLO, assert_normal_request_works, assert_openai_error, chat_body,
                             metric, post, raw_exchange, request, status_of)


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def hardened_server(brisk_bin, default_model):
    """Small body limit and a 1 s request timeout (for the hostile-input tests)."""
    s = BriskServer(brisk_bin, config_text=(
        "server: {max_body_bytes: 65536, request_timeout_s: 1}\n"))
    yield s
    alive = s.proc.poll() is None
    s.stop(signal.SIGKILL)
    assert alive, "the server died during the hostile-input tests"


# ---------------------------------------------------------------- hostile input

LONG_TEXT = "hello " * 6000  # about 6000 tokens, 36 KB

BAD_JSON_BODIES = {
    # id: (path, body bytes, expected status, expected code or None)
    "malformed_json": ("/v1/chat/completions", b'{"model": "x", "messages": [', 400, None),
    "trailing_garbage": ("/v1/chat/completions",
                         json.dumps(chat_body()).encode() + b"}}", 400, None),
    "empty_body": ("/v1/chat/completions", b"", 400, None),
    "json_array": ("/v1/chat/completions", b"[1, 2, 3]", 400, None),
    "json_string": ("/v1/completions", b'"hello"', 400, None),
    "json_null": ("/v1/completions", b"null", 400, None),
    "nan_literal": ("/v1/chat/completions",
                    b'{"model": "%s", "messages": [], "temperature": NaN}' % MODEL_ID.encode(),
                    400, None),
    "invalid_utf8": ("/v1/chat/completions",
                     b'{"model": "%s", "messages": [{"role": "user", "content": "a\xff\xfe\xc3("}]}'
                     % MODEL_ID.encode(), 400, None),
    "overlong_utf8_nul": ("/v1/completions",
                          b'{"model": "%s", "prompt": "\xc0\x80"}' % MODEL_ID.encode(), 400, None),
    "deep_nesting": ("/v1/chat/completions", b"[" * 30000 + b"]" * 30000, 400, None),
    "deep_nesting_in_field": ("/v1/completions",
                              b'{"model": "%s", "prompt": ' % MODEL_ID.encode()
                              + b"[" * 20000 + b"]" * 20000 + b"}", 400, None),
    "huge_number": ("/v1/completions",
                    b'{"model": "%s", "prompt": "hi", "max_tokens": 1e999}' % MODEL_ID.encode(),
                    400, None),
}


def _j(**kw):
    return json.dumps(kw).encode()


BAD_FIELDS = {
    "model_empty": ("/v1/chat/completions", _j(model="", messages=HELLO), 400, None),
    "messages_missing": ("/v1/chat/completions", _j(model=MODEL_ID), 400, None),
    "prompt_missing": ("/v1/completions", _j(model=MODEL_ID), 400, None),
    "model_not_string": ("/v1/chat/completions", _j(model=5, messages=HELLO), 400, None),
    "messages_not_list": ("/v1/chat/completions", _j(model=MODEL_ID, messages="hi"), 400, None),
    "messages_empty": ("/v1/chat/completions", _j(model=MODEL_ID, messages=[]), 400, None),
    "message_not_object": ("/v1/chat/completions", _j(model=MODEL_ID, messages=["hi"]), 400, None),
    "bad_role": ("/v1/chat/completions",
                 _j(model=MODEL_ID, messages=[{"role": "wizard", "content": "hi"}]), 400, None),
    "content_not_string": ("/v1/chat/completions",
                           _j(model=MODEL_ID, messages=[{"role": "user", "content": 42}]), 400,
                           None),
    "max_tokens_string": ("/v1/chat/completions", _j(**chat_body(max_tokens="10")), 400,
                          "invalid_type"),
    "max_tokens_negative": ("/v1/chat/completions", _j(**chat_body(max_tokens=-1)), 400, None),
    "max_tokens_zero": ("/v1/chat/completions", _j(**chat_body(max_tokens=0)), 400, None),
    "max_tokens_fraction": ("/v1/chat/completions", _j(**chat_body(max_tokens=2.5)), 400, None),
    "max_tokens_absurd": ("/v1/chat/completions", _j(**chat_body(max_tokens=10**12)), 400, None),
    "max_tokens_over_server_cap": ("/v1/chat/completions", _j(**chat_body(max_tokens=100000)),
                                   400, "invalid_value"),
    "temperature_99": ("/v1/chat/completions", _j(**chat_body(temperature=99)), 400,
                       "invalid_value"),
    "temperature_string": ("/v1/chat/completions", _j(**chat_body(temperature="hot")), 400,
                           "invalid_type"),
    "temperature_bool": ("/v1/chat/completions", _j(**chat_body(temperature=True)), 400,
                         "invalid_type"),
    "top_p_5": ("/v1/chat/completions", _j(**chat_body(top_p=5)), 400, "invalid_value"),
    "n_1000": ("/v1/chat/completions", _j(**chat_body(n=1000)), 400, "invalid_value"),
    "n_zero": ("/v1/chat/completions", _j(**chat_body(n=0)), 400, None),
    "n_over_server_cap": ("/v1/chat/completions", _j(**chat_body(n=9)), 400, "invalid_value"),
    "presence_penalty_10": ("/v1/chat/completions", _j(**chat_body(presence_penalty=10)), 400,
                            "invalid_value"),
    "stream_string": ("/v1/chat/completions", _j(**chat_body(stream="yes")), 400, "invalid_type"),
    "stop_too_many": ("/v1/chat/completions", _j(**chat_body(stop=list("abcdefgh"))), 400, None),
    "stop_not_string": ("/v1/chat/completions", _j(**chat_body(stop=[1, 2])), 400, None),
    "unknown_field": ("/v1/chat/completions", _j(**chat_body(frobnicate=1)), 400,
                      "unknown_parameter"),
    "unknown_priority": ("/v1/chat/completions", _j(**chat_body(priority="urgent")), 400, None),
    "timeout_negative": ("/v1/chat/completions", _j(**chat_body(timeout=-1)), 400, None),
    "timeout_zero": ("/v1/chat/completions", _j(**chat_body(timeout=0)), 400, None),
    "tools_name_not_a_string": ("/v1/chat/completions",
                                _j(**chat_body(tools=[{"type": "function",
                                                       "function": {"name": 5}}])), 400, None),
    "prompt_token_out_of_vocab": ("/v1/completions",
                                  _j(model=MODEL_ID, prompt=[1, 2, 10**8], max_tokens=1), 400,
                                  None),
    "prompt_token_negative": ("/v1/completions",
                              _j(model=MODEL_ID, prompt=[1, -5], max_tokens=1), 400, None),
    "prompt_empty_string": ("/v1/completions", _j(model=MODEL_ID, prompt="", max_tokens=1), 400,
                            None),
    "context_exceeded_tokens": ("/v1/completions",
                                _j(model=MODEL_ID, prompt=[28] * 9000, max_tokens=1), 400,
                                "context_length_exceeded"),
    "context_exceeded_chat": ("/v1/chat/completions",
                              _j(model=MODEL_ID, messages=[{"role": "user", "content": LONG_TEXT}],
                                 max_tokens=4000), 400, "context_length_exceeded"),
    "unknown_model": ("/v1/chat/completions", _j(model="gpt-17", messages=HELLO), 404,
                      "model_not_found"),
    # llama.cpp's {"type": "json_object", "schema": ...}: refused, not
    # silently served without the schema.
    "response_format_unknown_key": ("/v1/chat/completions",
                                    _j(**chat_body(response_format={
                                        "type": "json_object", "schema": {"type": "object"}})),
                                    400, "unknown_parameter"),
    # Killed the server with std::invalid_argument before the $ref decoder was
    # fixed (found by fuzzing the gateway's schema checker).
    "schema_ref_bad_escape": ("/v1/chat/completions",
                              _j(**chat_body(response_format={
                                  "type": "json_schema", "json_schema": {
                                      "name": "a", "schema": {"$defs": {"a": {}},
                                                              "$ref": "#/$defs/%zz"}}})),
                              400, None),
    "schema_ref_huge_index": ("/v1/chat/completions",
                              _j(**chat_body(response_format={
                                  "type": "json_schema", "json_schema": {
                                      "name": "a", "schema": {"anyOf": [{}],
                                                              "$ref": "#/anyOf/" + "9" * 30}}})),
                              400, None),
}


@pytest.mark.parametrize("case", list(BAD_JSON_BODIES) + list(BAD_FIELDS))
def test_bad_request_body(hardened_server, case):
    path, body, want_status, want_code = {**BAD_JSON_BODIES, **BAD_FIELDS}[case]
    invalid0 = metric(hardened_server, "brisk:requests_total", {"outcome": "invalid"})
    status, headers, data = post(hardened_server, path, body)
    assert status == want_status, (case, status, data[:300])
    assert headers.get("content-type", "").startswith("application/json"), headers
    assert_openai_error(data, status, code=want_code)
    assert metric(hardened_server, "brisk:requests_total",
                  {"outcome": "invalid"}) == invalid0 + 1
    assert_normal_request_works(hardened_server)


def test_bad_input_via_openai_client(hardened_server):
    """The openai client maps the errors to its typed exceptions."""
    c = hardened_server.client()
    with pytest.raises(openai.BadRequestError) as ei:
        c.chat.completions.create(model=MODEL_ID, messages=HELLO, max_tokens=-1)
    assert ei.value.status_code == 400
    with pytest.raises(openai.NotFoundError) as ei:
        c.chat.completions.create(model="no-such-model", messages=HELLO, max_tokens=2)
    assert ei.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as ei:
        c.completions.create(model=MODEL_ID, prompt=[28] * 9000, max_tokens=1)
    assert ei.value.body["code"] == "context_length_exceeded"
    r = c.chat.completions.create(model=MODEL_ID, messages=HELLO, max_tokens=2)
    assert r.choices[0].message.role == "assistant"


def test_body_over_limit_413(hardened_server):
    big = json.dumps(chat_body(user="x" * 70000)).encode()
    status, _, data = post(hardened_server, "/v1/chat/completions", big)
    assert status == 413, data[:200]
    # The limit is on the body, not on what it decodes to: chunked framing too.
    s = socket.create_connection((hardened_server.host, hardened_server.port), timeout=10)
    try:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")
        resp = b""
        for _ in range(20):  # 20 x 8 KiB chunks = 160 KiB
            try:
                s.sendall(b"2000\r\n" + b" " * 0x2000 + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
        s.settimeout(5)
        try:
            while b"\r\n\r\n" not in resp:
                chunk = s.recv(4096)
                if not chunk:
                    break
                resp += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    finally:
        s.close()
    assert resp.startswith(b"HTTP/1.1 413"), resp[:200]
    assert_normal_request_works(hardened_server)


def test_body_just_under_limit_ok(hardened_server):
    body = chat_body()
    pad = 65536 - len(json.dumps({**body, "user": ""}).encode()) - 16
    body["user"] = "x" * pad
    data = json.dumps(body).encode()
    assert len(data) <= 65536
    status, _, resp = post(hardened_server, "/v1/chat/completions", data)
    assert status == 200, resp[:300]


def test_huge_header(hardened_server):
    status, _, data = request(hardened_server, "GET", "/v1/models",
                              headers={"X-Junk": "a" * 100_000})
    assert status in (431, 400), (status, data[:200])
    # Far over the limit in many small headers (1.1 MB).
    many = {f"X-H{i}": "b" * 100 for i in range(10000)}
    status, _, data = request(hardened_server, "GET", "/v1/models", headers=many)
    assert status in (431, 400), (status, data[:200])
    assert_normal_request_works(hardened_server)


def test_header_section_over_limit_in_small_headers(hardened_server):
    many = {f"X-H{i}": "b" * 100 for i in range(1000)}  # 110 KB > 64 KiB
    status, _, data = request(hardened_server, "GET", "/v1/models", headers=many)
    assert status in (431, 400), (status, data[:200])


def test_unknown_path_and_wrong_method(hardened_server):
    for path in ("/v1/nope", "/", "/v2/chat/completions", "/v1/chat/completions/extra"):
        status, _, data = request(hardened_server, "GET", path)
        assert status == 404, (path, status)
        assert_openai_error(data, 404, code="not_found")
    status, _, data = post(hardened_server, "/v1/embeddings", {"model": MODEL_ID, "input": "x"})
    assert status == 404
    assert_openai_error(data, 404)
    for method, path in (("GET", "/v1/chat/completions"), ("PUT", "/v1/completions"),
                         ("DELETE", "/v1/models"), ("POST", "/metrics"), ("POST", "/health")):
        status, _, data = request(hardened_server, method, path)
        assert status == 405, (method, path, status)
        assert_openai_error(data, 405, code="method_not_allowed")
    # HEAD of a JSON route: headers only.
    status, _, data = request(hardened_server, "HEAD", "/health")
    assert status == 200 and data == b""
    assert_normal_request_works(hardened_server)


@pytest.mark.parametrize("name,data", [
    ("garbage_line", b"GARBAGE\r\n\r\n"),
    ("no_version", b"GET /v1/models\r\n\r\n"),
    ("binary", bytes(range(256)) * 4),
    ("tls_hello", bytes.fromhex("16030100a5010000a10303") + b"\x00" * 160),
    ("bad_content_length", b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Content-Length: -5\r\n\r\n"),
    ("two_content_lengths", b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            b"Content-Length: 5\r\nContent-Length: 7\r\n\r\nhello"),
    ("bad_chunk_size", b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       b"Content-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
    ("header_no_colon", b"GET /v1/models HTTP/1.1\r\nHost x\r\nBroken header\r\n\r\n"),
])
def test_malformed_http(hardened_server, name, data):
    got, closed, _ = raw_exchange(hardened_server, data, read_timeout=5)
    assert got, f"{name}: no response"
    assert status_of(got) == 400, got[:200]
    assert closed, f"{name}: connection left open after a 400"
    assert_normal_request_works(hardened_server)


def test_unsupported_http_features(hardened_server):
    got, _, _ = raw_exchange(hardened_server, b"GET /v1/models HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n")
    assert status_of(got) in (400, 505), got[:200]
    got, _, _ = raw_exchange(hardened_server, b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Transfer-Encoding: gzip\r\n\r\nxxxx")
    assert status_of(got) in (400, 501), got[:200]
    assert_normal_request_works(hardened_server)


def test_slowloris_request_line(hardened_server):
    """Half a request line, then silence: closed after request_timeout_s (1 s)."""
    got, closed, dt = raw_exchange(hardened_server, b"POST /v1/chat/comp", read_timeout=6)
    assert closed, f"connection still open after {dt:.1f} s"
    assert 0.5 <= dt <= 4, dt
    if got:
        assert status_of(got) == 408, got[:200]
    assert_normal_request_works(hardened_server)


def test_slowloris_trickle(hardened_server):
    """Headers one byte at a time, forever: the deadline is for the whole request,
    so trickling does not keep the connection alive."""
    s = socket.create_connection((hardened_server.host, hardened_server.port), timeout=10)
    req = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
    t0 = time.monotonic()
    closed_after = None
    try:
        for b in req:
            try:
                s.sendall(bytes([b]))
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - t0
                break
            s.settimeout(0.1)
            try:
                if s.recv(4096) == b"":
                    closed_after = time.monotonic() - t0
                    break
                # a 408 response: keep going until the close
            except socket.timeout:
                pass
            except ConnectionResetError:
                closed_after = time.monotonic() - t0
                break
            if time.monotonic() - t0 > 6:
                break
    finally:
        s.close()
    assert closed_after is not None, "a trickling client kept the connection for 6 s"
    assert closed_after <= 4, closed_after


def test_slowloris_body(hardened_server):
    """Headers complete, body promised but never sent: 408 and close after ~1 s."""
    got, closed, dt = raw_exchange(
        hardened_server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mo", read_timeout=6)
    assert closed and 0.5 <= dt <= 4, (closed, dt)
    assert not got or status_of(got) == 408, got[:200]
    assert_normal_request_works(hardened_server)


def test_many_idle_connections_do_not_block(hardened_server):
    """Connections opened and left silent do not keep others from being served."""
    socks = [socket.create_connection((hardened_server.host, hardened_server.port))
             for _ in range(200)]
    try:
        assert_normal_request_works(hardened_server)
        status, _, _ = request(hardened_server, "GET", "/health")
        assert status == 200
    finally:
        for s in socks:
            s.close()


def test_keep_alive_survives_client_errors(hardened_server):
    """API errors (400/404) keep the connection usable for the next request."""
    conn = http.client.HTTPConnection(hardened_server.host, hardened_server.port, timeout=60)
    try:
        for body in (b"{", json.dumps(chat_body(max_tokens=-1)), json.dumps(chat_body())):
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
        assert r.status == 200
    finally:
        conn.close()


def test_body_over_limit_is_openai_json(hardened_server):
    big = json.dumps(chat_body(user="x" * 70000)).encode()
    status, headers, data = post(hardened_server, "/v1/chat/completions", big)
    assert status == 413
    assert headers.get("content-type", "").startswith("application/json"), headers
    assert_openai_error(data, 413)
