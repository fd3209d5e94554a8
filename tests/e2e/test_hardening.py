"""Hardening the front door: each finding reproduced from outside
against the real `brisk serve`, loopback only, each bounded to a few seconds.

Memory is the server process's resident set (/proc/PID/status: VmRSS now,
VmHWM the peak), so a test sees what an attacker would cost the host.
The API key before the body, 415 for non-JSON and the Host allow-list are the
OpenAI server's header gate (src/http/header_gate.h) on the HTTP layer's
on_headers hook.
"""
import json
import resource
import socket
import time

import pytest

from attacks import (ENDLESS, Flood, MiB, chat_bytes, connect, peak_rss_bytes, post_head,
                     read_head, read_response, rss_bytes)
from conftest import BriskServer

# The goal: under 64 MB per attacking connection.
PER_CONNECTION_RSS_BUDGET = 64 * MiB


# ---------------------------------------------------------------- helpers

def assert_alive_and_well(server):
    assert server.proc.poll() is None, f"server died (exit {server.proc.returncode})"
    s = connect(server, 30)
    try:
        body = chat_bytes()
        s.sendall(post_head(server, len(body)) + body)
        status, _, data = read_response(s, 60)
        assert status == 200, data[:300]
    finally:
        s.close()


@pytest.fixture(scope="module")
def server(brisk_bin, default_model):
    s = BriskServer(brisk_bin)
    yield s
    s.stop()


# ---------------------------------------------------------------- 1. chunked framing

@pytest.mark.parametrize("case", list(ENDLESS))
def test_endless_framing_line_is_cut_off(server, case):
    """1000 MiB without a line end, inside chunked framing: refused early, RSS flat."""
    after_head, filler = ENDLESS[case]
    rss0, peak0 = rss_bytes(server), peak_rss_bytes(server)
    s = connect(server)
    flood = Flood(s, post_head(server) + after_head, filler, 1000 * MiB)
    t0 = time.monotonic()
    flood.start()
    try:
        status, _, _ = read_head(s, timeout=5)
    finally:
        flood.stop()
        s.close()
    assert status in (400, 413, 431), status
    assert time.monotonic() - t0 < 5
    assert flood.sent < 64 * MiB, f"the server read {flood.sent >> 20} MiB of one line"
    grew = max(rss_bytes(server) - rss0, peak_rss_bytes(server) - peak0)
    assert grew < PER_CONNECTION_RSS_BUDGET, f"RSS grew {grew >> 20} MiB"
    assert_alive_and_well(server)


def test_8mb_chunk_extension_is_rejected(server):
    """A well-formed chunk with an 8 MB extension was answered 200."""
    s = connect(server)
    rest = b"\r\na\r\n0\r\n\r\n"
    flood = Flood(s, post_head(server) + b"1;x=", b"a" * (64 << 10), 8 * MiB)
    flood.start()
    try:
        status, _, _ = read_head(s, timeout=5)
        try:
            s.sendall(rest)
        except OSError:
            pass
    finally:
        flood.stop()
        s.close()
    assert status in (400, 413, 431), status


def test_100k_trailer_fields_are_rejected(server):
    body = chat_bytes()
    trailers = b"".join(b"t%d: v\r\n" % i for i in range(100_000))
    s = connect(server)
    flood = Flood(s, post_head(server) + b"%x\r\n" % len(body) + body + b"\r\n0\r\n",
                  trailers + b"\r\n", 1)
    flood.start()
    try:
        status, _, _ = read_head(s, timeout=5)
    finally:
        flood.stop()
        s.close()
    assert status in (400, 413, 431), status


def test_chunked_framing_counts_toward_the_body_limit(make_server):
    """One-byte chunks: 6 bytes on the wire per byte of body."""
    srv = make_server("server: {max_body_bytes: 65536}\n")
    s = connect(srv)
    try:
        data = b"".join(b"1\r\n%c\r\n" % c for c in b" " * 20000)  # 20 KB body, 120 KB sent
        flood = Flood(s, post_head(srv), data + b"0\r\n\r\n", 1)
        flood.start()
        status, _, _ = read_head(s, timeout=5)
        flood.stop()
    finally:
        s.close()
    assert status == 413, status


# ---------------------------------------------------------------- 4. memory before auth

def test_stalled_uploads_stay_within_the_body_budget(server):
    """Many nearly complete 4 MiB uploads that never finish: the server-wide
    budget (192 MiB by default) answers 503 + Retry-After beyond it, and RSS
    stays under budget + slack instead of growing by N x 4 MiB."""
    n = 100  # 400 MiB announced
    length = 4 * MiB
    chunk = b" " * (length - 1024)
    rss0 = rss_bytes(server)
    socks, refused, retry_after = [], 0, set()
    try:
        for _ in range(n):
            s = connect(server)
            socks.append(s)
            try:
                s.sendall(post_head(server, length))
                s.setblocking(False)
                # What fits without blocking; the rest stalls in socket buffers.
                try:
                    s.send(chunk)
                except BlockingIOError:
                    pass
            except OSError:
                pass
        time.sleep(1.0)
        for s in socks:
            s.setblocking(True)
            try:
                status, headers, _ = read_head(s, timeout=0.05)
            except (socket.timeout, ConnectionError, OSError):
                continue
            if status == 503:
                refused += 1
                retry_after.add(headers.get("retry-after"))
        grew = rss_bytes(server) - rss0
    finally:
        for s in socks:
            s.close()
    assert refused >= n - 64 - 4, f"only {refused} of {n} refused"
    assert retry_after == {"1"}, retry_after
    assert grew < 256 * MiB + PER_CONNECTION_RSS_BUDGET, f"RSS grew {grew >> 20} MiB"
    assert_alive_and_well(server)


def test_api_key_is_checked_before_the_body(make_server):
    srv = make_server("keys: [{key: sk-test-a, tenant: a}]\n")
    s = connect(srv)
    try:
        s.sendall(post_head(srv, 4 * MiB, "Authorization: Bearer sk-wrong\r\n"))  # no body
        status, _, _ = read_head(s, timeout=3)
    finally:
        s.close()
    assert status == 401


# ---------------------------------------------------------------- 5. browsers, DNS rebinding

@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x"])
def test_non_json_post_is_415(server, ctype):
    body = chat_bytes()
    s = connect(server)
    try:
        s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: {server.host}\r\n"
                   f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                  + body)
        status, _, _ = read_response(s, 30)
    finally:
        s.close()
    assert status == 415


def test_foreign_host_is_refused_without_keys(server):
    body = chat_bytes()
    s = connect(server)
    try:
        s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: rebind.attacker.example:"
                   f"{server.port}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        status, _, _ = read_response(s, 30)
    finally:
        s.close()
    assert status in (403, 421)


# ---------------------------------------------------------------- 6. close behind pipelined bytes

def test_close_behind_pipelined_junk_cancels(server):
    """A long non-streaming request, 70 KiB of pipelined junk, then close():
    reading is paused behind the junk, and the close must still cancel."""
    cancelled0 = server.metric("brisk:requests_total", {"outcome": "cancelled"}) or 0
    body = chat_bytes(max_tokens=1500, ignore_eos=True)
    s = connect(server)
    s.sendall(post_head(server, len(body)) + body + b"x" * (70 << 10))

    def kv_used():
        return server.metric("brisk:kv_cache_blocks", {"state": "used"}) or 0

    deadline = time.monotonic() + 10
    while kv_used() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kv_used() > 0, "the request never started"
    s.close()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 5:
        if (server.metric("brisk:requests_total", {"outcome": "cancelled"}) or 0) > cancelled0:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the request ran on after its client closed")
    while kv_used() > 0 and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert kv_used() == 0


# ---------------------------------------------------------------- 7. file limit

def test_connections_beyond_the_file_limit_get_503(brisk_bin, default_model, tmp_path):
    """With ulimit -n 128, 200 idle connections: newcomers are answered 503
    (max_connections is derived from the limit), not left hanging."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 512:
        pytest.skip(f"this process may open only {soft} files")
    wrapper = tmp_path / "brisk_ulimit_128"
    wrapper.write_text(f'#!/bin/sh\nulimit -n 128 || exit 1\nexec "{brisk_bin}" "$@"\n')
    wrapper.chmod(0o755)
    srv = BriskServer(str(wrapper))
    idle = []
    try:
        for _ in range(200):
            try:
                idle.append(connect(srv, 2))
            except OSError:
                break
        t0 = time.monotonic()
        s = connect(srv, 3)
        try:
            s.sendall(f"GET /health HTTP/1.1\r\nHost: {srv.host}\r\n\r\n".encode())
            status, _, _ = read_head(s, timeout=3)
        finally:
            s.close()
        assert status == 503
        assert time.monotonic() - t0 < 3
        for c in idle:
            c.close()
        idle.clear()
        time.sleep(0.5)
        assert srv.get("/health", timeout=5)[0] == 200
        assert_alive_and_well(srv)
    finally:
        for c in idle:
            c.close()
        srv.stop()


# ---------------------------------------------------------------- 8. half-close

def test_half_closed_client_gets_its_response(server):
    body = chat_bytes()
    s = connect(server, 30)
    try:
        s.sendall(post_head(server, len(body)) + body)
        s.shutdown(socket.SHUT_WR)
        status, _, data = read_response(s, 30)
    finally:
        s.close()
    assert status == 200, data[:300]
    assert json.loads(data)["object"] == "chat.completion"


# ---------------------------------------------------------------- 9. protocol strictness

@pytest.mark.parametrize("raw", [
    b"GET /health HTTP/1.1\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n two\r\n\r\n",
], ids=["no_host", "two_hosts", "obs_fold"])
def test_non_conforming_requests_are_400(server, raw):
    s = connect(server)
    try:
        s.sendall(raw)
        status, _, _ = read_response(s, 5)
    finally:
        s.close()
    assert status == 400
