"""Attack traffic, shared by the hardening tests (test_hardening.py,
test_hardening_engine.py) and the bounded soak (bench/attack_soak.py).

Raw-socket helpers to send what no well-behaved client sends, the hostile
bodies themselves, and measuring helpers (/health latency from a process of
its own, a /metrics maximum, interactive TTFT). Everything talks to the
server it is given (loopback in the tests and the soak) and every wait is
bounded by a timeout.
"""
import http.client
import json
import socket
import subprocess
import sys
import threading
import time

from conftest import MODEL_ID

MiB = 1 << 20
SHORT = [{"role": "user", "content": "Say hi."}]


# ---------------------------------------------------------------- server process memory

def proc_status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def rss_bytes(server):
    return proc_status_kib(server.proc.pid, "VmRSS") * 1024


def peak_rss_bytes(server):
    return proc_status_kib(server.proc.pid, "VmHWM") * 1024


# ---------------------------------------------------------------- raw HTTP

def connect(server, timeout=5.0, source=None):
    """A raw connection; `source` = (address, 0) connects from another local
    address (e.g. 127.0.0.2: another client host, for the scheduler's fair share)."""
    return socket.create_connection((server.host, server.port), timeout=timeout,
                                    source_address=source)


def read_head(s, timeout=5.0, skip_interim=True):
    """Reads one response head (status line + headers) from a raw socket:
    (status, {lower-case name: value}, bytes after the head). Interim 1xx
    responses are skipped. Raises socket.timeout if none comes in time."""
    s.settimeout(timeout)
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            if time.monotonic() > deadline:
                raise socket.timeout("no response head")
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ConnectionError(f"closed before a response head: {buf[:200]!r}")
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if skip_interim and 100 <= status < 200:
            buf = rest
            continue
        return status, headers, rest


def read_response(s, timeout=10.0):
    """One full response with Content-Length: (status, headers, body)."""
    status, headers, rest = read_head(s, timeout)
    n = int(headers.get("content-length", "0"))
    deadline = time.monotonic() + timeout
    while len(rest) < n and time.monotonic() < deadline:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest[:n]


class Flood(threading.Thread):
    """Sends `prefix`, then `filler` until `total` bytes, a send fails, or stop()."""

    def __init__(self, sock, prefix, filler, total):
        super().__init__(daemon=True)
        self.sock, self.prefix, self.filler, self.total = sock, prefix, filler, total
        self.sent = 0
        self._halt = threading.Event()

    def run(self):
        try:
            self.sock.sendall(self.prefix)
            while self.sent < self.total and not self._halt.is_set():
                self.sock.sendall(self.filler)
                self.sent += len(self.filler)
        except OSError:
            pass

    def stop(self):
        self._halt.set()
        self.join(10)


def chat_bytes(**kw):
    return json.dumps({"model": MODEL_ID, "max_tokens": 2,
                       "messages": [{"role": "user", "content": "Hi"}], **kw}).encode()


def post_head(server, length=None, extra=""):
    framing = (f"Content-Length: {length}\r\n" if length is not None
               else "Transfer-Encoding: chunked\r\n")
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
            f"Content-Type: application/json\r\n{framing}{extra}\r\n").encode()


def post(server, path, body, timeout=60, headers=None, source=None):
    """POST on a fresh connection: (status, parsed JSON or raw bytes, seconds)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout,
                                      source_address=source)
    t0 = time.monotonic()
    try:
        conn.request("POST", path, body=body,
                     headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    took = time.monotonic() - t0
    try:
        return r.status, json.loads(data), took
    except ValueError:
        return r.status, data, took


# ---------------------------------------------------------------- finding 1: chunked framing

# (name, bytes after the header section, filler repeated without a line end)
ENDLESS = {
    "chunk_extension": (b"1;x=", b"a" * MiB),
    "chunk_size_zeros": (b"", b"0" * MiB),
    "trailer_line": (b"1\r\na\r\n0\r\nX-T: ", b"a" * MiB),
}


def trailer_fields(n=100_000):
    """A trailer section of n small fields, ended by the empty line."""
    return b"".join(b"t%d: v\r\n" % i for i in range(n)) + b"\r\n"


# ---------------------------------------------------------------- finding 2: big bodies

def big_logit_bias_body(keys=100_000):
    bias = {str(i): 1 for i in range(keys)}
    return json.dumps({"model": MODEL_ID, "messages": SHORT, "logit_bias": bias}).encode()


def big_prompt_body(size=4 << 20):
    """A 4 MiB plain-text completion prompt: tokenizing it takes a second or more."""
    words = ("the quick brown fox jumps over the lazy dog while a lighthouse keeper "
             "writes long letters to the grey and restless sea ")
    text = (words * (size // len(words) + 1))[:size]
    return json.dumps({"model": MODEL_ID, "prompt": text, "max_tokens": 1}).encode()


# ---------------------------------------------------------------- finding 9: protocol probes

NON_CONFORMING = {
    "no_host": b"GET /health HTTP/1.1\r\n\r\n",
    "two_hosts": b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "obs_fold": b"GET /health HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n two\r\n\r\n",
}


# ---------------------------------------------------------------- measuring

# Runs in a process of its own, so that the test's other threads (attack
# clients, the openai client) never hold it back on the GIL: what it measures
# is the server's answer time. Prints one JSON list of latencies (seconds;
# null for a failed poll) when stdin closes.
_HEALTH_POLLER = r"""
import http.client, json, sys, threading, time
host, port, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
out, errors, conn = [], [], None
while not done.is_set():
    t0 = time.monotonic()
    try:
        if conn is None:
            conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", "/health")
        r = conn.getresponse()
        r.read()
        out.append(time.monotonic() - t0 if r.status == 200 else None)
        if r.status != 200:
            errors.append("status %d" % r.status)
        if (r.getheader("Connection") or "").lower() == "close":
            conn.close()
            conn = None
    except (OSError, http.client.HTTPException) as e:
        out.append(None)
        errors.append(repr(e))
        if conn is not None:
            conn.close()
        conn = None
    done.wait(max(0.0, interval - (time.monotonic() - t0)))
print(json.dumps({"latencies": out, "errors": errors[:10]}), flush=True)
"""


class HealthPoller:
    """GETs /health about every `interval` s on a keep-alive connection, from
    a separate process, and records each answer's latency."""

    def __init__(self, server, interval=0.010):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HEALTH_POLLER, server.host, str(server.port), str(interval)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.latencies, self.failures = [], []

    def stop(self):
        """The longest latency (inf if a poll failed or none was made)."""
        out, _ = self.proc.communicate("", timeout=15)
        doc = json.loads(out)
        self.failures = doc["errors"]
        self.latencies = [float("inf") if x is None else x for x in doc["latencies"]]
        return max(self.latencies, default=float("inf"))


class MetricMax(threading.Thread):
    """Polls one /metrics sum (over all label sets) and keeps its maximum."""

    def __init__(self, server, name, interval=0.020):
        super().__init__(daemon=True)
        self.server, self.name, self.interval = server, name, interval
        self.max, self.samples = 0.0, 0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            v = self.server.metric(self.name)
            if v is not None:
                self.max = max(self.max, v)
                self.samples += 1
            self._done.wait(self.interval)

    def stop(self):
        self._done.set()
        self.join(10)
        return self.max


def chat_ttft(client, max_tokens=2):
    """Seconds from sending a small streamed chat to its first content token."""
    t0 = time.monotonic()
    stream = client.chat.completions.create(model=MODEL_ID, messages=SHORT, max_tokens=max_tokens,
                                            stream=True)
    first = None
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.monotonic()
    end = time.monotonic()
    return (first or end) - t0
