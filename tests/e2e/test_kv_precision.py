"""cache.kv_precision end to end: a KV precision other than F16 is a serving
change like a weight precision (refused without a gate report for its
serving key, which names the KV precision; served and flagged with
--allow-ungated; started once its gate passed), an int8/fp8 cache holds
about twice the blocks of F16 in the same bytes, and it answers through the
openai client. Accuracy is measured in BENCHMARKS.md (bench/kv_precision.py)
and kv_precision_test.cc, not asserted here."""
import json
import os
import re
import subprocess
import time

from test_eval import models_info, run_eval

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "bench", "golden", "smollm2.jsonl")


def kv_blocks(server):
    """The pool's size (the gauges are set at each engine step: run one)."""
    server.client().completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt="Hi",
                                       max_tokens=1)
    for _ in range(100):  # the step's gauges land just after its response
        text = server.get("/metrics")[1]
        n = sum(float(m) for m in re.findall(
            r'^brisk:kv_cache_blocks\{state="(?:used|free|cached)"\} (\S+)$', text, re.M))
        if n > 0:
            return n
        time.sleep(0.05)
    raise AssertionError("brisk:kv_cache_blocks stayed 0")


def test_kv_precision_is_a_gated_serving_change(brisk_bin, make_server, tmp_path):
    gates = tmp_path / "gates"
    serve = [brisk_bin, "serve", "--port", "0", "--gate-dir", str(gates)]
    for kv in ("int8", "fp8", "bf16", "f32"):
        r = subprocess.run(serve + ["--kv-precision", kv], capture_output=True, text=True,
                           timeout=60)
        out = r.stderr + r.stdout
        assert r.returncode == 1 and f"cache.kv_precision {kv}" in out and "--save-gate" in out, \
            (kv, out)
    r = subprocess.run(serve + ["--kv-precision", "int4"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "one of: f16, f32, bf16, int8, fp8" in r.stderr + r.stdout

    f16 = make_server(args=["--kv-cache", "64MiB"])
    f16_blocks = kv_blocks(f16)
    assert models_info(f16)["kv_precision"] == "f16"
    f16.stop()

    args = ["--kv-precision", "int8", "--kv-cache", "64MiB", "--gate-dir", str(gates)]
    s = make_server(args=[*args, "--allow-ungated"])
    info = models_info(s)
    assert info["kv_precision"] == "int8" and info["gated"] is False
    assert info["serving_key"]["id"].endswith("-native-kvint8-" + info["serving_key"]["engine_version"])
    assert "brisk:serving_ungated 1" in s.get("/metrics")[1]
    # One byte a value plus one F16 scale per head_dim (64) values: 1.94x.
    int8_blocks = kv_blocks(s)
    assert 1.9 < int8_blocks / f16_blocks < 2.0, (int8_blocks, f16_blocks)
    answer = s.client().chat.completions.create(
        model="SmolLM2-135M-Instruct.Q4_1", max_tokens=8, temperature=0,
        messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert answer.choices[0].message.content
    # The shipped golden set's first cases with a lenient gate of their own,
    # kept under the int8 key; then the server starts without the flag.
    golden = tmp_path / "few.jsonl"
    golden.write_text("\n".join(open(GOLDEN).read().splitlines()[:6]) + "\n")
    (tmp_path / "few.gate.yaml").write_text("min_pass_rate: 0.5\n")
    r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--save-gate", str(gates))
    assert r.returncode == 0, r.stderr
    kept = gates / (info["serving_key"]["id"] + ".json")
    assert json.loads(kept.read_text())["serving_key"]["kv_precision"] == "int8"
    s.stop()
    s = make_server(args=args)
    assert models_info(s)["gated"] is True
    # fp8 KV is another key: still refused.
    r = subprocess.run(serve + ["--kv-precision", "fp8"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
