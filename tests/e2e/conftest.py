import os
import pathlib
import signal
import sys
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# tools/server_process.py starts and stops every process the tests run.
sys.path.insert(0, str(REPO / "tools"))
from server_process import ServerProcess  # noqa: E402
# Waits for whole workloads (not latency checks) scale by this: the sanitizer
# run (scripts/sanitize_and_fuzz.sh) sets it, since the server under ASan
# computes several times slower.
TIME_SCALE = float(os.environ.get("BRISK_E2E_TIME_SCALE", "1"))


def skip_or_fail(reason):
    """Skip on a developer's machine; fail in CI, where setup installs everything
    (a silent skip there would hide a broken install step)."""
    if os.environ.get("CI"):
        pytest.fail(f"missing in CI (setup should have installed it): {reason}")
    pytest.skip(reason, allow_module_level=True)


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


MODEL_ID = "SmolLM2-135M-Instruct.Q4_1"


class BriskServer(ServerProcess):
    """A running `brisk serve` on a free port (started with --port 0), with a
    temporary config file made from `config_text`."""

    def __init__(self, brisk_bin, args=(), config_text=None, env=None):
        self.config_path = None
        cmd = [brisk_bin, "serve", "--port", "0", "--threads", "2"]
        if config_text is not None:
            fd, self.config_path = tempfile.mkstemp(suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(config_text)
            cmd += ["--config", self.config_path]
        try:
            super().__init__(cmd + list(args), name="brisk serve", env=env,
                             timeout=120 * TIME_SCALE)
        except BaseException:
            self._remove_config()
            raise

    def _remove_config(self):
        if self.config_path and os.path.exists(self.config_path):
            os.unlink(self.config_path)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        code = super().stop(sig, timeout)
        self._remove_config()
        return code


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
