#!/usr/bin/env python3
"""Writes tests/fixtures/quant_dequant.bin: random GGUF quantized blocks of
every quantized weight format Brisk runs, each with what the `gguf` package's
numpy dequantizer (gguf.quants.dequantize) makes of them. The C++ test
src/tensor/quant_numpy_test.cc checks Brisk's reference dequantizers are
bitwise equal to it.

Blocks are random bytes with their f16 fields (d, dmin, m) replaced by random
finite halves: half the blocks get moderate scales, the others any finite
half (subnormals, zero, negative, up to 65504). Seeded: rerunning writes the
same file.

File layout (little-endian): b"BQDQ", u32 version (1), u32 records; per
record: u32 ggml type, u32 blocks, u32 block bytes, u32 block elements, the
blocks' bytes, then blocks * block elements f32.

    python3 tests/make_quant_fixtures.py [--out tests/fixtures/quant_dequant.bin]
"""
import argparse
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

# type -> (byte offsets of the f16 fields in a block, blocks to write)
FORMATS = {
    T.Q4_0: ([0], 4),
    T.Q4_1: ([0, 2], 4),
    T.Q5_0: ([0], 8),
    T.Q5_1: ([0, 2], 8),
    T.Q8_0: ([0], 4),
    T.Q2_K: ([80, 82], 2),
    T.Q3_K: ([108], 2),
    T.Q4_K: ([0, 2], 1),
    T.Q5_K: ([0, 2], 2),
    T.Q6_K: ([208], 1),
    T.IQ4_NL: ([0], 8),
    T.IQ4_XS: ([0], 2),
}


def random_half(rng: np.random.Generator, moderate: bool) -> np.ndarray:
    if moderate:
        v = rng.uniform(1e-3, 1.0) * rng.choice([-1.0, 1.0])
        return np.array([v], dtype=np.float16)
    while True:  # any finite half: exponent field not all ones
        bits = np.array([rng.integers(0, 1 << 16)], dtype=np.uint16)
        if (bits[0] >> 10) & 0x1F != 0x1F:
            return bits.view(np.float16)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "fixtures", "quant_dequant.bin"))
    args = ap.parse_args()
    rng = np.random.default_rng(20240612)
    out = bytearray(b"BQDQ" + struct.pack("<II", 1, len(FORMATS)))
    for qtype, (half_offsets, n_blocks) in FORMATS.items():
        block_size, block_bytes = GGML_QUANT_SIZES[qtype]
        blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
        for b in range(n_blocks):
            for off in half_offsets:
                blocks[b, off:off + 2] = random_half(rng, moderate=b % 2 == 0).view(np.uint8)
        values = dequantize(blocks.reshape(-1), qtype).astype(np.float32).reshape(-1)
        assert values.size == n_blocks * block_size and np.all(np.isfinite(values))
        out += struct.pack("<IIII", int(qtype), n_blocks, block_bytes, block_size)
        out += blocks.tobytes() + values.astype("<f4").tobytes()
    with open(args.out, "wb") as f:
        f.write(out)
    print(f"wrote {args.out}: {len(FORMATS)} formats, {len(out)} bytes")


if __name__ == "__main__":
    main()
