"""The one way the tests, the benchmarks and the fixture tools start a server
process and stop it: `brisk serve`, `brisk gateway`, `brisk canned-upstream`,
and the others they run beside them (llama-server, Prometheus).

    from server_process import ServerProcess, free_port
    p = ServerProcess([brisk, "serve", "--port", "0"])       # port read from its stdout
    q = ServerProcess([prometheus, f"--web.listen-address=127.0.0.1:{port}"],
                      port=port, ready_path="/-/ready")     # port given, /-/ready polled
    ...
    p.stop()                                                 # SIGTERM, SIGKILL after 30 s

tests/e2e/conftest.py and the bench scripts put tools/ on sys.path to import
it; the scripts in tools/ find it beside them.
"""
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

# `brisk serve|gateway|canned-upstream` print "... on http://HOST:PORT ..." once
# they listen.
PRINTED_URL = re.compile(r"http://(\[[^\]]*\]|[^\s:/\[]+):(\d+)")
WILDCARD_HOSTS = ("0.0.0.0", "::", "[::]")


def free_port():
    """A loopback TCP port that nothing listens on now (for a server that
    cannot be told port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A running server process and its output.

    Without `port`, the process prints its URL on stdout (a brisk subcommand
    started with --port 0); host and port are read from that line. With
    `port`, the caller gave it that port, on `host` (another network
    namespace's address, for one started there). Either way, with `ready_path` the
    start waits until GET ready_path answers 200; with a given port and no
    ready_path, until the port accepts a connection.

    Both pipes are drained by threads, so the process never blocks on a full
    pipe: stdout_lines (for `brisk serve`, the access log, one JSON object per
    finished request) and stderr_lines (the process log) grow as it runs. A
    process that exits or does not become ready within `timeout` seconds is
    killed, and RuntimeError carries the tail of its output.
    """

    def __init__(self, cmd, name=None, port=None, ready_path=None, env=None, timeout=120,
                 host="127.0.0.1"):
        self.cmd = [str(c) for c in cmd]
        self.name = name or os.path.basename(self.cmd[0])
        self.stdout_lines, self.stderr_lines = [], []
        self._output = threading.Condition()
        self._stdout_closed = False
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, errors="replace",
                                     env={**os.environ, **(env or {})})
        self._drains = [threading.Thread(target=self._drain, args=(pipe, sink), daemon=True)
                        for pipe, sink in ((self.proc.stdout, self.stdout_lines),
                                           (self.proc.stderr, self.stderr_lines))]
        for t in self._drains:
            t.start()
        deadline = time.monotonic() + timeout
        try:
            if port is None:
                self.host, self.port = self._printed_address(deadline)
            else:
                self.host, self.port = host, int(port)
            self.url = f"http://{self.host}:{self.port}"
            if ready_path is not None:
                self._wait(lambda: self.get(ready_path, timeout=2)[0] == 200, deadline)
            elif port is not None:
                self._wait(self._accepts, deadline)
        except BaseException:
            self.stop(signal.SIGKILL)
            raise

    def _drain(self, pipe, sink):
        for line in pipe:
            with self._output:
                sink.append(line)
                self._output.notify_all()
        with self._output:
            if sink is self.stdout_lines:
                self._stdout_closed = True
            self._output.notify_all()

    def _printed_address(self, deadline):
        seen, why = 0, None
        with self._output:
            while why is None:
                for line in self.stdout_lines[seen:]:
                    m = PRINTED_URL.search(line)
                    if m:
                        host = m.group(1)
                        return ("127.0.0.1" if host in WILDCARD_HOSTS else host), int(m.group(2))
                seen = len(self.stdout_lines)
                if self._stdout_closed or self.proc.poll() is not None:
                    why = "exited before printing its URL"
                elif time.monotonic() > deadline:
                    why = "printed no URL in time"
                else:
                    self._output.wait(0.2)
        raise self._failure(why)

    def _wait(self, ready, deadline):
        while True:
            if self.proc.poll() is not None:
                raise self._failure(f"exited with {self.proc.returncode} before it was ready")
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise self._failure("was not ready in time")
            time.sleep(0.2)

    def _accepts(self):
        with socket.create_connection((self.host, self.port), timeout=2):
            return True

    def _failure(self, what):
        return RuntimeError(f"{self.name} {what}: {' '.join(self.cmd)}\n{self.log_tail()}")

    def log_tail(self, lines=40):
        """The last lines of stderr and of stdout, for a failure message."""
        if self.proc.poll() is not None:
            for t in self._drains:  # what it wrote before exiting may still be in the pipes
                t.join(2)
        with self._output:
            err, out = self.stderr_lines[-lines:], self.stdout_lines[-lines:]
        return f"stderr:\n{''.join(err)}stdout:\n{''.join(out)}"

    def alive(self):
        return self.proc.poll() is None

    def get(self, path, timeout=10, headers=None):
        """(status, body) of GET path; an HTTP error status is returned, not
        raised."""
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, name, labels=None):
        """Sum of the samples of `name` (with these labels, a dict) in
        /metrics, or None when there is none."""
        _, text = self.get("/metrics")
        total, found = 0.0, False
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            m = re.match(r"([^{\s]+)(\{[^}]*\})?\s+(\S+)$", line)
            if not m or m.group(1) != name:
                continue
            if labels and not all(f'{k}="{v}"' in (m.group(2) or "") for k, v in labels.items()):
                continue
            total += float(m.group(3))
            found = True
        return total if found else None

    def access_log(self):
        """The access-log records written so far (the JSON lines of stdout)."""
        with self._output:
            lines = [line.strip() for line in self.stdout_lines]
        return [json.loads(line) for line in lines if line.startswith("{")]

    def client(self, api_key="none", **kw):
        """An openai client for this server, without retries."""
        import openai
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig`, waits `timeout` seconds, then SIGKILL; returns the exit
        code (negative: the signal that ended it). The output lists are complete
        afterwards."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in self._drains:
            t.join(5)
        return self.proc.returncode
