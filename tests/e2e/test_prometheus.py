"""A real Prometheus scrapes `brisk serve`'s /metrics: the exposition parses
(metric names with ':' included), the target is up, and the PromQL a dashboard
uses (TTFT count, p95 from the histogram, requests by outcome) returns numbers.

Needs the Debian package `prometheus` (/usr/bin/prometheus, scripts/setup.sh
installs it); skipped without it.
"""
import json
import math
import os
import shutil
import signal
import time
import urllib.parse
import urllib.request

import pytest

from conftest import skip_or_fail, MODEL_ID
from server_process import ServerProcess, free_port

PROMETHEUS = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus") or "/usr/bin/prometheus"


def http_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


@pytest.fixture
def prometheus(brisk_server, tmp_path):
    if not os.access(PROMETHEUS, os.X_OK):
        skip_or_fail(f"Prometheus not installed ({PROMETHEUS} missing; "
                    "apt-get install prometheus, see scripts/setup.sh)")
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  scrape_timeout: 1s\n"
        "  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: brisk\n"
        "    metrics_path: /metrics\n"
        "    static_configs:\n"
        f"      - targets: ['{brisk_server.host}:{brisk_server.port}']\n")
    proc = ServerProcess(
        [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h"],
        port=port, ready_path="/-/ready", timeout=30)
    try:
        yield proc.url
    finally:
        proc.stop(signal.SIGKILL)


def query(base, promql):
    doc = http_json(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def scalar(result):
    """The value of a one-sample instant vector, or None (empty / NaN)."""
    if len(result) != 1:
        return None
    v = float(result[0]["value"][1])
    return None if math.isnan(v) else v


def poll(base, promql, pred, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = query(base, promql)
        v = scalar(last)
        if v is not None and pred(v):
            return v
        time.sleep(0.5)
    pytest.fail(f"{promql} never satisfied the check in {timeout} s; last result {last}")


def test_prometheus_scrapes_brisk(brisk_server, prometheus):
    base = prometheus
    job = '{job="brisk"}'
    # The first scrape succeeded: the whole exposition parsed.
    poll(base, f"up{job}", lambda v: v == 1, 20)
    targets = http_json(base + "/api/v1/targets")["data"]["activeTargets"]
    assert len(targets) == 1 and targets[0]["health"] == "up", targets
    assert targets[0]["lastError"] == "", targets

    # Traffic after the first scrape, so rate() sees the counters move.
    ok0 = scalar(query(base, f'brisk:requests_total{{job="brisk",outcome="ok"}}')) or 0
    client = brisk_server.client(timeout=60)
    for i in range(4):
        r = client.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": f"Count to {i + 3}."}],
            max_tokens=8)
        assert r.choices[0].finish_reason in ("stop", "length")
    stream = client.completions.create(model=MODEL_ID, prompt="Once upon a time", max_tokens=8,
                                       stream=True)
    assert "".join(c.choices[0].text for c in stream if c.choices)

    poll(base, f"brisk:time_to_first_token_seconds_count{job}", lambda v: v >= 5, 20)
    p95 = poll(base,
               f"histogram_quantile(0.95, rate(brisk:time_to_first_token_seconds_bucket{job}[1m]))",
               lambda v: v > 0, 20)
    assert p95 < 600, p95
    poll(base, f'brisk:requests_total{{job="brisk",outcome="ok"}}', lambda v: v >= ok0 + 5, 20)
    # Other families a dashboard plots are there, with their labels.
    used = query(base, f'brisk:kv_cache_blocks{{job="brisk",state="used"}}')
    assert len(used) == 1, used
    running = query(base, f"brisk:num_requests_running{job}")
    assert {s["metric"]["priority"] for s in running} == {"interactive", "batch"}, running
    tpot = poll(base, f"histogram_quantile(0.5, sum by (le) "
                      f"(rate(brisk:time_per_output_token_seconds_bucket{job}[1m])))",
                lambda v: v > 0, 20)
    assert tpot < 60, tpot
    assert poll(base, f"up{job}", lambda v: True, 5) == 1
