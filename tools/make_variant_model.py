#!/usr/bin/env python3
"""A Q8_0 variant of the default model, for the gateway's third tier.

Reads models/SmolLM2-135M-Instruct.Q4_1.gguf and writes models/SmolLM2-135M-Instruct.Q8_0.gguf.
Every Q4_1 tensor is dequantized and quantized again to Q8_0 with the `gguf`
package's reference code. F32 and Q8_0 tensors are copied, and all metadata is
kept. The weights keep Q4_1's quality (they come from the Q4_1 file), but the
file has another format, size and speed: a genuine variant of the same model for
routing tests. It is not a way to make a better model; `brisk
quantize` is the tool for that.

    python3 tools/make_variant_model.py [SRC] [DST]
"""
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        REPO, "models", "SmolLM2-135M-Instruct.Q8_0.gguf")
    r = GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    tmp = dst + ".tmp"
    w = GGUFWriter(tmp, arch)
    for field in r.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    for t in r.tensors:
        if t.tensor_type == GGMLQuantizationType.Q4_1:
            f32 = dequantize(t.data, t.tensor_type)
            q = quantize(f32.astype(np.float32), GGMLQuantizationType.Q8_0)
            w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, dst)
    print(f"wrote {dst} ({os.path.getsize(dst) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
