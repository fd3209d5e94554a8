#!/usr/bin/env python3
"""Writes tests/fixtures/fp8_e4m3.bin: what ml_dtypes (Google's float8 types
for numpy) makes of FP8 E4M3FN, for src/tensor/fp8_test.cc to compare
Brisk's conversions with bitwise:
- all 256 codes decoded to float32;
- float32 inputs encoded: every code's value, every midpoint between
  neighbouring codes (ties, which round to even) and values just either side
  of it, subnormals, zeros of both signs, NaN, values past 448 and random
  floats across the range. Inputs are clipped to [-448, 448] before
  ml_dtypes casts them (ml_dtypes turns overflow into NaN; Brisk saturates,
  as vLLM and PyTorch clamp before casting); NaN inputs are not clipped.

File layout (little-endian): b"BFP8", u32 version (1), 256 f32 (decode of
code 0..255), u32 n, then n pairs (f32 input, u8 code, 3 zero bytes).
Seeded: rerunning writes the same file.

    pip install ml_dtypes
    python3 tests/make_fp8_fixture.py [--out tests/fixtures/fp8_e4m3.bin]
"""
import argparse
import os
import struct

import ml_dtypes
import numpy as np


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "fixtures", "fp8_e4m3.bin"))
    args = ap.parse_args()

    codes = np.arange(256, dtype=np.uint8)
    decoded = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)

    finite = np.sort(decoded[np.isfinite(decoded) & (decoded >= 0)])
    mids = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    around = np.concatenate([np.nextafter(mids.astype(np.float32), np.float32(-1)),
                             mids.astype(np.float32),
                             np.nextafter(mids.astype(np.float32), np.float32(1000))])
    rng = np.random.default_rng(8)
    rand = np.concatenate([
        rng.uniform(-500, 500, 4000),
        np.exp(rng.uniform(np.log(1e-6), np.log(600), 4000)) * rng.choice([-1, 1], 4000),
    ]).astype(np.float32)
    special = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 448, 449, 464, 465, 479,
                        480, 1e30, -1e30, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-6,
                        np.finfo(np.float32).tiny, 1e-45], dtype=np.float32)
    inputs = np.concatenate([finite, -finite, around, -around, rand, special]).astype(np.float32)
    clipped = np.where(np.isnan(inputs), inputs, np.clip(inputs, -448, 448)).astype(np.float32)
    encoded = clipped.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)

    with open(args.out, "wb") as f:
        f.write(b"BFP8")
        f.write(struct.pack("<I", 1))
        f.write(decoded.astype("<f4").tobytes())
        f.write(struct.pack("<I", len(inputs)))
        for x, c in zip(inputs, encoded):
            f.write(struct.pack("<fB3x", float(x), int(c)))
    print(f"wrote {args.out}: 256 codes, {len(inputs)} encodings")


if __name__ == "__main__":
    main()
