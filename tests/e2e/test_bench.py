"""`brisk bench` end to end: a short load test against a real OpenAI-compatible
server, and the JSON result checked for completeness and consistency (request
counts, token counts that match the server's usage).

The server is $BRISK_SERVER_URL if set (any OpenAI-compatible server: `brisk
serve`, llama-server, vLLM), otherwise a `brisk serve` the server_url fixture
starts.
"""
import json
import os
import subprocess

import pytest

from server_process import ServerProcess, free_port


@pytest.fixture(scope="module")
def server_url(brisk_bin, default_model):
    if os.environ.get("BRISK_SERVER_URL"):
        yield os.environ["BRISK_SERVER_URL"].rstrip("/")
        return
    server = ServerProcess([brisk_bin, "serve", "--model", default_model, "--threads", "1",
                            "--port", "0"], ready_path="/health")
    yield server.url
    server.stop(timeout=10)


def bench(brisk_bin, *args, timeout=300):
    return subprocess.run([brisk_bin, "bench", *args], capture_output=True, text=True,
                          timeout=timeout)


def check_result(res, num_requests, max_tokens):
    """The JSON result is complete and its numbers agree with each other."""
    for key in ("format", "label", "started_at", "server", "config", "workload", "summary",
                "requests"):
        assert key in res, key
    assert res["format"] == "brisk-bench-result/1"
    s, reqs = res["summary"], res["requests"]
    assert len(reqs) == num_requests
    assert [r["index"] for r in reqs] == list(range(num_requests))
    assert s["completed"] == num_requests, [r.get("error") for r in reqs]
    assert s["errors"] == s["rejected_429"] == s["cancelled"] == 0
    ok = [r for r in reqs if r["status"] == "ok"]
    assert len(ok) == s["completed"]
    # Token counts come from the server's usage and add up.
    assert s["output_tokens_from_usage"] == s["completed"]
    assert s["prompt_tokens_from_usage"] == s["completed"]
    assert sum(r["output_tokens"] for r in ok) == s["total_output_tokens"]
    assert sum(r["prompt_tokens"] for r in ok) == s["total_input_tokens"]
    for r in ok:
        assert r["output_tokens_from_usage"] and r["prompt_tokens_from_usage"]
        assert r["max_tokens"] == max_tokens
        assert 1 <= r["output_tokens"] <= max_tokens
        assert r["prompt_tokens"] > 0
        assert 1 <= r["content_chunks"] <= r["output_tokens"] + 1
        assert len(r["itl_ms"]) == r["content_chunks"] - 1
        assert 0 < r["ttft_ms"] <= r["e2e_ms"]
        assert r["start_s"] >= r["scheduled_s"] - 1e-6
        if r["output_tokens"] > 1:
            want = (r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1)
            assert r["tpot_ms"] == pytest.approx(want, abs=0.01)
        else:
            assert r["tpot_ms"] is None
    # Aggregates agree with the records.
    assert s["ttft_ms"]["count"] == s["e2e_ms"]["count"] == s["completed"]
    assert s["itl_ms"]["count"] == sum(len(r["itl_ms"]) for r in ok)
    assert s["ttft_ms"]["max"] == pytest.approx(max(r["ttft_ms"] for r in ok), abs=0.01)
    for d in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        q = s[d]
        if q["count"]:
            assert q["min"] <= q["p50"] <= q["p90"] <= q["p95"] <= q["p99"] <= q["max"]
    assert s["duration_s"] > 0
    assert s["request_throughput"] == pytest.approx(s["completed"] / s["duration_s"], rel=1e-2)
    assert s["output_throughput"] == pytest.approx(
        s["total_output_tokens"] / s["duration_s"], rel=1e-2)
    assert s["goodput"] is not None and s["goodput"] <= s["request_throughput"] + 1e-9
    assert s["good_requests"] <= s["completed"]


def test_short_open_loop_bench(brisk_bin, server_url, tmp_path):
    out = tmp_path / "result.json"
    r = bench(brisk_bin, "--url", server_url, "-n", "4", "--warmup", "1", "--input-len", "16",
              "--output-len", "8", "--ignore-eos", "--request-rate", "inf", "--max-inflight", "2",
              "--slo", "ttft=60s,tpot=10s", "--label", "e2e", "--json", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "Serving Benchmark Result" in r.stdout
    assert "Request goodput (req/s):" in r.stdout
    res = json.loads(out.read_text())
    check_result(res, 4, 8)
    assert res["label"] == "e2e"
    assert res["config"]["request_rate"] == "inf"
    assert res["config"]["max_inflight"] == 2
    assert res["workload"]["name"] == "random"
    assert res["server"]["model"]  # discovered from /v1/models


def test_closed_loop_chat_bench(brisk_bin, server_url, tmp_path):
    out = tmp_path / "chat.json"
    r = bench(brisk_bin, "--url", server_url, "--endpoint", "chat", "-n", "3",
              "--concurrency", "2", "--workload", "shared-prefix", "--prefix-len", "24",
              "--num-prefixes", "2", "--input-len", "8", "--output-len", "6", "--ignore-eos",
              "--slo", "e2e=120s", "--json", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    check_result(res, 3, 6)
    assert res["config"]["mode"] == "closed-loop"
    assert res["server"]["path"] == "/v1/chat/completions"


def test_bad_flags_exit_2_with_a_message(brisk_bin):
    r = bench(brisk_bin, "--slo", "latency=5ms")
    assert r.returncode == 2
    assert "unknown SLO" in r.stderr
    r = bench(brisk_bin, "--request-rate=0")
    assert r.returncode == 2 and "request-rate" in r.stderr
    r = bench(brisk_bin, "--url", "https://example.invalid")
    assert r.returncode == 2 and "https" in r.stderr


def test_no_server_fails_cleanly(brisk_bin, tmp_path):
    port = free_port()  # nothing listens there
    r = bench(brisk_bin, "--url", f"http://127.0.0.1:{port}", "-n", "1", "--quiet")
    assert r.returncode == 1
    assert "--model" in r.stderr  # model discovery failed, says how to skip it
    out = tmp_path / "refused.json"
    r = bench(brisk_bin, "--url", f"http://127.0.0.1:{port}", "--model", "m", "-n", "2",
              "--quiet", "--json", str(out))
    assert r.returncode == 1
    res = json.loads(out.read_text())
    assert res["summary"]["errors"] == 2 and res["summary"]["completed"] == 0
    assert all("connect" in q["error"] for q in res["requests"])
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr
