#!/usr/bin/env python3
"""Writes tests/fixtures/arch_logits/: small random-weight qwen2, qwen3,
qwen2 + YaRN and gemma3 GGUF files and llama.cpp's next-token log-probs for
them, so tests/e2e/test_arch_logits.py checks Brisk against llama.cpp in a
CI that has no llama.cpp.

For each case of FIXTURES (shapes: CASES in bench/logits_vs_llamacpp.py):
  * <case>.<type>.gguf: tools/make_random_gguf.py --arch, seed 1234;
  * <case>.<type>.llama.npz: llama-perplexity --kl-divergence-base over
    bench/golden/kld_text.txt (4 chunks of 128 tokens, the second half of
    each scored: 252 positions), reduced to the tokens of the chunks and, per
    scored position, llama.cpp's 64 most likely tokens and their log-probs
    (reduce_reference); top-1 and |dlogprob| over the top-10 are exact from
    that, the KLD is the top-64 sum plus one bucket for the rest (topk_kld);
  * manifest.json: the files' sha256 (the GGUF the reference belongs to; the
    test refuses another), the text's sha256, the llama.cpp build, and the
    scalars that need llama.cpp's whole distributions: for Q8_0, llama.cpp's
    KLD from its own F32 run of the same weights; for qwen2-yarn, its KLD
    from the unscaled qwen2 file. Beside them, what Brisk measured when the
    fixture was made, against the whole llama.cpp table and the reduced one
    (the cost of the reduction; BENCHMARKS.md quotes these).

Usage (from the repo root; needs build/brisk and bench/llamacpp/build.sh's
llama-perplexity):
    python3 tools/make_arch_logits_fixtures.py [--llama-bin DIR] [--brisk PATH]
The GGUF files are byte-for-byte what make_random_gguf.py writes with the
gguf package at hand (0.19.0 when committed); they are committed rather than
regenerated in CI, so a different gguf or numpy version cannot move them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import logits_vs_llamacpp as lvl  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "arch_logits")
# (case, weight type), in the order the F32 run of a case precedes its Q8_0
# and the unscaled qwen2 precedes qwen2-yarn.
FIXTURES = [("qwen2", "F32"), ("qwen2", "Q8_0"), ("qwen2-yarn", "F32"),
            ("qwen3", "F32"), ("qwen3", "Q8_0"), ("gemma3", "F32"), ("gemma3", "Q8_0")]
CTX, CHUNKS, SEED, THREADS = 128, 4, 1234, 2


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def llama_version(llama_bin):
    r = subprocess.run([os.path.join(llama_bin, "llama-perplexity"), "--version"],
                       capture_output=True, text=True)
    lines = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("version")]
    return lines[0] if lines else "unknown"


def gguf_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:  # pragma: no cover
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brisk", default=os.environ.get("BRISK_BIN", os.path.join(ROOT, "build", "brisk")))
    ap.add_argument("--llama-bin", default=lvl.LLAMA_BIN, help="directory with llama-perplexity")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    if not os.access(os.path.join(args.llama_bin, "llama-perplexity"), os.X_OK):
        sys.exit(f"no llama-perplexity in {args.llama_bin} (bash bench/llamacpp/build.sh)")
    os.makedirs(args.out, exist_ok=True)
    full = {}  # (case, type) -> (llama.cpp's whole table, Brisk's)
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, wtype in FIXTURES:
            name = f"{case}.{wtype}"
            model = os.path.join(args.out, name + ".gguf")
            lvl.make_model(case, wtype, SEED, model)
            _, l_tok, l_lp = lvl.llama_base(args.llama_bin, model, os.path.join(tmp, name + ".llama.bin"),
                                            CTX, CHUNKS, THREADS)
            _, b_tok, b_lp = lvl.brisk_base(args.brisk, model, os.path.join(tmp, name + ".brisk.bin"),
                                            CTX, CHUNKS, THREADS)
            if not np.array_equal(l_tok, b_tok):
                sys.exit(f"{name}: llama.cpp and Brisk tokenized the text differently")
            full[(case, wtype)] = (l_lp, b_lp)
            ids, lp = lvl.reduce_reference(l_lp)
            ref = os.path.join(args.out, name + ".llama.npz")
            with open(ref, "wb") as f:  # np.savez_compressed(path) would append .npz
                np.savez_compressed(f, tokens=l_tok.astype(np.int32), top_ids=ids, top_lp=lp)
            e = {"case": case, "type": wtype, "gguf": name + ".gguf", "gguf_sha256": sha256(model),
                 "gguf_bytes": os.path.getsize(model), "reference": name + ".llama.npz",
                 "make_random_gguf": ["--arch", case.split("-")[0], "--type", wtype,
                                      "--embd-type", wtype, "--seed", str(SEED)] + lvl.CASES[case],
                 "llama_tail_mass_max": float((1 - np.exp(lp.astype(np.float64)).sum(-1)).max())}
            if wtype != "F32":
                e["llama_kld_vs_f32"] = float(lvl.kld(full[(case, "F32")][0], l_lp).mean())
            if "-" in case:
                e["llama_kld_vs_base"] = float(lvl.kld(full[(case.split("-")[0], wtype)][0], l_lp).mean())
            # What Brisk gives now, against the whole table and the reduced one.
            whole = lvl.compare(l_lp, b_lp)
            reduced = lvl.compare_reference(ids, lp, b_lp)
            for r in (whole, reduced):
                r.update({k: e[k] for k in ("llama_kld_vs_f32", "llama_kld_vs_base") if k in e})
                if wtype != "F32":
                    r["brisk_kld_vs_f32"] = float(lvl.kld(full[(case, "F32")][1], b_lp).mean())
                lvl.judge(r, wtype)
            e["brisk_at_creation"] = {"whole_vocab": whole, "top_k": reduced}
            entries.append(e)
            print(f"{name}: {e['gguf_bytes'] / 1e3:.0f} kB, same top-1 {reduced['same_top1']:.4f}, "
                  f"max |dlogprob| {reduced['max_dlogprob']:.4f}, mean KLD {whole['kld_mean']:.2e} "
                  f"(top-{lvl.REFERENCE_TOP_K} + rest {reduced['kld_mean']:.2e}), "
                  f"ok {whole['ok']} / {reduced['ok']}", file=sys.stderr)
    manifest = {
        "description": "random-weight GGUF files and llama.cpp's top-k next-token log-probs for "
                       "them (tools/make_arch_logits_fixtures.py; checked by "
                       "tests/e2e/test_arch_logits.py)",
        "llama_cpp": f"{os.path.basename(os.path.dirname(os.path.abspath(args.llama_bin)))} "
                     f"{llama_version(args.llama_bin)}",
        "gguf_package": gguf_version(), "numpy": np.__version__,
        "text": os.path.relpath(lvl.TEXT, ROOT), "text_sha256": sha256(lvl.TEXT),
        "ctx": CTX, "chunks": CHUNKS, "threads": THREADS, "top_k": lvl.REFERENCE_TOP_K,
        "cases": entries}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    bad = [f"{e['case']}.{e['type']}" for e in entries if not e["brisk_at_creation"]["top_k"]["ok"]]
    if bad:
        print(f"Brisk is out of tolerance on {', '.join(bad)} (written anyway)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
