"""Precise prefix routing: `brisk gateway` follows two real engines' KV events
(ZeroMQ, vLLM's wire format) and sends each prompt to the replica whose
prefix cache holds it, whichever replica consistent hashing would name. The
prefixes are put in place by calling the engines directly, so only the
events can tell the gateway where they are. A replica killed with SIGKILL and
started again is re-learnt through its replay socket."""
import json
import signal
import time

import pytest

from conftest import TIME_SCALE
from gateway_util import SMOL, start_gateway
from server_process import ServerProcess, free_port

GROUPS = 6


def engine_config(pub, replay):
    return ("scheduler:\n  kv_cache_bytes: 64MiB\n"
            "cache:\n  kv_events:\n    enabled: true\n"
            f"    endpoint: tcp://*:{pub}\n    replay_endpoint: tcp://*:{replay}\n")


class Engine:
    def __init__(self, brisk_bin, tmp_path, name):
        self.name = name
        self.port, self.pub, self.replay = free_port(), free_port(), free_port()
        self.config = tmp_path / f"{name}.yaml"
        self.config.write_text(engine_config(self.pub, self.replay))
        self.brisk_bin = brisk_bin
        self.start()

    def start(self):
        cmd = [self.brisk_bin, "serve", "--model", str(SMOL), "--model-name", "smol", "--port",
               str(self.port), "--threads", "1", "--config", str(self.config)]
        self.proc = ServerProcess(cmd, f"engine {self.name}", port=self.port, ready_path="/ready",
                                  timeout=120 * TIME_SCALE)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def upstream_yaml(self):
        return (f"      - {{url: \"{self.url}\", kv_events: \"tcp://127.0.0.1:{self.pub}\", "
                f"kv_events_replay: \"tcp://127.0.0.1:{self.replay}\"}}\n")


def system_prompt(i):
    words = " ".join(f"fact{i}-{k} is filed under drawer {k * 7 % 13}." for k in range(60))
    return f"You answer questions about archive {i}. {words}"


def chat(base_url, i, question, **kw):
    import openai
    c = openai.OpenAI(base_url=base_url + "/v1", api_key="none", max_retries=0)
    raw = c.chat.completions.with_raw_response.create(
        model="smol", max_tokens=1, temperature=0,
        messages=[{"role": "system", "content": system_prompt(i)},
                  {"role": "user", "content": question}], **kw)
    return raw.headers.get("x-brisk-upstream"), raw.parse()


def wait_until(cond, what, timeout=30):
    deadline = time.time() + timeout * TIME_SCALE
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def fleet(brisk_bin, tmp_path):
    engines = [Engine(brisk_bin, tmp_path, f"e{i}") for i in range(2)]
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text("server: {port: 0, http_threads: 2}\n"
                   "replicas: {health_interval_s: 0.2, eject_s: 1}\n"
                   "tiers:\n  - name: small\n    upstreams:\n" +
                   "".join(e.upstream_yaml() for e in engines))
    gw = start_gateway(brisk_bin, cfg, tmp_path / "ledger.db")
    yield gw, engines
    gw.stop()
    for e in engines:
        e.proc.stop()


def replica_blocks(gw, engine):
    return gw.metric("brisk_gateway_kv_index_replica_blocks",
                     {"upstream": f"127.0.0.1:{engine.port}"}) or 0


def test_prompts_go_where_their_prefix_is_cached(fleet):
    gw, engines = fleet
    for e in engines:
        wait_until(lambda e=e: gw.metric("brisk_gateway_kv_events_live",
                                         {"upstream": f"127.0.0.1:{e.port}"}) == 1,
                   f"{e.name}'s KV events to be live")
    # Each group's prefix computed on one engine, directly: the gateway hears
    # of it only through that engine's events.
    for i in range(GROUPS):
        chat(engines[i % 2].url, i, "warm up")
    wait_until(lambda: all(replica_blocks(gw, e) >= GROUPS // 2 * 20 for e in engines),
               "the index to hold both engines' prefixes")
    for i in range(GROUPS):
        upstream, resp = chat(gw.url, i, f"Which drawer holds fact{i}-3?")
        assert upstream == f"127.0.0.1:{engines[i % 2].port}", (i, upstream)
        # The engine served the prefix from its cache.
        assert resp.usage.prompt_tokens_details.cached_tokens >= 256, resp.usage
    assert gw.metric("brisk_gateway_prefix_lookups_total", {"result": "matched"}) >= GROUPS
    cached = gw.metric("brisk_gateway_prefix_cached_tokens_total")
    prompt = gw.metric("brisk_gateway_prefix_prompt_tokens_total")
    assert cached >= 0.8 * prompt, (cached, prompt)

    # The engine's answer to the gateway's lookup names the blocks its events
    # named: a new prompt of a known group is a hit on the first request.
    status, body = gw.get("/metrics")
    assert status == 200 and "brisk_gateway_kv_index_bytes" in body


def test_a_restarted_engine_is_relearnt(fleet):
    gw, engines = fleet
    e1 = engines[1]
    label = {"upstream": f"127.0.0.1:{e1.port}"}
    wait_until(lambda: gw.metric("brisk_gateway_kv_events_live", label) == 1, "live events")
    chat(e1.url, 1, "warm up")
    wait_until(lambda: replica_blocks(gw, e1) >= 20, "e1's prefix in the index")
    resyncs = gw.metric("brisk_gateway_kv_events_resyncs", label)
    e1.proc.stop(signal.SIGKILL)
    wait_until(lambda: gw.metric("brisk_gateway_kv_events_live", label) == 0,
               "the gateway to notice the dead engine")
    # While it is down, the prompt goes to the other replica.
    upstream, _ = chat(gw.url, 1, "still there?")
    assert upstream == f"127.0.0.1:{engines[0].port}"
    e1.start()
    wait_until(lambda: gw.metric("brisk_gateway_kv_events_live", label) == 1
               and gw.metric("brisk_gateway_kv_events_resyncs", label) > resyncs,
               "the restarted engine to be re-learnt")
    wait_until(lambda: gw.metric("brisk_gateway_upstream_healthy", label) == 1,
               "the restarted engine to be admitted again")
    # The new process holds nothing: its old blocks are gone from the index.
    assert replica_blocks(gw, e1) == 0
    chat(e1.url, 4, "warm up")  # group 4 now lives on e1 only
    wait_until(lambda: replica_blocks(gw, e1) >= 20, "the new prefix in the index")
    upstream, _ = chat(gw.url, 4, "which drawer?")
    assert upstream == f"127.0.0.1:{e1.port}"


def test_block_hashes_endpoint(fleet):
    gw, engines = fleet
    import urllib.request
    body = json.dumps({"model": "smol", "messages": [
        {"role": "system", "content": system_prompt(0)}, {"role": "user", "content": "hi"}]})
    req = urllib.request.Request(engines[0].url + "/kv/block_hashes/v1/chat/completions",
                                 data=body.encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        a = json.loads(r.read())
    assert a["block_size"] == 16
    assert len(a["block_hashes"]) == a["prompt_tokens"] // 16 > 20
    assert all(len(h) == 16 for h in a["block_hashes"])
    # The same prompt on the other engine (same seed, no salt): the same keys.
    req2 = urllib.request.Request(engines[1].url + "/kv/block_hashes/v1/chat/completions",
                                  data=body.encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req2, timeout=10) as r:
        assert json.loads(r.read())["block_hashes"] == a["block_hashes"]
