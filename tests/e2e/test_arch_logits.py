"""qwen2 / qwen3 next-token distributions of Brisk against llama.cpp on the same
random-weight files (bench/logits_vs_llamacpp.py; tolerances there: F32 same
top-1 >= 99%, max |dlogprob| over llama.cpp's top-10 <= 0.01, mean KLD <= 1e-6;
Q8_0 >= 95%, <= 0.5, <= 3e-3, and Brisk's KLD from its own F32 run of the same
weights within 1.25x llama.cpp's).

llama.cpp is not part of the project's setup (bench/llamacpp/build.sh builds it
for benchmarks), so without llama-perplexity these tests skip, naming what is
missing; BRISK_LLAMA_BIN points at another build's bin directory.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "bench" / "logits_vs_llamacpp.py"
LLAMA_BIN = os.environ.get(
    "BRISK_LLAMA_BIN", os.path.expanduser("~/.cache/brisk/llama.cpp-0.3.36/bin"))


@pytest.fixture(scope="module")
def llama_bin():
    if not os.access(os.path.join(LLAMA_BIN, "llama-perplexity"), os.X_OK):
        pytest.skip(f"llama.cpp's llama-perplexity not built in {LLAMA_BIN} "
                    "(bash bench/llamacpp/build.sh, or set BRISK_LLAMA_BIN)")
    try:
        import gguf  # noqa: F401  (the random-weight files are written with it)
    except ImportError:
        pytest.skip("the gguf Python package is not installed")
    return LLAMA_BIN


@pytest.mark.parametrize("arch", ["qwen2", "qwen3"])
def test_logits_match_llamacpp(brisk_bin, llama_bin, arch, tmp_path):
    out = tmp_path / "result.json"
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--brisk", brisk_bin, "--llama-bin", llama_bin,
         "--archs", arch, "--types", "F32,Q8_0", "--ctx", "128", "--chunks", "4",
         "--workdir", str(tmp_path), "--json", str(out), "--check"],
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads(out.read_text())["results"]
    assert [x["type"] for x in results] == ["F32", "Q8_0"]
    for x in results:
        assert x["positions"] == 4 * 63, x
        assert x["ok"], x


def test_yarn_logits_match_llamacpp(brisk_bin, llama_bin, tmp_path):
    """YaRN from the file's rope.scaling keys (factor 4 over a trained context
    of 32 positions; every scored position is past it): Brisk against llama.cpp,
    and the scaling must move llama.cpp's own distributions far more than the
    engines differ (the script's check)."""
    out = tmp_path / "result.json"
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--brisk", brisk_bin, "--llama-bin", llama_bin,
         "--archs", "qwen2,qwen2-yarn", "--types", "F32", "--ctx", "128", "--chunks", "4",
         "--workdir", str(tmp_path), "--json", str(out), "--check"],
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    yarn = [x for x in json.loads(out.read_text())["results"] if x["arch"] == "qwen2-yarn"]
    assert len(yarn) == 1 and yarn[0]["ok"], yarn
    assert yarn[0]["llama_kld_vs_base"] > 0.01, yarn
