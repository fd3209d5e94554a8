#!/usr/bin/env python3
"""llama.cpp's greedy continuations of the Gemma 3 reference prompts, on the
model's weights dequantized to f32 (every weight is
exactly the value the quantized file encodes, and neither engine rounds
activations, so two implementations can agree closely).

Usage (from the repo root; needs bench/llamacpp/build.sh's tools):
    python3 tools/make_gemma3_llamacpp_fixture.py
Reads the prompts (token ids, BOS first) of tests/fixtures/gemma3_exact.json,
makes an F32 copy of models/gemma-3-270m-q4_k_m.gguf with llama-quantize
--allow-requantize, serves it with llama-server (2 threads, flash attention
off, f16 KV: its defaults) and asks /completion for a greedy continuation of
each prompt (temperature 0, top_k 1, up to 24 tokens; it stops after an end
token, which is recorded). Writes tests/fixtures/gemma3_llamacpp_f32.json.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

from server_process import ServerProcess, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
PROMPTS = os.path.join(ROOT, "tests", "fixtures", "gemma3_exact.json")
OUT = os.path.join(ROOT, "tests", "fixtures", "gemma3_llamacpp_f32.json")
N_PREDICT = 24


def llama_bin():
    out = subprocess.run(["bash", os.path.join(ROOT, "bench", "llamacpp", "build.sh")],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def main():
    bindir = llama_bin()
    prompts = json.load(open(PROMPTS))["prompts"]
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "gemma3_f32.gguf")
        subprocess.run([f"{bindir}/llama-quantize", "--allow-requantize", MODEL, f32, "F32"],
                       check=True, capture_output=True)
        port = free_port()
        server = ServerProcess([f"{bindir}/llama-server", "-m", f32, "--port", str(port), "-t",
                                "2", "-c", "2048", "-np", "1"], port=port, ready_path="/health",
                               timeout=300)
        try:
            out = []
            for p in prompts:
                r = post(port, "/completion", {"prompt": p["tokens"], "n_predict": N_PREDICT,
                                               "temperature": 0, "top_k": 1, "cache_prompt": False,
                                               "return_tokens": True})
                out.append({"tokens": p["tokens"], "greedy": {"tokens": r["tokens"],
                                                              "text": r["content"],
                                                              "stop_type": r.get("stop_type")}})
                print(len(out), len(r["tokens"]), repr(r["content"][:40]), file=sys.stderr)
        finally:
            server.stop()
    meta = {"description": "llama.cpp greedy continuations on Gemma 3 270M dequantized to F32 "
                           "(tools/make_gemma3_llamacpp_fixture.py)",
            "llama_cpp": os.path.basename(os.path.dirname(bindir)), "n_predict": N_PREDICT}
    json.dump({"meta": meta, "prompts": out}, open(OUT, "w"), separators=(",", ":"))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
