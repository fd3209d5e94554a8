"""KV events from a real `brisk serve`, read as a vLLM subscriber reads them: a
ZeroMQ SUB socket (pyzmq) and the replay socket (REQ), msgpack payloads
decoded positionally (msgspec's array_like tagged structs, as llm-d's and
Dynamo's decoders do). The block hashes are recomputed here with cbor2 and
hashlib, the way vLLM's sha256_cbor computes them, and the subscriber's view of
the cache is checked against the engine's own count of cached blocks."""
import hashlib
import signal
import socket
import threading
import time

import pytest

from conftest import MODEL_ID, BriskServer, skip_or_fail

try:
    import cbor2
    import msgpack
    import zmq
except ImportError as _e:  # pragma: no cover
    skip_or_fail(f"{_e.name} is missing: pip install -r requirements-test.txt")

BLOCK = 16
SEED = "0"
KEYS = {"acme": "sk-acme", "globex": "sk-globex"}


def sha256_cbor(obj):
    return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()


NONE_HASH = sha256_cbor(SEED)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(pub, replay):
    return (
        "keys:\n" + "".join(f"  - {{key: {k}, tenant: {t}}}\n" for t, k in KEYS.items()) +
        "scheduler:\n  kv_cache_bytes: 16MiB\n"
        "cache:\n"
        "  kv_events:\n"
        "    enabled: true\n"
        f"    endpoint: tcp://*:{pub}\n"
        f"    replay_endpoint: tcp://*:{replay}\n"
        "    topic: kv@test-pod@smollm2\n")


class Subscriber:
    """Every batch received live, by sequence number, on its own thread."""

    def __init__(self, pub_port, replay_port):
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.setsockopt(zmq.RCVTIMEO, 100)
        self.sub.connect(f"tcp://127.0.0.1:{pub_port}")
        self.replay_addr = f"tcp://127.0.0.1:{replay_port}"
        self.live = []  # (topic, seq, payload bytes)
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                topic, seq, payload = self.sub.recv_multipart()
            except zmq.Again:
                continue
            self.live.append((topic, int.from_bytes(seq, "big"), payload))

    def close(self):
        self.stop = True
        self.thread.join()
        self.ctx.destroy(linger=0)


def replay_all(sub, start):
    """A REQ socket receives the replay's messages one by one (each is a
    separate reply to the ROUTER's identity): read them with a DEALER."""
    dealer = sub.ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, 5000)
    dealer.connect(sub.replay_addr)
    dealer.send_multipart([b"", start.to_bytes(8, "big")])
    out = []
    while True:
        frames = dealer.recv_multipart()
        assert frames[0] == b"", frames[:1]
        seq, payload = frames[1], frames[2]
        n = int.from_bytes(seq, "big", signed=True)
        if n == -1:
            assert payload == b""
            return out
        out.append((n, payload))


def decode(payload):
    """An EventBatch as vLLM subscribers read it: [ts, events, dp_rank], each event
    [tag, fields...] in the field order of vllm/distributed/kv_events.py."""
    batch = msgpack.unpackb(payload, raw=False)
    assert isinstance(batch, list) and len(batch) == 3, batch
    ts, events, rank = batch
    assert isinstance(ts, float) and rank == 0
    return events


class View:
    """What an indexer holds after the events: group -> block hashes, and for
    each stored block its tokens, checked against an independent sha256_cbor."""

    def __init__(self):
        self.held = {0: set(), 1: set()}
        self.clears = 0
        self.salts = set()
        self.stored = 0

    def apply(self, events):
        for e in events:
            tag = e[0]
            if tag == "BlockStored":
                (hashes, parent, tokens, block_size, lora_id, medium, lora_name, extra_keys,
                 group, kind, window) = e[1:12]
                assert block_size == BLOCK and medium == "CPU" and lora_id is None
                assert kind == ("sliding_window" if group == 1 else "full_attention")
                assert len(tokens) == BLOCK * len(hashes)
                p = NONE_HASH if parent is None else parent
                for i, h in enumerate(hashes):
                    assert isinstance(h, bytes) and len(h) == 32
                    extra = None if extra_keys is None else extra_keys[i]
                    if extra is not None:
                        assert parent is None and i == 0, "a salt is the first block's only"
                        self.salts.add(tuple(extra))
                    assert sha256_cbor([p, tokens[i * BLOCK:(i + 1) * BLOCK],
                                        None if extra is None else list(extra)]) == h
                    assert h not in self.held[group], "stored twice"
                    self.held[group].add(h)
                    p = h
                    self.stored += 1
            elif tag == "BlockRemoved":
                hashes, medium, group = e[1:4]
                for h in hashes:
                    assert h in self.held[group], "removed a block never stored"
                    self.held[group].discard(h)
            elif tag == "AllBlocksCleared":
                self.held = {0: set(), 1: set()}
                self.clears += 1
            else:
                raise AssertionError(f"unknown event {tag}")


def prompt_hashes(tokens, salt):
    """The block hashes of a prompt's full blocks, as an indexer computes them."""
    out, parent = [], NONE_HASH
    for i in range(len(tokens) // BLOCK):
        extra = [salt] if i == 0 and salt else None
        parent = sha256_cbor([parent, tokens[i * BLOCK:(i + 1) * BLOCK], extra])
        out.append(parent)
    return out


def tokenize(server, key, prompt):
    import json
    import urllib.request
    req = urllib.request.Request(
        server.url + "/tokenize", data=json.dumps({"prompt": prompt}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["tokens"]


def wait_quiet(sub, quiet_s=0.5, timeout=20):
    deadline = time.time() + timeout
    n = -1
    while time.time() < deadline:
        if len(sub.live) == n:
            return
        n = len(sub.live)
        time.sleep(quiet_s)


@pytest.fixture
def ports():
    return free_port(), free_port()


def test_events_match_the_engine_and_an_independent_hash(brisk_bin, default_model, ports):
    pub, rep = ports
    server = BriskServer(brisk_bin, config_text=config(pub, rep))
    sub = Subscriber(pub, rep)
    try:
        time.sleep(0.5)  # the SUB socket's subscription reaches the publisher
        # Batches sent before the subscription took hold come from the replay
        # socket: from 0, the process's first batch (AllBlocksCleared).
        got = {n: p for n, p in replay_all(sub, 0)}
        assert 0 in got and decode(got[0]) == [["AllBlocksCleared"]]

        shared = "You are a careful assistant. Answer in one short sentence. " * 3
        prompts = [(t, shared + f"Question {i}: name a {w}.")
                   for i, (t, w) in enumerate([("acme", "color"), ("acme", "fruit"),
                                               ("globex", "color")])]
        for tenant, p in prompts:
            server.client(KEYS[tenant]).completions.create(
                model=MODEL_ID, prompt=p, max_tokens=8, temperature=0)
        # More distinct prompts than the 16 MiB pool holds: evictions.
        for i in range(12):
            server.client(KEYS["globex"]).completions.create(
                model=MODEL_ID, prompt=f"Story {i}: " + " ".join(f"w{i}x{j}" for j in range(30)),
                max_tokens=4, temperature=0)
        wait_quiet(sub)

        live = {seq: p for topic, seq, p in sub.live}
        assert all(topic == b"kv@test-pod@smollm2" for topic, _, _ in sub.live)
        got.update(replay_all(sub, 0))
        for seq, p in live.items():
            assert got[seq] == p, f"replay of {seq} differs from what was published"
        seqs = sorted(got)
        assert seqs == list(range(len(seqs))), "a gap in sequence numbers"

        view = View()
        removed = 0
        for seq in seqs:
            events = decode(got[seq])
            removed += sum(1 for e in events if e[0] == "BlockRemoved")
            view.apply(events)
        assert view.clears == 1 and removed > 0
        assert {("acme",), ("globex",)} <= view.salts
        # The subscriber's view is the engine's cache.
        cached = server.metric("brisk:kv_cache_blocks", {"state": "cached"})
        assert len(view.held[0]) == cached, (len(view.held[0]), cached)
        assert not view.held[1]  # SmolLM2 has no sliding-window layers

        # An indexer that hashes a prompt's tokens itself finds the engine's
        # blocks: the shared prefix of the last globex request is held (only
        # evicted if the pool needed it; the last request's own blocks are).
        last = "Story 11: " + " ".join(f"w11x{j}" for j in range(30))
        hashes = prompt_hashes(tokenize(server, KEYS["globex"], last), "globex")
        assert hashes and all(h in view.held[0] for h in hashes)
        # Another tenant's salt makes other keys for the same tokens.
        assert not any(h in view.held[0] for h in
                       prompt_hashes(tokenize(server, KEYS["acme"], last), "acme"))

        # A replay from a later number resends just that tail, then the end marker.
        tail = replay_all(sub, seqs[-2])
        assert [n for n, _ in tail] == seqs[-2:]

        # Killed and restarted, the engine starts over: sequence 0 again,
        # AllBlocksCleared, so subscribers drop what they knew of it.
        server.stop(signal.SIGKILL)
        sub.live.clear()
        server = BriskServer(brisk_bin, config_text=config(pub, rep))
        time.sleep(0.5)
        again = replay_all(sub, 0)
        assert again and again[0][0] == 0 and decode(again[0][1]) == [["AllBlocksCleared"]]
    finally:
        sub.close()
        server.stop(signal.SIGKILL)


def test_a_bad_kv_events_config_is_a_clear_error(brisk_bin, default_model, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("cache:\n  prefix_cache: false\n  kv_events: {enabled: true}\n")
    import subprocess
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--config", str(cfg)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "cache.prefix_cache" in r.stderr, r.stderr
    # A port already taken is refused at startup, by name.
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        taken = s.getsockname()[1]
        cfg.write_text(f"cache:\n  kv_events: {{enabled: true, endpoint: 'tcp://*:{taken}',"
                       f" replay_endpoint: ''}}\n")
        r = subprocess.run([brisk_bin, "serve", "--port", "0", "--config", str(cfg)],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "cache.kv_events" in r.stderr and str(taken) in r.stderr, \
        r.stderr
