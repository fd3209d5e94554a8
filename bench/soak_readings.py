"""Readings of the attack soak (bench/attack_soak.py): Prometheus histograms
and sums from /metrics, percentiles, and the /health and TTFT summaries of a
phase."""
import re
import urllib.request


def histogram(server, name):
    """{le: cumulative count} of a Prometheus histogram in /metrics."""
    try:
        with urllib.request.urlopen(server.url + "/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        m = re.match(re.escape(name) + r'_bucket\{[^}]*le="([^"]+)"[^}]*\}\s+(\S+)$', line)
        if m:
            out[float(m.group(1))] = out.get(float(m.group(1)), 0.0) + float(m.group(2))
    return out


def histogram_quantiles(before, after, qs=(50, 95, 99)):
    """Upper bucket bounds of the quantiles of what was observed between two
    snapshots (what a histogram can tell), and the count."""
    les = sorted(after)
    delta = [after[le] - before.get(le, 0.0) for le in les]
    total = delta[-1] if delta else 0
    out = {"n": total}
    for q in qs:
        out[f"p{q}"] = next((le for le, c in zip(les, delta) if total and c >= q / 100 * total),
                            None)
    return out


def metric_sum(server, name):
    try:
        with urllib.request.urlopen(server.url + "/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    total = None
    for line in text.splitlines():
        m = re.match(r"([^{\s#]+)(\{[^}]*\})?\s+(\S+)$", line)
        if m and m.group(1) == name:
            total = (total or 0.0) + float(m.group(3))
    return total


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def health_summary(poller):
    poller.stop()
    ok = [x for x in poller.latencies if x != float("inf")]
    return {"polls": len(poller.latencies), "failed": len(poller.latencies) - len(ok),
            "failures": poller.failures, "p50_ms": ms(percentile(ok, 50)),
            "p99_ms": ms(percentile(ok, 99)), "max_ms": ms(max(ok, default=None))}


def ttft_summary(client, access_log):
    """Client-side TTFT, and from the access log of the same requests: the wait for
    admission (queue_ms: preparation + a free running slot) and what the client saw
    beyond the server's own TTFT (connect, send, HTTP read: the front door)."""
    t = [x for x, _ in client["ttft"]]
    by_id = {r["request_id"]: r for r in access_log}
    seen = [(x, by_id[rid]) for x, rid in client["ttft"] if rid in by_id]
    queue = [r["queue_ms"] / 1e3 for _, r in seen if r["queue_ms"] >= 0]
    door = [x - r["ttft_ms"] / 1e3 for x, r in seen if r["ttft_ms"] >= 0]
    return {"logged": len(seen),
            "queue_p50_ms": ms(percentile(queue, 50)),
            "queue_max_ms": ms(max(queue, default=None)),
            "front_door_p50_ms": ms(percentile(door, 50)),
            "front_door_p95_ms": ms(percentile(door, 95)),
            "front_door_max_ms": ms(max(door, default=None)),
            "sent": client["sent"], "ok": client["ok"], "failed": client["failed"],
            "errors": client["errors"], "refused_then_retried": client["refused"],
            "ttft_n": len(t), "ttft_p50_ms": ms(percentile(t, 50)),
            "ttft_p95_ms": ms(percentile(t, 95)), "ttft_max_ms": ms(max(t, default=None)),
            "ttft_retried_n": len(client["ttft_retried"]),
            "ttft_retried_max_ms": ms(max((x for x, _ in client["ttft_retried"]), default=None))}


def ms(x):
    return None if x is None else round(x * 1e3, 1)
