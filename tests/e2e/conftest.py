import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# Waits for whole workloads (not latency checks) scale by this: the sanitizer
# run (scripts/sanitize_and_fuzz.sh) sets it, since the server under ASan
# computes several times slower.
TIME_SCALE = float(os.environ.get("BRISK_E2E_TIME_SCALE", "1"))


def skip_or_fail(reason):
    """Skip on a developer's machine; fail in CI, where setup installs everything
    (a silent skip there would hide a broken install step)."""
    if os.environ.get("CI"):
        pytest.fail(f"missing in CI (setup should have installed it): {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def brisk_bin():
    path = pathlib.Path(os.environ.get("BRISK_BIN", REPO / "build" / "brisk"))
    if not path.exists():
        pytest.fail(f"{path} not built (cmake --build build)")
    return str(path)


@pytest.fixture(scope="session")
def default_model():
    path = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.fail("default model missing: run scripts/install_models.sh")
    return str(path)


import json
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"


class BriskServer:
    """A running `brisk serve` on a free port (started with --port 0)."""

    def __init__(self, brisk_bin, args=(), config_text=None, env=None):
        self.config_path = None
        cmd = [brisk_bin, "serve", "--port", "0", "--threads", "2"]
        if config_text is not None:
            fd, self.config_path = tempfile.mkstemp(suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(config_text)
            cmd += ["--config", self.config_path]
        cmd += list(args)
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        m = re.search(r"http://([^:]+):(\d+)", line)
        if not m:
            err = self.proc.stderr.read()
            self.proc.kill()
            raise RuntimeError(f"brisk serve did not start: {line!r} {err!r}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}"
        # Drain both pipes so the server never blocks on a full pipe; the
        # lines stay readable: stdout carries the access log (one JSON object
        # per finished request), stderr the process log.
        self.stdout_lines, self.stderr_lines = [], []
        for pipe, sink in ((self.proc.stdout, self.stdout_lines),
                           (self.proc.stderr, self.stderr_lines)):
            threading.Thread(target=self._drain, args=(pipe, sink), daemon=True).start()

    @staticmethod
    def _drain(pipe, sink):
        for line in pipe:
            sink.append(line)

    def access_log(self):
        """The access-log records written so far (parsed JSON lines)."""
        out = []
        for line in list(self.stdout_lines):
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def get(self, path, timeout=10):
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, name, labels=None):
        """Sum of the samples of `name` (with these labels) in /metrics."""
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

    def client(self, api_key="none", **kw):
        import openai
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.config_path:
            os.unlink(self.config_path)
        return self.proc.returncode


@pytest.fixture(scope="session")
def brisk_server(brisk_bin, default_model):
    """One shared server with the default configuration."""
    s = BriskServer(brisk_bin)
    yield s
    s.stop()


@pytest.fixture
def make_server(brisk_bin, default_model):
    """Factory for servers with their own config; stopped after the test."""
    started = []

    def make(config_text=None, args=()):
        s = BriskServer(brisk_bin, args=args, config_text=config_text)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop(signal.SIGKILL)
