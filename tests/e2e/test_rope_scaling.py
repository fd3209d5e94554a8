"""RoPE context extension from the serving profile: a context
beyond the model's trained length is refused at startup unless the profile asks
for RoPE scaling; with model.rope_scaling: yarn the embedded SmolLM2 (8,192
trained positions) serves a prompt past 8,192 tokens through the openai client.
A profile's scaling changes every answer, so it is a serving change like a
precision: part of the serving key, started only through a golden-set gate
(or --allow-ungated). The arithmetic is checked against llama.cpp on the same
file by tests/e2e/test_arch_logits.py (qwen2-yarn) and by
src/model/rope_scaling_test.cc."""
import json
import subprocess

import openai
import pytest

from conftest import MODEL_ID
from test_eval import FACTS, models_info, run_eval

# About 8,700 tokens of SmolLM2's tokenizer: past the trained 8,192.
LONG = "The quick brown fox jumps over the lazy dog near the river bank. " * 650
YARN_16K = "model: {max_context_tokens: 16384, rope_scaling: yarn}\n"


def test_context_past_training_needs_rope_scaling(brisk_bin):
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--max-context-tokens", "16384"],
                       capture_output=True, text=True, timeout=120)
    out = r.stderr + r.stdout
    assert r.returncode == 1, out
    assert "model.max_context_tokens 16384 exceeds the model's context length 8192" in out, out
    assert "model.rope_scaling: yarn or linear extends it" in out, out


def test_yarn_profile_serves_a_prompt_past_the_trained_context(make_server):
    s = make_server(config_text=YARN_16K +
                    "scheduler: {max_batch_tokens: 2048, kv_cache_bytes: 1GiB}\n",
                    args=["--allow-ungated"])
    info = models_info(s)
    assert info["rope_scaling"] == {"type": "yarn", "factor": 2.0, "original_context": 8192,
                                    "context": 16384}
    assert info["gated"] is False and info["serving_key"]["rope"] == "yarn-x2-o8192"
    answer = s.client().completions.create(model=MODEL_ID, prompt=LONG, max_tokens=4,
                                           temperature=0)
    assert answer.usage.prompt_tokens > 8192, answer.usage
    assert answer.usage.completion_tokens == 4
    # The cap is the extended context, not the trained one.
    with pytest.raises(openai.BadRequestError) as e:
        s.client().completions.create(model=MODEL_ID, prompt=LONG * 2, max_tokens=4)
    assert "maximum context length is 16384" in str(e.value)


def test_yarn_profile_starts_through_its_gate(brisk_bin, make_server, tmp_path):
    gates = tmp_path / "gates"
    config = tmp_path / "yarn.yaml"
    config.write_text(YARN_16K)
    serve = [brisk_bin, "serve", "--port", "0", "--config", str(config), "--gate-dir", str(gates)]
    r = subprocess.run(serve, capture_output=True, text=True, timeout=120)
    out = r.stderr + r.stdout
    assert r.returncode == 1 and "RoPE scaling yarn-x2-o8192 is a serving change" in out, out

    s = make_server(args=["--config", str(config), "--gate-dir", str(gates), "--allow-ungated"])
    key = models_info(s)["serving_key"]
    assert key["id"].endswith("-native-kvf16-rope-yarn-x2-o8192-" + key["engine_version"])
    golden = tmp_path / "facts.jsonl"
    golden.write_text("\n".join(open(FACTS).read().splitlines()[:4]) + "\n")
    # A distribution check with a bound YaRN meets on SmolLM2 within its
    # trained context (the scaling moves every position's distribution).
    (tmp_path / "facts.gate.yaml").write_text(
        "min_pass_rate: 0.0\nmax_kld: 1.0\nkld_ctx: 128\nkld_chunks: 1\n")
    report_path = tmp_path / "report.json"
    r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--save-gate", str(gates),
                 "--json", str(report_path), "--kld-threads", "2")
    assert r.returncode == 0, r.stderr + r.stdout
    report = json.loads(report_path.read_text())
    assert report["kld"]["tested"]["rope"] == "yarn-x2-o8192"
    assert 0 < report["kld"]["kld"]["mean"] < 1.0, report["kld"]
    assert (gates / (key["id"] + ".json")).exists()
    s.stop()

    s = make_server(args=["--config", str(config), "--gate-dir", str(gates)])
    assert models_info(s)["gated"] is True


def test_rope_scaling_flags_and_bad_values(brisk_bin, make_server):
    s = make_server(args=["--rope-scaling", "linear", "--rope-scaling-factor", "4",
                          "--allow-ungated"])
    assert models_info(s)["rope_scaling"]["context"] == 32768
    s.stop()
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--rope-scaling", "yarn"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "needs model.rope_scaling_factor or model.max_context_tokens" in r.stderr + r.stdout
    # A factor without a scaling type is refused, not ignored.
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--rope-scaling-factor", "4"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "model.rope_scaling_factor needs model.rope_scaling" in r.stderr + r.stdout
