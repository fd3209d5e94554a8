"""The disk tier under the prefix cache (cache.disk_path) on a real `brisk serve`
with the real `openai` client: a conversation evicted from the RAM KV cache is
served from disk with greedy output identical to its first (recomputed) answer;
after `kill -9` and a restart on the same directory it hits disk again; corrupt
entries are skipped and recomputed; an unusable directory leaves the server on
RAM only. On SmolLM2 (the default model) and on Gemma 3 (sliding-window paging:
blocks before the window of the resumed position are read without their local
pages)."""
import json
import signal
import time
import urllib.request

from conftest import MODEL_ID, REPO, TIME_SCALE, BriskServer, skip_or_fail

GEMMA = REPO / "models" / "gemma-3-270m-q4_k_m.gguf"
GEMMA_ID = "gemma-3-270m-q4_k_m"
COLORS = ["red", "green", "blue", "amber", "violet", "silver", "black", "white"]
ANIMALS = ["otter", "heron", "lynx", "marmot", "gecko", "ibis", "walrus", "okapi"]
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Tunis", "Lima", "Riga"]


def facts(seed, n):
    """A long user message, different for each seed."""
    return " ".join(
        f"Fact {seed}.{i}: the {COLORS[(seed + i) % 8]} {ANIMALS[(seed * 3 + i) % 8]} "
        f"number {seed * 100 + i} lives in {CITIES[(seed + 2 * i) % 8]}." for i in range(n))


def messages(server, model, seed, n_facts):
    """A conversation about facts(seed) whose prompt is 1 token past a block
    boundary: then a repeat resumes right after the last full block. On
    Gemma 3 that matters for the blocks still in RAM: the window before a
    resumed position must hold its local pages, and blocks kept in RAM drop
    them as the first answer is decoded past them (the disk tier's copies,
    written as the blocks were computed, still have them)."""
    text = facts(seed, n_facts) + " Which city has the otter?"
    for _ in range(32):
        msgs = [{"role": "system", "content": "You remember facts."},
                {"role": "user", "content": text}]
        req = urllib.request.Request(
            server.url + "/tokenize", headers={"Content-Type": "application/json"},
            data=json.dumps({"model": model, "messages": msgs}).encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            if json.loads(r.read())["count"] % 16 == 1:
                return msgs
        text += " ok"  # one token more, on both tokenizers
    raise AssertionError("no padding gave a prompt of 16k+1 tokens")


def ask(server, model, seed, n_facts):
    """(answer text, prompt tokens) of a greedy chat about facts(seed)."""
    r = server.client(timeout=300).chat.completions.create(
        model=model, temperature=0, max_tokens=8,
        messages=messages(server, model, seed, n_facts))
    return r.choices[0].message.content, r.usage.prompt_tokens


def disk_hits(server):
    return server.metric("brisk:prefix_cache_tier_hit_tokens_total", {"tier": "disk"}) or 0


def wait_for(what, pred, timeout=60):
    deadline = time.monotonic() + timeout * TIME_SCALE
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def config(disk, kv_bytes):
    return (f"scheduler:\n  kv_cache_bytes: {kv_bytes}\n"
            f"cache:\n  disk_path: {disk}\n  disk_bytes: 1GiB\n")


def evict_then_hit_disk_then_restart(brisk_bin, tmp_path, model_args, model, n_facts, kv_bytes):
    disk = tmp_path / "kv"
    cfg = config(disk, kv_bytes)
    s = BriskServer(brisk_bin, args=model_args, config_text=cfg)
    try:
        assert s.metric("brisk:kv_disk_tier_disabled") == 0
        first, n_prompt = ask(s, model, 1, n_facts)  # computed from scratch
        assert disk_hits(s) == 0
        # Other conversations take the RAM cache: conversation 1's blocks go to disk.
        for seed in (2, 3, 4):
            ask(s, model, seed, n_facts)
        wait_for("conversation 1 on disk",
                 lambda: (s.metric("brisk:kv_disk_blocks") or 0) >= n_prompt // 16)
        again, _ = ask(s, model, 1, n_facts)
        assert again == first
        from_disk = disk_hits(s)
        assert from_disk >= 16, s.log_tail()
        assert s.metric("brisk:kv_disk_reads_total") > 0
        assert s.metric("brisk:kv_disk_read_bytes_total") > 0
        assert s.metric("brisk:kv_disk_read_seconds_count") > 0
        assert s.metric("brisk:kv_disk_write_seconds_count") > 0
        assert s.metric("brisk:prefix_cache_tier_hit_blocks_total", {"tier": "disk"}) > 0
        assert s.metric("brisk:kv_tier_bytes", {"tier": "disk"}) > 0
        assert s.metric("brisk:kv_disk_corrupt_total") == 0
        bytes_per_read = (s.metric("brisk:kv_disk_read_bytes_total") /
                          s.metric("brisk:kv_disk_reads_total"))
    finally:
        s.stop(signal.SIGKILL)  # no shutdown: what is on disk is what a crash leaves

    # A restart on the same directory: RAM is empty, the disk is not.
    s = BriskServer(brisk_bin, args=model_args, config_text=cfg)
    try:
        assert s.metric("brisk:kv_disk_blocks") >= n_prompt // 16
        after_restart, _ = ask(s, model, 1, n_facts)
        assert after_restart == first
        assert disk_hits(s) >= 16, s.log_tail()
    finally:
        s.stop(signal.SIGKILL)

    # Every entry corrupted while the server is down: skipped, logged, recomputed.
    entries = list(disk.glob("*/*.kv"))
    assert entries
    names = [p.name for p in entries]
    for p in entries:
        with open(p, "r+b") as f:
            f.seek(200)
            b = f.read(1)
            f.seek(200)
            f.write(bytes([b[0] ^ 0x5a]))
    s = BriskServer(brisk_bin, args=model_args, config_text=cfg)
    try:
        recomputed, _ = ask(s, model, 1, n_facts)
        assert recomputed == first
        assert disk_hits(s) == 0
        assert s.metric("brisk:kv_disk_corrupt_total") >= 1
        assert any("KV disk tier: skipping" in line and "checksum" in line
                   for line in s.stderr_lines), s.log_tail()
    finally:
        s.stop(signal.SIGKILL)
    return names, bytes_per_read


def test_smollm2_conversation_evicted_from_ram_is_served_from_disk_and_survives_kill(
        brisk_bin, default_model, tmp_path):
    # 16 MiB of KV holds about 700 SmolLM2 tokens: one ~450-token conversation.
    names, per_read = evict_then_hit_disk_then_restart(brisk_bin, tmp_path, [], MODEL_ID, 28,
                                                       "16MiB")
    assert all(n.endswith("-p1.kv") for n in names)  # one page per block: no layer paging
    assert per_read == 16 * 30 * 3 * 64 * 2 * 2  # a block: 16 positions, 30 layers, K and V


def test_gemma3_blocks_before_the_window_come_back_without_their_local_pages(
        brisk_bin, tmp_path):
    if not GEMMA.exists():
        skip_or_fail(f"{GEMMA} not installed (scripts/install_models.sh)")
    # A ~650-token conversation, past the 512-position window of the local
    # layers; 16 MiB of pages holds one such conversation at a time.
    names, per_read = evict_then_hit_disk_then_restart(
        brisk_bin, tmp_path, ["--model", str(GEMMA)], GEMMA_ID, 40, "16MiB")
    # Stored as published: the block's page and 5 local pages (15 local
    # layers in groups of 3) ...
    assert all(n.endswith("-p6.kv") for n in names), names
    # ... and read back with them only inside the window being resumed: the
    # blocks before it come back with their global page alone.
    page = 3 * 16 * 256 * 2 * 2  # 3 layers, 16 positions, 256 values of K and of V
    assert page < per_read < 6 * page, per_read


def test_an_unusable_directory_leaves_the_server_on_ram(brisk_bin, default_model, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("a file where the tier wants a directory")
    s = BriskServer(brisk_bin, config_text=config(not_a_dir / "kv", "64MiB"))
    try:
        assert s.metric("brisk:kv_disk_tier_disabled") == 1
        first, _ = ask(s, MODEL_ID, 1, 10)
        assert ask(s, MODEL_ID, 1, 10)[0] == first
        assert s.metric("brisk:prefix_cache_tier_hit_tokens_total", {"tier": "ram"}) > 0
        assert any("KV disk tier off" in line for line in s.stderr_lines), s.log_tail()
    finally:
        s.stop()
