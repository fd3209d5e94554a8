"""`brisk gateway` when a replica dies: requests not yet answered are retried on
the other replica before the first byte, a stream cut mid-answer ends with an
error event, the dead replica is marked unhealthy and re-admitted when it is
back (same engines and gateway as test_gateway.py)."""
import signal
import threading
import time

from conftest import TIME_SCALE
from gateway_util import (SMOL, client, engines, gateway, sqlite_rows,  # noqa: F401
                          start_engine, stream_raw)


def test_failover_retries_before_the_first_byte_and_readmits(gateway, engines, brisk_bin):
    gw = gateway()
    c = client(gw)
    victim = engines["small2"]
    port = victim.port
    victim.stop(signal.SIGKILL)

    def wait_for(state):
        # A failed attempt marks the replica at once, the health checks
        # (every 0.2 s here) within a few intervals: the latter can lag a
        # burst of requests on a loaded host, so poll instead of asserting
        # at one instant.
        want = f'brisk_gateway_upstream_healthy{{tier="small",upstream="127.0.0.1:{port}"}} {state}'
        deadline = time.time() + 20 * TIME_SCALE
        text = ""
        while time.time() < deadline:
            _, text = gw.get("/metrics")
            if want in text:
                return
            time.sleep(0.1)
        raise AssertionError(f"{want!r} not in /metrics:\n{text}")

    try:
        # Every request still succeeds: a refused connection is retried on
        # the other replica before anything reached the client.
        for i in range(8):
            r = c.chat.completions.create(model="small", max_tokens=2,
                                          messages=[{"role": "user", "content": f"Hi {i}"}])
            assert r.choices[0].message.content is not None
        wait_for(0)
    finally:
        # Back on the same port (the module's later tests need both replicas).
        engines["small2"] = start_engine(brisk_bin, SMOL, "smol", port=port)
    # Re-admitted by the health checks.
    wait_for(1)


def test_a_stream_on_a_dying_replica_ends_with_an_error_event(gateway, engines, brisk_bin):
    gw = gateway()
    with stream_raw(gw, "small", 2000) as r:
        upstream = r.headers["x-brisk-upstream"]
        name = next(k for k, e in engines.items() if upstream.endswith(f":{e.port}"))
        port = engines[name].port
        lines = []
        for line in r.iter_lines():
            lines.append(line)
            if len(lines) == 6:
                engines[name].stop(signal.SIGKILL)
        # The stream ended (no hang) with an error event, after the tokens.
    assert any('"error"' in line for line in lines[-3:]), lines[-3:]
    engines[name] = start_engine(brisk_bin, SMOL, "smol", port=port)
    time.sleep(0.2)
    rows = sqlite_rows(gw.ledger)
    assert len(rows) == 1 and rows[0]["outcome"] == "error"
    assert rows[0]["completion_tokens"] > 0


def test_killing_a_replica_under_load_fails_no_request_that_had_not_streamed(
        gateway, engines, brisk_bin):
    gw = gateway()
    results, stop = [], threading.Event()

    def worker(i):
        c = client(gw, timeout=120)
        n = 0
        while not stop.is_set():
            n += 1
            try:
                c.chat.completions.create(
                    model="small", max_tokens=12, extra_body={"ignore_eos": True},
                    messages=[{"role": "user", "content": f"Request {i}-{n}"}])
                results.append("ok")
            except Exception as e:  # noqa: BLE001
                results.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    deadline = time.time() + 60 * TIME_SCALE
    while results.count("ok") < 6 and time.time() < deadline:
        time.sleep(0.05)
    victim = engines["small1"]
    port = victim.port
    before = len(results)
    victim.stop(signal.SIGKILL)  # its requests in flight break mid-answer
    time.sleep(3 * TIME_SCALE)
    stop.set()
    for t in threads:
        t.join()
    engines["small1"] = start_engine(brisk_bin, SMOL, "smol", port=port)
    failures = [r for r in results if r != "ok"]
    assert not failures, failures[:3]
    assert len(results) > before  # requests kept being answered after the kill
    rows = sqlite_rows(gw.ledger)
    assert len(rows) == len(results)
    assert sum(r["attempts"] > 1 for r in rows) >= 1  # some were retried on the other replica
