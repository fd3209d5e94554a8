#!/usr/bin/env python3
"""The fp8 (and int8) weight format's own accuracy bound, measured by an
independent engine.

    python3 bench/fp8_bound.py [--models smol,gemma] [--formats fp8,int8]
        [--ctx 512] [--threads 2] [--out bench/results/fp8_bound.json] [--update]

Question: Brisk's `--precision fp8` reaches same-top-1 ~90% against the F32
weights (goal >= 98%). Is that the format's limit or Brisk's kernels? For each
model this script writes an F32 GGUF whose matrices are replaced by their
load-time-converted values, rounded exactly as Brisk rounds them and then
dequantized back to f32, and scores it with llama.cpp's `llama-perplexity
--kl-divergence` against the F32 copy's saved distributions (same text and
chunking as bench/kld_vs_llamacpp.py). llama.cpp then computes in f32 with
those weights, so its KLD / same-top-1 is the bound the weight format alone
sets, with no activation rounding.

Which tensors: those src/model/model.cc converts at load (GetMatrix):
attn_q/k/v/output and ffn_gate/up/down of every layer, and the output
projection. Gemma 3 and SmolLM2 tie the output to token_embd.weight: Brisk
converts the projection but looks embeddings up in the file's own type, so
the script adds an `output.weight` (the converted copy) and leaves
token_embd.weight exact; llama.cpp uses output.weight when present.

Rounding, bit for bit as src/tensor/quant_ref_channel.cc (one scale per output
channel = per row):
  fp8:  d = f16(amax / 448), q = E4M3(x * f32(1 / d)) (round to nearest even,
        saturating at +-448, src/tensor/fp8.cc), value = d * q
  int8: d = f16(amax / 127), q = clamp(rint(x * f32(1 / d)), -127, 127),
        value = d * q
The E4M3 rounding is done twice, with ml_dtypes.float8_e4m3fn (when
installed) and with a numpy transcription of FloatToE4M3, and the two must
agree on every weight. Also reported: each format's relative RMS weight error
||W_q - W|| / ||W|| per tensor kind and overall. `--formats f32` adds a
control (the rewrite with unchanged values: KLD must be ~0).

Needs llama.cpp's tools (bench/llamacpp/build.sh), the installed models and
their F32 copies (made on first use), numpy and gguf. Large files go to
~/.cache/brisk/kld/ and are removed afterwards unless --keep. Runtime: one
llama-perplexity pass over the text per format plus one for the base, each
~1.5 min (SmolLM2) / ~4 min (Gemma) on 2 busy cores; measured 7.5 min for
SmolLM2 (with the f32 control) and 11.7 min for Gemma, run one model at a time
with --update on a shared, loaded 2-core machine. --timeout bounds each pass.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np
import gguf

from kld_vs_llamacpp import CACHE, ROOT, TEXT, f32_copy, installed_models, llama_bin, \
    llamacpp_stats, run

try:
    import ml_dtypes
except ImportError:  # the numpy transcription alone is then used
    ml_dtypes = None

MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
E4M3_MAX = np.float32(448.0)
ROWS = 16384  # rows per numpy step


def kind(name):
    """'blk.3.ffn_down.weight' -> 'ffn_down'; 'output.weight' -> 'output'."""
    parts = name.split(".")
    return parts[2] if parts[0] == "blk" else parts[0]


def converted(name):
    return kind(name) in MATRICES or name == "output.weight"


def f16_scale(amax, qmax):
    """Per-row scale d = f16(amax / qmax) as f32, and f32(1 / d) (0 where d is 0)."""
    d = (amax / np.float32(qmax)).astype(np.float16).astype(np.float32)
    inv = np.zeros_like(d)
    np.divide(np.float32(1), d, out=inv, where=d != 0)
    return d, inv


def e4m3_numpy(s):
    """FloatToE4M3 then E4M3ToFloat (src/tensor/fp8.cc) of f32 array s, in numpy:
    nearest even on the binade's step, saturating at +-448."""
    a = np.minimum(np.abs(s), E4M3_MAX)
    _, e2 = np.frexp(a)                        # a = m * 2^e2, m in [0.5, 1)
    step_exp = np.where(e2 - 1 + 7 >= 1, e2 - 4, -9).astype(np.int32)
    q = np.rint(np.ldexp(a, -step_exp))        # exact scaling; rint is half to even
    v = np.minimum(np.ldexp(q, step_exp), E4M3_MAX).astype(np.float32)
    return np.copysign(v, s)


def fp8_channel(w):
    """Brisk's fp8 per-channel weights of matrix w (rows, k), dequantized to f32."""
    d, inv = f16_scale(np.max(np.abs(w), axis=1), E4M3_MAX)
    s = w * inv[:, None]
    v = e4m3_numpy(s)
    if ml_dtypes is not None:
        v2 = np.clip(s, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
        if not np.array_equal(v, v2):
            raise RuntimeError("E4M3 rounding: numpy transcription and ml_dtypes disagree")
    return v * d[:, None]


def int8_channel(w):
    """Brisk's int8 per-channel weights of matrix w (rows, k), dequantized to f32."""
    d, inv = f16_scale(np.max(np.abs(w), axis=1), 127)
    q = np.clip(np.rint(w * inv[:, None]), -127, 127).astype(np.float32)
    return q * d[:, None]


CONVERT = {"fp8": fp8_channel, "int8": int8_channel, "f32": lambda w: w}


def write_converted(src, dst, fmt):
    """Copy GGUF src to dst with the converted tensors rounded by `fmt` (values
    stay f32). Returns {kind: [sum sq err, sum sq weight]}."""
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(dst, arch)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    names = {t.name for t in reader.tensors}
    plan = []  # (output name, source tensor)
    for t in reader.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.F32:
            raise RuntimeError(f"{src}: {t.name} is {t.tensor_type.name}, expected F32")
        plan.append((t.name, t))
        if t.name == "token_embd.weight" and "output.weight" not in names:
            plan.append(("output.weight", t))  # the tied projection, converted separately
    for name, t in plan:
        writer.add_tensor_info(name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    err = {}
    for name, t in plan:
        if not converted(name):
            writer.write_tensor_data(t.data)
            continue
        wq = np.empty(t.data.shape, dtype=np.float32)
        e = err.setdefault(kind(name), [0.0, 0.0])
        for r0 in range(0, t.data.shape[0], ROWS):  # rows are independent
            w = np.asarray(t.data[r0:r0 + ROWS], dtype=np.float32)
            wq[r0:r0 + ROWS] = CONVERT[fmt](w)
            e[0] += float(np.sum((wq[r0:r0 + ROWS].astype(np.float64) - w) ** 2))
            e[1] += float(np.sum(w.astype(np.float64) ** 2))
        writer.write_tensor_data(wq)
    writer.close()
    return err


def rel_rms(err):
    """{kind: ||W_q - W|| / ||W||} and 'all'."""
    out = {k: (v[0] / v[1]) ** 0.5 for k, v in sorted(err.items())}
    out["all"] = (sum(v[0] for v in err.values()) / sum(v[1] for v in err.values())) ** 0.5
    return out


def brisk_measured(label):
    """Brisk's own numbers for the file from bench/results/kld.json, if there."""
    path = os.path.join(ROOT, "bench", "results", "kld.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        for r in json.load(f)["results"]:
            if r["model"] == label:
                return {p: {"kld": s["kld"], "same_top1": s["same_top1"]}
                        for p, s in r.get("precisions", {}).items()}
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="smol,gemma", help="keys of kld_vs_llamacpp.MODELS")
    ap.add_argument("--formats", default="fp8,int8",
                    help="fp8, int8, and f32 (control: values unchanged)")
    ap.add_argument("--ctx", type=int, default=512, help="tokens per chunk (second half scored)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per llama.cpp run")
    ap.add_argument("--keep", action="store_true", help="keep the converted GGUFs and bases")
    ap.add_argument("--update", action="store_true",
                    help="keep other models' results already in --out (run models one by one)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fp8_bound.json"))
    a = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    bindir = llama_bin()
    t_start = time.time()
    results = []
    for label, model in installed_models(a.models):
        stem = os.path.splitext(os.path.basename(model))[0]
        f32 = f32_copy(model, bindir)
        base = os.path.join(CACHE, f"{stem}.c{a.ctx}.fp8bound.base")
        run([f"{bindir}/llama-perplexity", "-m", f32, "-f", TEXT, "-c", str(a.ctx), "-t",
             str(a.threads), "--kl-divergence-base", base], timeout=a.timeout)
        brisk = brisk_measured(label)
        formats = {}
        for fmt in [f for f in a.formats.split(",") if f]:
            t0 = time.time()
            path = os.path.join(CACHE, f"{stem}.{fmt}-rounded.F32.gguf")
            err = write_converted(f32, path, fmt)
            stats = llamacpp_stats(run([f"{bindir}/llama-perplexity", "-m", path, "-c",
                                        str(a.ctx), "-t", str(a.threads),
                                        "--kl-divergence-base", base, "--kl-divergence"],
                                       timeout=a.timeout))
            if not a.keep:
                os.unlink(path)
            formats[fmt] = {"llamacpp_f32_engine": stats, "rel_rms_weight_error": rel_rms(err),
                            "brisk_measured": brisk.get(fmt), "seconds": time.time() - t0}
            print(f"{label} {fmt}: KLD {stats['kld']:.6f}, same top-1 "
                  f"{100 * stats['same_top1']:.2f}%, weight rel RMS {rel_rms(err)['all']:.5f}",
                  file=sys.stderr, flush=True)
        if not a.keep:
            os.unlink(base)
        results.append({"model": label, "date": datetime.date.today().isoformat(),
                        "f32_reference": os.path.relpath(f32, CACHE),
                        "formats": formats})

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    if a.update and os.path.exists(a.out):  # keep the other models' earlier results
        with open(a.out) as f:
            done = {r["model"] for r in results}
            results = [r for r in json.load(f)["results"] if r["model"] not in done] + results
    with open(a.out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "ctx": a.ctx,
                   "text": os.path.relpath(TEXT, ROOT), "engine": "llama-perplexity (f32 weights)",
                   "e4m3_check": "numpy+ml_dtypes" if ml_dtypes is not None else "numpy",
                   "seconds": time.time() - t_start, "results": results}, f, indent=2)
    print(f"\nWeights rounded as Brisk's load-time precisions, run in f32 by llama.cpp; KLD to "
          f"the F32 weights, text {os.path.relpath(TEXT, ROOT)}, n_ctx {a.ctx}\n")
    print("| model | format | weight rel. RMS error | KLD (llama.cpp, f32 math) | same top-1 | "
          "99% KLD | ln PPL ratio | Brisk KLD | Brisk same top-1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for fmt, s in r["formats"].items():
            lc, br = s["llamacpp_f32_engine"], s["brisk_measured"]
            brisk_cols = (f"{br['kld']:.6f} | {100 * br['same_top1']:.2f}%" if br else "- | -")
            print(f"| {r['model']} | {fmt} | {s['rel_rms_weight_error']['all']:.5f} | "
                  f"{lc['kld']:.6f} | {100 * lc['same_top1']:.2f}% | {lc['kld_p99']:.5f} | "
                  f"{lc['ln_ppl_ratio']:.5f} | {brisk_cols} |")


if __name__ == "__main__":
    main()
