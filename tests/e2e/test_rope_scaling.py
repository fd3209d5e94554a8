"""RoPE context extension from the serving profile (issue 12): a context
beyond the model's trained length is refused at startup unless the profile asks
for RoPE scaling; with model.rope_scaling: yarn the embedded SmolLM2 (8,192
trained positions) serves a prompt past 8,192 tokens through the openai client.
The arithmetic is checked against llama.cpp on the same file by
tests/e2e/test_arch_logits.py (qwen2-yarn) and src/model/rope_scaling_test.cc."""
import subprocess

import openai
import pytest

from conftest import MODEL_ID
from test_eval import models_info

# About 8,700 tokens of SmolLM2's tokenizer: past the trained 8,192.
LONG = "The quick brown fox jumps over the lazy dog near the river bank. " * 650


def test_context_past_training_needs_rope_scaling(brisk_bin):
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--max-context-tokens", "16384"],
                       capture_output=True, text=True, timeout=120)
    out = r.stderr + r.stdout
    assert r.returncode == 1, out
    assert "model.max_context_tokens 16384 exceeds the model's context length 8192" in out, out
    assert "model.rope_scaling: yarn or linear extends it" in out, out


def test_yarn_profile_serves_a_prompt_past_the_trained_context(make_server):
    s = make_server(config_text="model: {max_context_tokens: 16384, rope_scaling: yarn}\n"
                                "scheduler: {max_batch_tokens: 2048, kv_cache_bytes: 1GiB}\n")
    info = models_info(s)
    assert info["rope_scaling"] == {"type": "yarn", "factor": 2.0, "original_context": 8192,
                                    "context": 16384}
    answer = s.client().completions.create(model=MODEL_ID, prompt=LONG, max_tokens=4,
                                           temperature=0)
    assert answer.usage.prompt_tokens > 8192, answer.usage
    assert answer.usage.completion_tokens == 4
    # The cap is the extended context, not the trained one.
    with pytest.raises(openai.BadRequestError) as e:
        s.client().completions.create(model=MODEL_ID, prompt=LONG * 2, max_tokens=4)
    assert "maximum context length is 16384" in str(e.value)


def test_rope_scaling_flags_and_bad_values(brisk_bin, make_server):
    s = make_server(args=["--rope-scaling", "linear", "--rope-scaling-factor", "4"])
    assert models_info(s)["rope_scaling"]["context"] == 32768
    s.stop()
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--rope-scaling", "yarn"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "needs model.rope_scaling_factor or model.max_context_tokens" in r.stderr + r.stdout
