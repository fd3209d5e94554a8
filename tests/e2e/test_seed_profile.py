"""The seed's serving profile as written (inference.yaml at the repository
root: precision fp8, a 16384-token context) on Gemma 3 270M (32k context;
the embedded SmolLM2 has 8k): refused without a gate report for its serving
key, with the command that makes one; served ungated with --allow-ungated
(fp8 weights converted at load); the golden set's gate passed and kept; then
started as written and answering through the openai client."""
import os
import subprocess

from conftest import skip_or_fail
from test_eval import models_info

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = os.path.join(ROOT, "inference.yaml")
GEMMA = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
FACTS = os.path.join(ROOT, "bench", "golden", "facts_completion.jsonl")


def test_seed_profile_serves_fp8_after_its_gate(brisk_bin, make_server, tmp_path):
    if not os.path.exists(GEMMA):
        skip_or_fail("Gemma 3 270M not installed (scripts/install_models.sh)")
    gates = tmp_path / "gates"
    args = ["--config", PROFILE, "--model", GEMMA, "--gate-dir", str(gates)]
    r = subprocess.run([brisk_bin, "serve", "--port", "0", *args], capture_output=True,
                       text=True, timeout=120)
    out = r.stderr + r.stdout
    assert r.returncode == 1 and "model.precision fp8" in out and "--save-gate" in out, out

    s = make_server(args=[*args, "--allow-ungated"])
    info = models_info(s)
    assert info["precision"] == "fp8" and info["gated"] is False
    golden = tmp_path / "facts.jsonl"
    golden.write_text("\n".join(open(FACTS).read().splitlines()[:8]) + "\n")
    (tmp_path / "facts.gate.yaml").write_text("min_pass_rate: 0.25\n")
    r = subprocess.run([brisk_bin, "eval", "golden", "--set", str(golden), "--url", s.url,
                        "--save-gate", str(gates)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    s.stop()

    s = make_server(args=args)
    info = models_info(s)
    assert info["precision"] == "fp8" and info["gated"] is True
    answer = s.client().chat.completions.create(
        model="gemma-3-270m-q4_k_m", max_tokens=12, temperature=0,
        messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert answer.choices[0].message.content
