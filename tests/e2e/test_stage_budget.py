"""Per-stage latency budget: the Server-Timing header read with the
real `openai` client's raw response from `brisk serve` and from `brisk gateway`
in front of it, the stages adding up to `total` within 5% and `total` within the
client's wall time, the stream trailer, the stage histograms in /metrics, the
W3C traceparent joined by both processes, and spans arriving at a tiny OTLP/HTTP
collector."""
import http.server
import json
import socket
import threading
import time
import urllib.parse

import pytest

from conftest import MODEL_ID
from gateway_util import client as gateway_client
from gateway_util import start_gateway, wait_models_known, write_gateway_config

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
MSG = [{"role": "user", "content": "Name a color."}]
ENGINE_STAGES = ["tokenize", "queue", "prefill", "decode", "write"]
GATEWAY_STAGES = ["admission", "route", "connect", "tokenize", "queue", "prefill", "decode",
                  "network", "write"]


class Collector(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP (JSON) collector: keeps every POST /v1/traces body."""

    def __init__(self):
        self.bodies = []
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/traces" and \
                        self.headers.get("Content-Type") == "application/json":
                    collector.bodies.append(json.loads(data))
                    self.send_response(200)
                else:
                    self.send_response(404)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self, trace_id, timeout=10):
        """{service.name: [span]} of this trace, once the server spans arrived."""
        deadline = time.time() + timeout
        while True:
            out = {}
            for body in list(self.bodies):
                for rs in body["resourceSpans"]:
                    svc = next(a["value"]["stringValue"] for a in rs["resource"]["attributes"]
                               if a["key"] == "service.name")
                    for ss in rs["scopeSpans"]:
                        out.setdefault(svc, []).extend(
                            s for s in ss["spans"] if s["traceId"] == trace_id)
            if out or time.time() > deadline:
                return out
            time.sleep(0.05)


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.shutdown()
    c.server_close()


def timing(value):
    """Server-Timing value -> {name: ms}, in order."""
    out = {}
    for metric in value.split(","):
        parts = [p.strip() for p in metric.split(";")]
        for p in parts[1:]:
            if p.startswith("dur="):
                out[parts[0]] = float(p[4:])
    return out


def check_budget(stages, names, wall_ms):
    assert list(stages) == names + ["total"], stages
    assert all(v >= 0 for v in stages.values()), stages
    total = stages["total"]
    assert total > 0
    assert abs(sum(stages[n] for n in names) - total) <= 0.05 * total, stages
    assert total <= wall_ms, (stages, wall_ms)


def chat_with_budget(client, model, stage_names):
    """A chat completion through the openai client's raw response, joining
    TRACEPARENT: (raw response, its Server-Timing stages), the stages already
    checked to add up within the client's wall time."""
    t0 = time.perf_counter()
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=MSG, max_tokens=16, temperature=0,
        extra_headers={"traceparent": TRACEPARENT})
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert raw.parse().choices[0].message.content is not None
    stages = timing(raw.headers["server-timing"])
    check_budget(stages, stage_names, wall_ms)
    return raw, stages


def raw_request(url, path, body, headers=None):
    """POST over a plain socket: (status, headers, body, trailers); reads the
    chunked framing itself, since HTTP client libraries drop trailers."""
    u = urllib.parse.urlparse(url)
    data = json.dumps(body).encode()
    head = [f"POST {path} HTTP/1.1", f"Host: {u.hostname}:{u.port}",
            "Content-Type: application/json", f"Content-Length: {len(data)}",
            "Connection: close"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection((u.hostname, u.port), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        f = sock.makefile("rb")
        status = int(f.readline().split()[1])

        def fields():
            out = {}
            while (line := f.readline().decode().rstrip("\r\n")):
                k, v = line.split(":", 1)
                out[k.strip().lower()] = v.strip()
            return out

        hdrs = fields()
        assert hdrs.get("transfer-encoding") == "chunked", hdrs
        payload = b""
        while (size := int(f.readline().split(b";")[0], 16)):
            payload += f.read(size)
            f.readline()
        return status, hdrs, payload.decode(), fields()


def engine_config(collector):
    return ("logging:\n  access_log: true\n  access_log_path: \"-\"\n"
            f"  otlp_endpoint: {collector.url}\n")


def test_serve_server_timing_metrics_access_log_and_spans(make_server, collector):
    s = make_server(config_text=engine_config(collector))
    raw, stages = chat_with_budget(s.client(), MODEL_ID, ENGINE_STAGES)
    assert stages["decode"] > 0 and stages["prefill"] > 0
    tp = raw.headers["traceparent"].split("-")
    assert (tp[0], tp[1], tp[3]) == ("00", TRACE_ID, "01") and tp[2] != "00f067aa0ba902b7"

    deadline = time.time() + 10  # recorded once the last byte is written
    while (s.metric("brisk_request_stage_seconds_count", {"stage": "write"}) != 1
           and time.time() < deadline):
        time.sleep(0.05)
    for stage in ENGINE_STAGES:
        assert s.metric("brisk_request_stage_seconds_count", {"stage": stage}) == 1, stage

    deadline = time.time() + 10
    while not s.access_log() and time.time() < deadline:
        time.sleep(0.05)
    rec = s.access_log()[-1]
    assert rec["trace_id"] == TRACE_ID
    assert list(rec["stages"]) == ENGINE_STAGES
    assert abs(sum(rec["stages"].values()) - rec["total_ms"]) <= 0.05 * rec["total_ms"]

    spans = collector.spans(TRACE_ID)["brisk-serve"]
    server = [x for x in spans if x.get("parentSpanId") == "00f067aa0ba902b7"]
    assert len(server) == 1 and server[0]["spanId"] == tp[2], spans
    children = [x["name"] for x in spans if x.get("parentSpanId") == tp[2]]
    assert children == ENGINE_STAGES


def test_serve_stream_trailer_and_bad_traceparent(make_server, collector):
    s = make_server(config_text=engine_config(collector))
    t0 = time.perf_counter()
    status, hdrs, body, trailers = raw_request(
        s.url, "/v1/chat/completions",
        {"model": MODEL_ID, "messages": MSG, "max_tokens": 16, "temperature": 0, "stream": True},
        {"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"})  # invalid: zero trace id
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert status == 200 and body.rstrip().endswith("data: [DONE]")
    assert hdrs["trailer"].lower() == "server-timing"
    assert list(timing(hdrs["server-timing"])) == ["tokenize"]
    check_budget(timing(trailers["server-timing"]), ENGINE_STAGES, wall_ms)
    trace_id = hdrs["traceparent"].split("-")[1]
    assert len(trace_id) == 32 and trace_id != "0" * 32  # a new trace
    # The openai client reads the same stream (trailer and all) without trouble.
    chunks = list(s.client().chat.completions.create(model=MODEL_ID, messages=MSG, max_tokens=4,
                                                     stream=True))
    assert chunks
    # Stages are recorded once the stream's last byte is written, which may
    # be just after the client has read it.
    deadline = time.time() + 10
    while (s.metric("brisk_request_stage_seconds_count", {"stage": "decode"}) != 2
           and time.time() < deadline):
        time.sleep(0.05)
    assert s.metric("brisk_request_stage_seconds_count", {"stage": "decode"}) == 2


def test_gateway_joins_engine_stages_and_trace(make_server, brisk_bin, collector, tmp_path):
    engine = make_server(config_text=engine_config(collector))
    cfg = write_gateway_config(tmp_path / "gateway.yaml",
                               [("small", [engine.url], (0.1, 0.02, 0.4))],
                               f"logging: {{otlp_endpoint: \"{collector.url}\"}}\n")
    gw = start_gateway(brisk_bin, cfg, tmp_path / "ledger.db")
    try:
        wait_models_known(gw, 1)
        raw, stages = chat_with_budget(gateway_client(gw), "small", GATEWAY_STAGES)
        assert stages["prefill"] > 0 and stages["decode"] > 0
        gw_span = raw.headers["traceparent"].split("-")
        assert gw_span[1] == TRACE_ID

        deadline = time.time() + 10  # recorded once the last byte is written
        _, metrics_text = gw.get("/metrics")
        while ('brisk_gateway_request_stage_seconds_count{stage="total"} 1' not in metrics_text
               and time.time() < deadline):
            time.sleep(0.05)
            _, metrics_text = gw.get("/metrics")
        for stage in GATEWAY_STAGES:
            assert f'brisk_gateway_request_stage_seconds_count{{stage="{stage}"}} 1' \
                in metrics_text, stage

        # Both processes joined the caller's trace: the engine's span is a
        # child of the gateway's, which is a child of the caller's.
        spans = collector.spans(TRACE_ID)
        deadline = time.time() + 10
        while len(spans) < 2 and time.time() < deadline:
            time.sleep(0.05)
            spans = collector.spans(TRACE_ID)
        gw_spans, engine_spans = spans["brisk-gateway"], spans["brisk-serve"]
        root = [x for x in gw_spans if x.get("parentSpanId") == "00f067aa0ba902b7"]
        assert len(root) == 1 and root[0]["spanId"] == gw_span[2]
        assert [x["name"] for x in gw_spans if x.get("parentSpanId") == gw_span[2]] == \
            GATEWAY_STAGES
        engine_root = [x for x in engine_spans if x.get("parentSpanId") == gw_span[2]]
        assert len(engine_root) == 1, engine_spans
        assert {x["name"] for x in engine_spans} >= set(ENGINE_STAGES)

        # A stream through the gateway: the full budget in its trailer.
        t0 = time.perf_counter()
        status, hdrs, body, trailers = raw_request(
            gw.url, "/v1/chat/completions",
            {"model": "small", "messages": MSG, "max_tokens": 16, "temperature": 0,
             "stream": True}, {"traceparent": TRACEPARENT})
        wall_ms = (time.perf_counter() - t0) * 1e3
        assert status == 200 and "[DONE]" in body
        assert hdrs["traceparent"].split("-")[1] == TRACE_ID
        assert list(timing(hdrs["server-timing"]))[:3] == ["admission", "route", "connect"]
        check_budget(timing(trailers["server-timing"]), GATEWAY_STAGES, wall_ms)
    finally:
        gw.stop()
