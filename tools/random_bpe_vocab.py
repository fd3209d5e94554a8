"""A small byte-level BPE vocabulary for synthesized test models (used by
make_random_gguf.py --arch ...).

The GPT-2 byte-level scheme: every byte has a token whose text is the byte's
printable stand-in character (bytes that are printable Latin-1 stand for
themselves, the others map to U+0100 upward in byte order), merges are pairs of
token texts joined by a space, and a merged token's text is the two texts
concatenated. The merges are learned here by plain BPE on
bench/golden/kld_text.txt (pieces split roughly as Qwen2's pre-tokenizer
does), so tokenizing English text gives multi-byte tokens and both engines'
merge loops are exercised. Then the special tokens Qwen models use.
Deterministic: the same arguments give the same vocabulary.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(REPO, "bench", "golden", "kld_text.txt")

# GGUF token types (llama.cpp's llama_token_type): 1 normal, 3 control.
NORMAL, CONTROL = 1, 3

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclasses.dataclass
class Vocab:
    tokens: list[str]
    types: list[int]
    merges: list[str]
    endoftext: int
    im_start: int
    im_end: int


def byte_chars() -> list[str]:
    """The stand-in character of each byte value 0..255."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
                 + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    out, extra = [], 0
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


# Letters, single digits, runs of punctuation, spaces: near enough to Qwen2's
# pre-split for learning merges (the engines use their own, identical split).
PIECE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+|\s+")


def make_vocab(n_merges: int = 400, text_path: str = TEXT) -> Vocab:
    chars = byte_chars()
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    words = collections.Counter(
        tuple(chars[b] for b in piece.encode("utf-8")) for piece in PIECE.findall(text))
    tokens = list(chars)
    known = set(tokens)
    merges = []
    for _ in range(n_merges):
        pairs: collections.Counter = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _count = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        if a + b not in known:
            known.add(a + b)
            tokens.append(a + b)
        merged = collections.Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    types = [NORMAL] * len(tokens)
    specials = {}
    for name in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        specials[name] = len(tokens)
        tokens.append(name)
        types.append(CONTROL)
    return Vocab(tokens, types, merges, specials["<|endoftext|>"], specials["<|im_start|>"],
                 specials["<|im_end|>"])
