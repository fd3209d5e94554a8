#!/usr/bin/env python3
"""Write a random-weights llama GGUF with the default model's exact shape.

Fallback for tests and benchmarks that need other weight formats (Q8_0, Q4_0,
Q4_1, F16, F32) but cannot run llama.cpp's llama-quantize.  Speed does not
depend on weight values, so these files are good for kernel/throughput tests;
they are useless for quality tests (the model emits noise).

Needs only the `gguf` PyPI package (>= 0.10, tested with 0.19.0) and numpy.

What it does:
  * reads every metadata key of the source GGUF (default:
    models/SmolLM2-135M-Instruct.Q4_1.gguf) and copies it, so the tokenizer
    (tokens, merges, token types, special ids, pre-tokenizer, chat template) and
    the hyper-parameters are identical; general.file_type and general.name are
    rewritten;
  * writes the same tensors (same names, same shapes, same order) filled with
    deterministic random values: N(0, --std) for matrices, 1 + N(0, 0.02) for
    the RMS-norm weights (which stay F32, as llama.cpp keeps them);
  * the 2-D weight matrices are quantized to --type with gguf.quants.quantize
    (the numpy reference quantizers of the gguf package); token_embd.weight is
    quantized to --embd-type (default Q8_0, like the default model).

Usage (from the repo root):
  python3 tools/make_random_gguf.py --type Q8_0 --out models/random-smollm2-135m.Q8_0.gguf
  python3 tools/make_random_gguf.py --type Q4_0 --out models/random-smollm2-135m.Q4_0.gguf
  python3 tools/make_random_gguf.py --type Q4_1 --out models/random-smollm2-135m.Q4_1.gguf
  # optional: --layers N keeps only the first N blocks (smaller, same per-layer shape)
  #           --seed S, --std X, --embd-type T, --src PATH

The output is byte-for-byte deterministic for given arguments and gguf version.
Takes ~10-30 s and ~2 GB RAM for the full 30-layer model.
"""
from __future__ import annotations

import argparse
import os
import sys
import zlib

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError:  # pragma: no cover
    sys.exit("needs the gguf package: pip install gguf")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_SRC = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

TYPES = {
    "F32": QT.F32,
    "F16": QT.F16,
    "Q8_0": QT.Q8_0,
    "Q4_0": QT.Q4_0,
    "Q4_1": QT.Q4_1,
}
FILE_TYPES = {
    "F32": gguf.LlamaFileType.ALL_F32,
    "F16": gguf.LlamaFileType.MOSTLY_F16,
    "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
    "Q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
}


def encode(values: np.ndarray, qtype: QT) -> np.ndarray:
    """values: float32, numpy shape (rows, cols) == GGUF ne reversed."""
    if qtype == QT.F32:
        return values.astype(np.float32)
    if qtype == QT.F16:
        return values.astype(np.float16)
    if not hasattr(gguf, "quants") or not hasattr(gguf.quants, "quantize"):
        sys.exit("this gguf package has no gguf.quants.quantize; upgrade gguf")
    return gguf.quants.quantize(values, qtype)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--type", required=True, choices=sorted(TYPES), help="weight type of the 2-D matrices")
    ap.add_argument("--embd-type", default="Q8_0", choices=sorted(TYPES), help="type of token_embd.weight (default Q8_0)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", default=DEFAULT_SRC, help="GGUF to copy metadata and shapes from")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--std", type=float, default=0.02, help="std of the random matrix weights")
    ap.add_argument("--layers", type=int, default=0, help="keep only the first N blocks (0 = all)")
    args = ap.parse_args()

    reader = gguf.GGUFReader(args.src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    if arch != "llama":
        print(f"warning: source architecture is {arch!r}, not llama", file=sys.stderr)
    n_layers_src = int(reader.fields[f"{arch}.block_count"].contents())
    n_layers = args.layers if args.layers > 0 else n_layers_src
    if n_layers > n_layers_src:
        sys.exit(f"--layers {n_layers} > source block_count {n_layers_src}")

    tmp_out = args.out + ".tmp"
    writer = gguf.GGUFWriter(tmp_out, arch=arch)

    override = {
        "general.file_type": (int(FILE_TYPES[args.type]), gguf.GGUFValueType.UINT32),
        "general.name": (f"random-weights {os.path.basename(args.src)} {args.type} seed={args.seed}",
                         gguf.GGUFValueType.STRING),
        f"{arch}.block_count": (n_layers, gguf.GGUFValueType.UINT32),
    }
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        if field.name in override:
            val, vtype = override.pop(field.name)
            writer.add_key_value(field.name, val, vtype)
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    for name, (val, vtype) in override.items():
        writer.add_key_value(name, val, vtype)

    counts: dict[str, int] = {}
    for idx, t in enumerate(reader.tensors):
        name = t.name
        if name.startswith("blk."):
            if int(name.split(".")[1]) >= n_layers:
                continue
        ne = [int(x) for x in t.shape]          # GGUF order: ne0 (contiguous) first
        np_shape = tuple(reversed(ne))          # numpy order: rows, cols
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        if len(ne) == 1:
            values = (1.0 + 0.02 * rng.standard_normal(np_shape)).astype(np.float32)
            qtype = QT.F32
        else:
            values = (args.std * rng.standard_normal(np_shape, dtype=np.float32)).astype(np.float32)
            qtype = TYPES[args.embd_type] if name == "token_embd.weight" else TYPES[args.type]
        data = encode(values, qtype)
        writer.add_tensor(name, data, raw_dtype=qtype)
        counts[qtype.name] = counts.get(qtype.name, 0) + 1
        del values

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp_out, args.out)
    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {size / 1e6:.1f} MB, {n_layers} layers, tensor types {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
