"""The markdown tables and the --check verdict of bench/attack_soak.py."""

MiB = 1 << 20
RSS_BUDGET = 256 * MiB  # the front door's global memory goal (also the body budget's default)
KINDS = ["chunked_flood", "stalled_uploads", "json_100k_keys", "prompt_4mib", "n_over_cap",
         "pipelined_junk_close", "half_close", "probes", "slow_reader"]


def fmt(x, nd=0):
    return "-" if x is None else f"{x:.{nd}f}"


def table(phases, cap):
    cols = [p["phase"] for p in phases]
    rows = [("attack time (s) / attack rounds",
             lambda p: f"{p['attack_s']:.0f} / {sum(a['rounds'] for a in p['attacks'].values())}"),
            ("attacking connections open at once (peak)", lambda p: str(p["attack_conns_peak"])),
            ("server RSS before / peak / after (MB)",
             lambda p: f"{p['rss_before_mb']:.0f} / {p['rss_peak_mb']:.0f} / "
                       f"{fmt(p['rss_after_mb'])}"),
            ("peak RSS growth (MiB; goal < 256)", lambda p: f"{p['rss_growth_mib']:.1f}"),
            ("peak RSS growth per attacking connection (MiB; goal < 64)",
             lambda p: f"{p['rss_growth_per_conn_mib']:.2f}"),
            ("/health max (ms): baseline -> attack",
             lambda p: f"{fmt(p['baseline']['health']['max_ms'], 1)} -> "
                       f"{fmt(p['attack']['health']['max_ms'], 1)}"),
            ("/health p99 (ms): baseline -> attack",
             lambda p: f"{fmt(p['baseline']['health']['p99_ms'], 1)} -> "
                       f"{fmt(p['attack']['health']['p99_ms'], 1)}"),
            ("/health polls (failed) during attack",
             lambda p: f"{p['attack']['health']['polls']} ({p['attack']['health']['failed']})"),
            ("interactive TTFT p50 / p95 / max (ms), baseline",
             lambda p: ttft_cell(p["baseline"]["normal"])),
            ("interactive TTFT p50 / p95 / max (ms), attack",
             lambda p: ttft_cell(p["attack"]["normal"])),
            ("of which: wait for admission, p50 / max (ms; server queue_ms), baseline -> attack",
             lambda p: f"{fmt(p['baseline']['normal']['queue_p50_ms'])} / "
                       f"{fmt(p['baseline']['normal']['queue_max_ms'])} -> "
                       f"{fmt(p['attack']['normal']['queue_p50_ms'])} / "
                       f"{fmt(p['attack']['normal']['queue_max_ms'])}"),
            ("engine step p50 / p95 / p99 (ms; bucket bounds of brisk:engine_step_seconds), "
             "baseline -> attack", lambda p: step_cell(p["baseline"]) + " -> " + step_cell(p["attack"])),
            ("of which: front door, p50 / p95 / max (ms; client TTFT - server TTFT), "
             "baseline -> attack",
             lambda p: door_cell(p["baseline"]["normal"]) + " -> "
                       + door_cell(p["attack"]["normal"])),
            ("normal requests sent / ok / failed (attack)",
             lambda p: f"{p['attack']['normal']['sent']} / {p['attack']['normal']['ok']} / "
                       f"{p['attack']['normal']['failed']}"),
            ("normal answers 429/503 then retried by the client",
             lambda p: ", ".join(f"{k}: {v}" for k, v in
                                 p["attack"]["normal"]["refused_then_retried"].items()) or "0"),
            (f"max running sequences (cap {cap})",
             lambda p: f"{p['attack']['max_running']:g} ({p['attack']['metric_samples']} samples)"),
            ("running + waiting after the attack",
             lambda p: f"{fmt(p['sequences_left'])} after {p['settle_s']} s"),
            ("server alive at the end / crashed",
             lambda p: f"{'yes' if p['alive_at_end'] else 'NO'} / "
                       f"{'YES' if p['crashed'] else 'no'}")]
    out = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label, f in rows:
        out.append(f"| {label} | " + " | ".join(f(p) for p in phases) + " |")
    out += ["", "| attack | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for kind in phases[0]["attacks"]:
        cells = []
        for p in phases:
            a = p["attacks"].get(kind, {"rounds": 0, "answers": {}, "max_round_s": 0})
            cells.append(f"{a['rounds']} rounds, longest {a['max_round_s']:.1f} s: "
                         + ", ".join(f"{k} x{v}" for k, v in a["answers"].items()))
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def step_cell(m):
    s = m.get("engine_step_s") or {}
    return " / ".join(fmt(None if s.get(k) is None else s[k] * 1e3, 0) for k in ("p50", "p95", "p99"))


def door_cell(n):
    return (f"{fmt(n['front_door_p50_ms'], 1)} / {fmt(n['front_door_p95_ms'], 1)} / "
            f"{fmt(n['front_door_max_ms'], 1)}")


def ttft_cell(n):
    cell = f"{fmt(n['ttft_p50_ms'])} / {fmt(n['ttft_p95_ms'])} / {fmt(n['ttft_max_ms'])}"
    if n["ttft_retried_n"]:
        cell += f" (+{n['ttft_retried_n']} retried, max {fmt(n['ttft_retried_max_ms'])})"
    return cell


def failures(phases, cap):
    out = []
    for p in phases:
        name = p["phase"]
        if "error" in p:
            out.append(f"{name}: the soak itself failed: {p['error']}")
            continue
        if p.get("crashed") or not p.get("alive_at_end"):
            out.append(f"{name}: the server died or stopped answering (exit {p.get('exit_code')})")
        for part in ("baseline", "attack"):
            n = p.get(part, {}).get("normal", {})
            if n.get("failed", 1):
                out.append(f"{name}: {n.get('failed', '?')} normal requests lost ({part}): "
                           f"{n.get('errors')}")
        if "attack" not in p:
            continue
        idle = [k for k, a in p["attacks"].items() if a["rounds"] == 0] + [
            k for k in KINDS if k not in p["attacks"]]
        if idle:
            out.append(f"{name}: attacks that never ran: {idle}")
        if p["attack"]["max_running"] > cap:
            out.append(f"{name}: {p['attack']['max_running']:g} sequences ran, cap {cap}")
        if p["attack"]["metric_samples"] == 0:
            out.append(f"{name}: /metrics never answered; running sequences not checked")
        if p["rss_growth_mib"] * MiB > RSS_BUDGET:
            out.append(f"{name}: RSS grew {p['rss_growth_mib']:.0f} MiB (budget 256 MiB)")
    return out
