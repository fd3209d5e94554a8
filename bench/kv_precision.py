#!/usr/bin/env python3
"""KV cache precisions (cache.kv_precision) on the real models, in
one run: quality, room and speed of each against the default F16 cache.

Quality: `brisk eval kld` with each KV precision against two references
saved once per model on the same text:
  - "exact": the F32 copy of the weights (bench/kld_vs_llamacpp.py makes it)
    with an F32 KV cache;
  - "f16 KV": the file's own weights with the default F16 cache.
Three figures per KV precision: the F32 weights with it against exact (the
KV precision's own error, nothing else rounded: the int8 goal, KLD
<= 0.002, is this one); the file's weights with it against exact (the whole
configuration); and against "f16 KV" (what switching the KV precision
changes for users of the file: with 8-bit activations in the quantized
matmuls any perturbation moves the rounding, so this has a floor).
Room: KV bytes per token (`brisk bench-model`'s kv_bytes_per_token) and the
sequences of --seq-tokens that fit in 512 MiB.
Speed: `brisk bench-model --kv-precision K` pp512, tg128 from an empty cache
and tg128 after --depth tokens (where attention reads the most KV), taken in
rounds so that drift falls on every precision alike; ratios to F16.

    python3 bench/kv_precision.py [--models smol,gemma] [--kv f16,f32,bf16,int8,fp8]
        [--ctx 512] [--chunks 0] [--depth 2048] [--rounds 2] [--out bench/results/kv_precision.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kld_vs_llamacpp import CACHE, TEXT, f32_copy, installed_models, run  # noqa: E402

BUDGET = 512 << 20


def kld(brisk, model, base, kv, ctx, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        run([brisk, "eval", "kld", "--model", model, "--kv-precision", kv, "--base", base,
             "--json", out.name, "--ctx", str(ctx), "--threads", str(threads)])
        j = json.load(open(out.name))
    return {"kld": j["kld"]["mean"], "kld_stderr": j["kld"]["stderr"], "kld_p99": j["kld_p99"],
            "same_top1": j["same_top1"]["mean"], "ln_ppl_ratio": j["ln_ppl_ratio"]["mean"],
            "rms_delta_p": j["rms_delta_p"]}


def speed(brisk, model, kv, depth, threads, reps):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        r = {}
        for d in (0, depth):
            run([brisk, "bench-model", "-m", model, "--kv-precision", kv, "-t", str(threads),
                 "-p", "512", "-n", "128", "-d", str(d), "-r", str(reps), "--parallel", "1",
                 "--npp", "8", "--ntg", "8", "--json", out.name])
            j = json.load(open(out.name))
            r["kv_bytes_per_token"] = j["kv_bytes_per_token"]
            if d == 0:
                r["pp512"] = j["pp"]["tokens_per_s"]
                r["tg128"] = j["tg"]["tokens_per_s"]
            else:
                r[f"tg128_d{d}"] = j["tg"]["tokens_per_s"]
    return r


def quality(a, model, kvs):
    stem = os.path.splitext(os.path.basename(model))[0]
    f32 = f32_copy(model)
    exact = os.path.join(CACHE, f"{stem}.c{a.ctx}.exact.kldbase")
    own = os.path.join(CACHE, f"{stem}.c{a.ctx}.kvf16.kldbase")
    chunks = ["--chunks", str(a.chunks)] if a.chunks else []
    run([a.brisk, "eval", "kld", "--model", f32, "--kv-precision", "f32", "--text", TEXT,
         "--save-base", exact, "--ctx", str(a.ctx), "--threads", str(a.threads), *chunks])
    run([a.brisk, "eval", "kld", "--model", model, "--text", TEXT, "--save-base", own,
         "--ctx", str(a.ctx), "--threads", str(a.threads), *chunks])
    rows = {}
    for kv in kvs:
        rows[kv] = {"kv_alone": kld(a.brisk, f32, exact, kv, a.ctx, a.threads),
                    "vs_exact": kld(a.brisk, model, exact, kv, a.ctx, a.threads),
                    "vs_f16_kv": kld(a.brisk, model, own, kv, a.ctx, a.threads)}
    os.unlink(exact)
    os.unlink(own)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=os.path.join(ROOT, "build", "brisk"))
    ap.add_argument("--models", default="smol,gemma")
    ap.add_argument("--kv", default="f16,f32,bf16,int8,fp8")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=0, help="chunks of the text (0: all)")
    ap.add_argument("--depth", type=int, default=2048)
    ap.add_argument("--seq-tokens", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--quality-from", default="",
                    help="reuse the KLD figures of an earlier run's JSON (speed only now)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "kv_precision.json"))
    a = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    kvs = [k for k in a.kv.split(",") if k]
    earlier = {}
    if a.quality_from:
        with open(a.quality_from) as f:
            earlier = {r["model"]: r["kv"] for r in json.load(f)["results"]}
    results = []
    for label, model in installed_models(a.models):
        rel = os.path.relpath(model, ROOT)
        if label in earlier:
            rows = {kv: {k: v for k, v in earlier[label][kv].items() if k != "speed"}
                    for kv in kvs}
        else:
            rows = quality(a, model, kvs)
        if not a.skip_speed:
            runs = {kv: [] for kv in kvs}
            for _ in range(a.rounds):
                for kv in kvs:
                    runs[kv].append(speed(a.brisk, model, kv, a.depth, a.threads, a.reps))
            for kv in kvs:
                rows[kv]["speed"] = {m: statistics.median(r[m] for r in runs[kv])
                                     for m in runs[kv][0]}
                rows[kv]["speed"]["runs"] = runs[kv]
        results.append({"model": label, "file": rel, "kv": rows})

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"ctx": a.ctx, "chunks": a.chunks, "depth": a.depth, "seq_tokens": a.seq_tokens,
                   "text": os.path.relpath(TEXT, ROOT), "results": results}, f, indent=2)
    print(f"\nKV cache precisions, text {os.path.relpath(TEXT, ROOT)}, n_ctx {a.ctx}; KLD to "
          f"the exact configuration (F32 weights, F32 KV) and to the same weights with the F16 "
          f"KV cache\n")
    print("| model | KV | KV alone: KLD | KV alone: same top-1 | file + KV vs exact: KLD | "
          "same top-1 | vs F16 KV: KLD | 99% KLD | same top-1 | bytes/token | "
          f"{a.seq_tokens}-token seqs in 512 MiB | pp512 | tg128 | tg128 @{a.depth} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        base = r["kv"].get("f16", {}).get("speed")
        for kv, row in r["kv"].items():
            k, e, o = row["kv_alone"], row["vs_exact"], row["vs_f16_kv"]
            sp = row.get("speed")
            cells = ["", "", "", "", ""]
            if sp:
                per_block = sp["kv_bytes_per_token"] * 16
                seqs = (BUDGET // per_block) * 16 // a.seq_tokens
                cells = [f"{sp['kv_bytes_per_token']:.0f}", f"{seqs}"]
                for m in ("pp512", "tg128", f"tg128_d{a.depth}"):
                    ratio = f" ({sp[m] / base[m]:.2f}x)" if base else ""
                    cells.append(f"{sp[m]:.0f}{ratio}")
            print(f"| {r['model']} | {kv} | {k['kld']:.6f} | {100 * k['same_top1']:.2f}% | "
                  f"{e['kld']:.6f} | {100 * e['same_top1']:.2f}% | "
                  f"{o['kld']:.6f} ± {o['kld_stderr']:.6f} | {o['kld_p99']:.5f} | "
                  f"{100 * o['same_top1']:.2f}% | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
