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

Architectures without an installed model (--arch llama | qwen2 | qwen3 | gemma3): nothing
is copied; the file is synthesized from the shape flags (--hidden, --heads,
--kv-heads, --head-dim, --ff, --layers, --untied, --vocab) with a small byte-level BPE
tokenizer (random_bpe_vocab.py: tokenizer.ggml.model "gpt2", pre "qwen2", the
256 byte tokens, merges learned on bench/golden/kld_text.txt, <|endoftext|>,
<|im_start|>, <|im_end|>, a ChatML template), so llama.cpp and Brisk both load
it.  Weights are scaled for a peaked next-token distribution (matrices
N(0, 1/fan_in), q/k/v biases N(0, 0.5^2), norm weights 1 + N(0, 0.1^2),
embeddings and output with logits of std ~--logit-std), so that logits
comparisons between engines mean something:
  python3 tools/make_random_gguf.py --arch qwen2 --type Q8_0 --out /tmp/qwen2.Q8_0.gguf
  python3 tools/make_random_gguf.py --arch qwen3 --type F32 --head-dim 96 --out /tmp/qwen3.gguf
--arch gemma3: q/k norms, post-attention and post-FFN norms, key_length (may
differ from hidden/heads), tied unless --untied, and with --sliding-window N local
layers (five of every six) seeing N positions; the embedding scale sqrt(hidden)
and GELU-gated FFN come with the architecture in both engines.  The tokenizer
is the same small BPE (a real Gemma's is SentencePiece, tested elsewhere):
  python3 tools/make_random_gguf.py --arch gemma3 --type F32 --layers 6 --hidden 32 --heads 4 \
    --kv-heads 1 --head-dim 16 --ff 64 --sliding-window 16 --untied --out /tmp/g3.gguf
(untied, its embedding rows have std 1/sqrt(hidden), so the scaled embedding
has rms 1).
--arch llama: no q/k/v biases, NORM RoPE, pre-tokenizer llama-bpe.  --vocab N
pads the vocabulary with UNUSED "[PAD<id>]" tokens to N embedding rows.  Tensors
are made and written one at a time, so a real-size model (bench/dram_shapes.sh:
Llama 3.2 1B shape, F16, then `brisk quantize`) takes ~1 minute and ~2 GB RAM:
  python3 tools/make_random_gguf.py --arch llama --type F16 --embd-type F16 \
    --hidden 2048 --heads 32 --kv-heads 8 --ff 8192 --layers 16 --vocab 128256 \
    --rope-theta 500000 --out /tmp/llama-1b.F16.gguf
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


def synthesize(args) -> int:
    """--arch llama | qwen2 | qwen3 | gemma3: a model written from the shape flags."""
    from random_bpe_vocab import CHATML_TEMPLATE, make_vocab
    UNUSED = 5  # GGUF token type (llama.cpp's LLAMA_TOKEN_TYPE_UNUSED)

    d, heads, kv_heads, ff = args.hidden, args.heads, args.kv_heads, args.ff
    head_dim = args.head_dim or d // heads
    n_layers = args.layers or 2
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    if heads % kv_heads:
        sys.exit("--heads must be a multiple of --kv-heads")
    if args.arch == "qwen2" and head_dim * heads != d:
        sys.exit("qwen2 has no key_length key: --head-dim must be --hidden / --heads")
    if args.arch == "llama" and head_dim * heads != d:
        sys.exit("llama: --head-dim must be --hidden / --heads (no key_length key written)")
    if args.sliding_window and args.arch != "gemma3":
        sys.exit("--sliding-window is a gemma3 key")
    vocab = make_vocab(args.merges)
    n_real = len(vocab.tokens)
    if args.vocab and args.vocab < n_real:
        sys.exit(f"--vocab {args.vocab} < the {n_real} tokens of the small BPE vocabulary")
    # Padding as convert_hf_to_gguf.py writes a real Qwen2.5 / Llama 3 vocab whose
    # embedding has more rows than the tokenizer has tokens: "[PAD<id>]" of type
    # UNUSED.  Neither engine treats UNUSED as a special token (nothing to match in
    # text, no per-token cost when tokenizing), so only the matrices grow.
    tokens, types = list(vocab.tokens), list(vocab.types)
    for i in range(n_real, args.vocab):
        tokens.append(f"[PAD{i}]")
        types.append(UNUSED)
    n_vocab = len(tokens)

    tmp_out = args.out + ".tmp"
    w = gguf.GGUFWriter(tmp_out, arch=args.arch)
    w.add_name(f"random-weights {args.arch} {args.type} seed={args.seed}")
    w.add_file_type(int(FILE_TYPES[args.type]))
    w.add_context_length(args.ctx)
    w.add_embedding_length(d)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    if args.arch in ("qwen3", "gemma3"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if args.sliding_window:
        # gemma3: with a window, layers 0-4 of every 6 are local (llama.cpp's
        # load_swa_pattern(6) without a sliding_window_pattern key; Brisk's
        # recipe global_every 6), RoPE base 10000 on those (no freq_base_swa key).
        w.add_sliding_window(args.sliding_window)
    if args.arch == "llama":
        # llama.cpp reads n_rot from rope.dimension_count; llama's RoPE is the
        # NORM (adjacent pairs) layout, chosen by the architecture in both engines.
        w.add_rope_dimension_count(head_dim)
        w.add_vocab_size(n_vocab)
    w.add_rope_freq_base(args.rope_theta)
    if args.rope_scaling != "none":
        w.add_rope_scaling_type(gguf.RopeScalingType(args.rope_scaling))
        w.add_rope_scaling_factor(args.rope_factor)
        if args.rope_orig_ctx:
            w.add_rope_scaling_orig_ctx_len(args.rope_orig_ctx)
    w.add_layer_norm_rms_eps(1e-6 if args.arch != "llama" else 1e-5)
    w.add_tokenizer_model("gpt2")
    # Llama 3's pre-tokenizer for llama, so the llama files take that path in
    # both tokenizers (llama-bpe: whole-word vocab hits before merges).
    w.add_tokenizer_pre("llama-bpe" if args.arch == "llama" else "qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(vocab.merges)
    w.add_bos_token_id(vocab.endoftext)
    w.add_eos_token_id(vocab.im_end)
    w.add_pad_token_id(vocab.endoftext)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML_TEMPLATE)

    def normal(name, shape, std):
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        return (std * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)

    counts: dict[str, int] = {}
    # Two passes so that a 1B-parameter model never sits in memory whole: the
    # first records each tensor's name, type and size (the GGUF header needs them
    # all up front), the second makes and writes one tensor at a time.
    makers = []

    def matrix(name, rows, cols, std, qtype=None):
        qtype = qtype if qtype is not None else TYPES[args.type]
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        w.add_tensor_info(name, (rows, cols), np.dtype(np.float32), rows * cols // block * type_size,
                          raw_dtype=qtype)
        makers.append(lambda: encode(normal(name, (rows, cols), std), qtype))
        counts[qtype.name] = counts.get(qtype.name, 0) + 1

    def vector(name, n, mean, std):
        w.add_tensor_info(name, (n,), np.dtype(np.float32), 4 * n, raw_dtype=QT.F32)
        makers.append(lambda: (mean + normal(name, (n,), std)).astype(np.float32))
        counts["F32"] = counts.get("F32", 0) + 1

    # logits = rms_norm(x) . row: std ~ logit_std when the rows have std logit_std / sqrt(d).
    out_std = args.logit_std / np.sqrt(d)
    # gemma3 scales the embedding by sqrt(d): untied, rows of std 1/sqrt(d)
    # enter the residual stream at rms 1, like each post-normed layer output,
    # so the layers (not the input token) decide the next token.
    embd_std = d ** -0.5 if args.arch == "gemma3" and args.untied else out_std
    matrix("token_embd.weight", n_vocab, d, embd_std, TYPES[args.embd_type])
    vector("output_norm.weight", d, 1.0, 0.1)
    if args.untied:
        matrix("output.weight", n_vocab, d, out_std)
    for i in range(n_layers):
        b = f"blk.{i}."
        vector(b + "attn_norm.weight", d, 1.0, 0.1)
        matrix(b + "attn_q.weight", q_dim, d, d ** -0.5)
        matrix(b + "attn_k.weight", kv_dim, d, d ** -0.5)
        matrix(b + "attn_v.weight", kv_dim, d, d ** -0.5)
        if args.arch == "qwen2":
            vector(b + "attn_q.bias", q_dim, 0.0, 0.5)
            vector(b + "attn_k.bias", kv_dim, 0.0, 0.5)
            vector(b + "attn_v.bias", kv_dim, 0.0, 0.5)
        if args.arch in ("qwen3", "gemma3"):
            vector(b + "attn_q_norm.weight", head_dim, 1.0, 0.1)
            vector(b + "attn_k_norm.weight", head_dim, 1.0, 0.1)
        matrix(b + "attn_output.weight", d, q_dim, q_dim ** -0.5)
        if args.arch == "gemma3":
            # Gemma's norms scale by the stored weight (convert_hf_to_gguf.py
            # stores HF's 1 + w), like every other norm here.
            vector(b + "post_attention_norm.weight", d, 1.0, 0.1)
        vector(b + "ffn_norm.weight", d, 1.0, 0.1)
        matrix(b + "ffn_gate.weight", ff, d, d ** -0.5)
        matrix(b + "ffn_up.weight", ff, d, d ** -0.5)
        matrix(b + "ffn_down.weight", d, ff, ff ** -0.5)
        if args.arch == "gemma3":
            vector(b + "post_ffw_norm.weight", d, 1.0, 0.1)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for make in makers:
        w.write_tensor_data(make())
    w.close()
    os.replace(tmp_out, args.out)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e6:.1f} MB, {args.arch}, {n_layers} "
          f"layers, d={d} heads={heads}/{kv_heads} head_dim={head_dim} ff={ff} vocab={n_vocab} "
          f"({n_real} BPE), tensor types {counts}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--type", required=True, choices=sorted(TYPES), help="weight type of the 2-D matrices")
    ap.add_argument("--embd-type", default="Q8_0", choices=sorted(TYPES), help="type of token_embd.weight (default Q8_0)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", default=DEFAULT_SRC, help="GGUF to copy metadata and shapes from")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--std", type=float, default=0.02, help="std of the random matrix weights")
    ap.add_argument("--layers", type=int, default=0,
                    help="keep only the first N blocks (0 = all); with --arch: blocks (default 2)")
    syn = ap.add_argument_group("synthesized architectures (no --src)")
    syn.add_argument("--arch", choices=["llama", "qwen2", "qwen3", "gemma3"],
                     help="write this architecture from the shape flags")
    syn.add_argument("--hidden", type=int, default=256)
    syn.add_argument("--heads", type=int, default=4)
    syn.add_argument("--kv-heads", type=int, default=2)
    syn.add_argument("--head-dim", type=int, default=0, help="default hidden/heads (qwen3 may differ)")
    syn.add_argument("--ff", type=int, default=512)
    syn.add_argument("--ctx", type=int, default=4096, help="context_length")
    syn.add_argument("--rope-theta", type=float, default=1e6)
    syn.add_argument("--rope-scaling", choices=["none", "linear", "yarn"], default="none",
                     help="{arch}.rope.scaling.type (context extension)")
    syn.add_argument("--rope-factor", type=float, default=1.0, help="rope.scaling.factor")
    syn.add_argument("--rope-orig-ctx", type=int, default=0,
                     help="rope.scaling.original_context_length (0: not written)")
    syn.add_argument("--vocab", type=int, default=0,
                     help="pad the vocabulary with unused [PAD<id>] tokens up to N rows "
                          "(a real model's embedding shape, e.g. 128256, 151936)")
    syn.add_argument("--untied", action="store_true", help="write output.weight (default: tied)")
    syn.add_argument("--sliding-window", type=int, default=0,
                     help="gemma3: attention.sliding_window (0: not written, every layer global)")
    syn.add_argument("--merges", type=int, default=400, help="BPE merges of the small vocab")
    syn.add_argument("--logit-std", type=float, default=4.0, help="std of the logits (peakedness)")
    args = ap.parse_args()
    if args.arch:
        return synthesize(args)

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
