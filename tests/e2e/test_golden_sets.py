"""The golden sets that ship for the two real models (bench/golden/smollm2.jsonl,
bench/golden/gemma3.jsonl), each with its gate next to it (<set>.gate.yaml):
both parse and find their gate by that convention; the SmolLM2 set passes
its own gate against the default model at native precision; a spread of the
Gemma set (every fourth case: completions, few-shot chat, choice, JSON
schema) passes against Gemma 3 270M at its native precision."""
import json
import subprocess

import pytest

from conftest import REPO, TIME_SCALE
from test_gemma3 import gemma  # noqa: F401  (the module's Gemma server fixture)

GOLDEN = REPO / "bench" / "golden"
SETS = {"smollm2": "SmolLM2-135M-Instruct", "gemma3": "Gemma 3 270M"}


def run_eval(brisk_bin, *args, timeout=300):
    return subprocess.run([brisk_bin, "eval", "golden", *args], capture_output=True, text=True,
                          timeout=timeout * TIME_SCALE)


def cases_of(name):
    return [json.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_text().splitlines()
            if line.strip()]


def scaled_gate(name, tmp_path):
    """The set's own gate; under a slowed build (BRISK_E2E_TIME_SCALE, the
    sanitizer run) a copy with the latency bound scaled, the pass-rate bound
    unchanged."""
    gate = GOLDEN / f"{name}.gate.yaml"
    if TIME_SCALE == 1:
        return gate
    lines = []
    for line in gate.read_text().splitlines():
        if line.startswith("max_latency_p95_ms:"):
            line = f"max_latency_p95_ms: {float(line.split(':')[1]) * TIME_SCALE:.0f}"
        lines.append(line)
    scaled = tmp_path / f"{name}.gate.yaml"
    scaled.write_text("\n".join(lines) + "\n")
    return scaled


@pytest.mark.parametrize("name", sorted(SETS))
def test_set_parses_and_finds_its_gate(brisk_bin, name, tmp_path):
    cases = cases_of(name)
    assert 30 <= len(cases) <= 60, len(cases)
    kinds = {next(k for k in c["check"] if k != "ignore_case") for c in cases}
    assert {"contains_any", "contains", "regex", "exact", "json", "json_schema"} <= kinds, kinds
    assert any("messages" in c for c in cases) and any("prompt" in c for c in cases)
    assert any("response_format" in c for c in cases) and any("guided_choice" in c for c in cases)
    # Against a closed port every case fails at once, but only after the set
    # and the gate next to it were read: the report lists the gate's bounds.
    out = tmp_path / "r.json"
    r = run_eval(brisk_bin, "--set", str(GOLDEN / f"{name}.jsonl"), "--url",
                 "http://127.0.0.1:1", "--model", "x", "--json", str(out), timeout=60)
    assert r.returncode == 1, r.stderr
    assert f"{len(cases)} cases" in r.stderr and f"{name}.gate.yaml" in r.stderr, r.stderr
    report = json.loads(out.read_text())
    assert [g["threshold"] for g in report["gate"]] == [
        "min_pass_rate_lower_bound", "max_latency_p95_ms"]
    # Native passes every case; the bound sits below that (see the gate's comment).
    assert 0.8 <= report["gate"][0]["bound"] < 0.95
    # The gate names the distribution check too; with no server's serving key
    # there is nothing to compare, and the report says so.
    assert report["kld"]["checked"] is False, report["kld"]


def test_smollm2_set_passes_its_gate_at_native_precision(brisk_bin, brisk_server, tmp_path):
    out = tmp_path / "r.json"
    r = run_eval(brisk_bin, "--set", str(GOLDEN / "smollm2.jsonl"), "--url", brisk_server.url,
                 "--gate", str(scaled_gate("smollm2", tmp_path)), "--json", str(out))
    report = json.loads(out.read_text())
    failed = [(x["id"], x["answer"]) for x in report["results"] if not x["passed"]]
    assert r.returncode == 0 and report["gate_passed"], (failed, report["gate"])
    assert report["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert report["cases"] == len(cases_of("smollm2"))


def test_gemma3_set_spread_passes_at_native_precision(brisk_bin, gemma, tmp_path):  # noqa: F811
    # Every fourth case keeps this to a few seconds; the full set and its gate
    # are BENCHMARKS.md's run (Gemma's vocabulary makes each token dear here).
    lines = (GOLDEN / "gemma3.jsonl").read_text().splitlines()[::4]
    subset = tmp_path / "gemma3_spread.jsonl"
    subset.write_text("\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    r = run_eval(brisk_bin, "--set", str(subset), "--url", gemma.url, "--json", str(out))
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(out.read_text())
    assert report["model"] == "gemma-3-270m-q4_k_m" and report["cases"] == len(lines)
    failed = [(x["id"], x["answer"]) for x in report["results"] if not x["passed"]]
    # All pass at native on the machine the set was written on; one may flip
    # with another CPU's kernel variant.
    assert len(failed) <= 1, failed
