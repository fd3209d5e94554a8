#!/usr/bin/env python3
"""The fleet under faults, on hosts that are Linux network namespaces (needs root):
HAProxy, two `brisk gateway` on one PostgreSQL, two SmolLM2 engines and a rollout
candidate (tests/e2e/fleet.py draws it). Real `openai` clients on the client host send
streamed chat requests through the load balancer the whole time: three workers with an
unlimited key, one with a capped daily budget. One phase per fault, in this order:

  baseline        nothing breaks (the TTFT p99 the other phases are compared with)
  gateway_kill    kill -9 of gw2 under load; it stays down
  late_gateway    a rollout is started through gw1, then gw2 starts: it must route by
                  the running rollout and see today's spend from its first request
  rollout_apply   the rollout aborted through gw2 (applied on gw1?), another started
                  through gw1 (applied on gw2?): the time for every gateway to apply it
  rollback        the candidate turns slow (its fault proxy waits 4 s): the breach rolls
                  both gateways back; fault -> decision, decision -> applied everywhere
  engine_kill     kill -9 of e1, restarted at the end of the phase
  engine_drain    SIGTERM of e2 (it drains its requests and exits), restarted
  partition       the link between gw1 and e2 cut (packets dropped both ways): gw1 must
                  eject e2, gw2 keep serving from it; healed at the end
  postgres        PostgreSQL stopped `immediate` (as a crash stops it), restarted
                  halfway through the phase
  database_link_cut  the link between gw1 and PostgreSQL cut for half the phase: gw1
                  spools its rows and refuses the capped key (on_store_outage: refuse),
                  gw2 goes on as before

Per phase: requests sent; failed before their first byte (a killed gateway's own
requests in flight at the kill are counted apart); cut mid-stream; ledger rows missing
or doubled for the completed requests (checked after the spools drained); TTFT p99
against the baseline's. And the capped key's spend against its limit at the end (the
stated bound: spend passes the limit only by the sum of cost - estimate of admitted
requests, 0 here as prices are output-only and every request caps its output).

    sudo python3 bench/fleet_chaos.py [--brisk build/brisk] [--phase-s 12]
        [--out bench/results/fleet_chaos.json] [--check]

--check exits 1 unless every goal holds (the e2e test runs it so, with short phases).
One fleet per machine at a time: its hosts and bridge have fixed names (10.77.0.0/24).
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, os.path.join(REPO, "tools"))
import openai  # noqa: E402
from fleet import ENGINE_PORT, KEYS, OUTPUT_PRICE, Fleet  # noqa: E402
from fleet_hosts import namespaces_work  # noqa: E402

MAX_TOKENS = 16
ESTIMATE = MAX_TOKENS * OUTPUT_PRICE / 1e6
# Lenient while healthy (the candidate sits behind a Python proxy on a busy 2-core
# machine), far exceeded by the 4 s fault.
THRESHOLDS = ["--threshold", "min_samples=4", "--threshold", "window_s=10",
              "--threshold", "ttft_p95_slack_ms=1500"]
FAULT_DELAY_S = 4.0


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else None


class Load:
    """Workers sending streamed chat requests through the load balancer until stopped.
    Every request is kept: its phase, when it was sent, its first chunk and its end, and
    how it ended (ok, before_first_byte, mid_stream, or a refusal by the budget)."""

    def __init__(self, url, workers, capped_workers):
        self.url, self.records, self.phase = url, [], "setup"
        self.lock = threading.Lock()
        self.stopping = False
        self.threads = [threading.Thread(target=self._loop, args=("load", i, 0.0), daemon=True)
                        for i in range(workers)]
        self.threads += [threading.Thread(target=self._loop, args=("capped", i, 0.3),
                                          daemon=True) for i in range(capped_workers)]
        for t in self.threads:
            t.start()

    def _loop(self, key, worker, pause_s):
        client = openai.OpenAI(base_url=self.url + "/v1", api_key=KEYS[key], max_retries=0,
                               timeout=30)
        n = 0
        while not self.stopping:
            self._one(client, key, f"Tell me about ships, briefly. ({key} {worker} {n})")
            n += 1
            time.sleep(pause_s)

    def _one(self, client, key, prompt):
        r = {"key": key, "phase": self.phase, "t0": time.time(), "ttft": None, "id": None,
             "upstream": None, "outcome": None, "first_byte": False}
        try:
            raw = client.chat.completions.with_raw_response.create(
                model="small", messages=[{"role": "user", "content": prompt}],
                max_tokens=MAX_TOKENS, stream=True, stream_options={"include_usage": True})
            r["id"], r["upstream"] = raw.headers.get("x-request-id"), raw.headers.get(
                "x-brisk-upstream")
            finished = False
            for chunk in raw.parse():
                r["first_byte"] = True
                choice = chunk.choices[0] if chunk.choices else None
                if r["ttft"] is None and choice and choice.delta and choice.delta.content:
                    r["ttft"] = time.time() - r["t0"]
                if choice and choice.finish_reason:
                    finished = True
            r["outcome"] = "ok" if finished else "mid_stream"
        except openai.APIStatusError as e:
            code = str(getattr(e, "code", "") or "")
            if key == "capped" and code in ("budget_exceeded", "budget_store_unavailable"):
                # The budget's limit, or its policy while the database is away (refuse).
                r["outcome"] = "refused_budget"
            else:
                r["outcome"] = "mid_stream" if r["first_byte"] else "before_first_byte"
                r["error"] = f"{e.status_code} {code}"
        except Exception as e:  # noqa: BLE001 (a broken stream raises the HTTP library's own)
            r["outcome"] = "mid_stream" if r["first_byte"] else "before_first_byte"
            r["error"] = type(e).__name__
        r["t1"] = time.time()
        with self.lock:
            self.records.append(r)

    def stop(self):
        self.stopping = True
        for t in self.threads:
            t.join(60)


# ---------------------------------------------------------------- the faults
def wait_for(pred, timeout, step=0.02):
    """Seconds until pred() held, or None if it did not within timeout."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            if pred():
                return time.time() - t0
        except (OSError, RuntimeError):
            pass
        time.sleep(step)
    return None


def both_see_upstream(fleet, engine):
    return all(fleet.upstream_healthy(g, engine) == 1.0 for g in ("gw1", "gw2"))


def gateway_kill(fleet, ctx, facts, phase_s):
    time.sleep(1)
    facts["killed_at"] = time.time()
    fleet.procs["gw2"].proc.kill()
    fleet.procs["gw2"].proc.wait()


def late_gateway(fleet, ctx, facts, phase_s):
    ro = fleet.start_rollout("gw1", THRESHOLDS)
    ctx["rollout"] = ro["id"]
    t0 = time.time()
    fleet.start_gateway("gw2")
    facts["start_to_ready_s"] = round(time.time() - t0, 3)
    # Its very first answers: the running rollout and today's spend.
    late_stage = fleet.rollouts("gw2").get(ro["id"], {}).get("stage")
    late_spend = fleet.budget("gw2")["spent_usd"]
    seen_by_gw1 = fleet.budget("gw1")["spent_usd"]
    facts.update(rollout_stage_on_late=late_stage, spend_seen_late=late_spend,
                 spend_on_gw1=seen_by_gw1)
    # HAProxy takes it back (rise 2 at 500 ms).
    time.sleep(1.5)


def rollout_apply(fleet, ctx, facts, phase_s):
    fleet.rollout("gw2", "abort", "--tier", "small")
    facts["abort_via_gw2_applied_on_gw1_s"] = wait_for(
        lambda: fleet.rollouts("gw1")[ctx["rollout"]]["stage"] == "aborted", 5)
    ro = fleet.start_rollout("gw1", THRESHOLDS)
    ctx["rollout"] = ro["id"]
    facts["start_via_gw1_applied_on_gw2_s"] = wait_for(
        lambda: fleet.rollouts("gw2").get(ro["id"], {}).get("stage") == "canary", 5)


def rollback(fleet, ctx, facts, phase_s):
    time.sleep(1)
    fleet.proxy.delay_s = FAULT_DELAY_S
    fleet.proxy.mode = "slow"
    fault_at = time.time()
    rid = ctx["rollout"]
    applied = {}
    deadline = fault_at + 60
    while len(applied) < 2 and time.time() < deadline:
        for g in ("gw1", "gw2"):
            if g not in applied and \
                    fleet.rollouts(g).get(rid, {}).get("stage") == "rolled_back":
                applied[g] = time.time()
        time.sleep(0.02)
    fleet.proxy.mode = "pass"
    entries = [e for e in fleet.audit("gw1") if e.get("rollout") == rid]
    backs = [e for e in entries if e["action"] == "rollback"]
    facts["rollback_decisions"] = len(backs)
    if backs and len(applied) == 2:
        decided = backs[0]["time_unix_ms"] / 1000
        facts["fault_to_decision_s"] = round(decided - fault_at, 3)
        facts["decision_to_applied_s"] = {g: round(t - decided, 3) for g, t in applied.items()}
        facts["decided_by"] = backs[0].get("who")
        facts["metric"] = backs[0].get("metric")


def restart_engine(fleet, engine, facts):
    t0 = time.time()
    fleet.start_engine(engine)
    facts["back_in_both_s"] = wait_for(lambda: both_see_upstream(fleet, engine), 20)
    facts["restart_s"] = round(time.time() - t0, 3)


def engine_kill(fleet, ctx, facts, phase_s):
    time.sleep(1)
    fleet.procs["e1"].proc.kill()
    fleet.procs["e1"].proc.wait()
    facts["ejected_by_both_s"] = wait_for(
        lambda: all(fleet.upstream_healthy(g, "e1") == 0.0 for g in ("gw1", "gw2")), 10)
    time.sleep(max(0, phase_s - 4))
    restart_engine(fleet, "e1", facts)


def engine_drain(fleet, ctx, facts, phase_s):
    time.sleep(1)
    p = fleet.procs["e2"]
    t0 = time.time()
    p.proc.send_signal(signal.SIGTERM)
    p.proc.wait(60)
    facts["drained_and_exited_s"] = round(time.time() - t0, 3)
    facts["exit_code"] = p.proc.returncode
    time.sleep(max(0, phase_s - 4))
    restart_engine(fleet, "e2", facts)


def partition(fleet, ctx, facts, phase_s):
    time.sleep(1)
    fleet.hosts.cut("gw1", "e2")
    cut_at = time.time()
    ctx["cut"] = (cut_at, None)
    facts["gw1_ejected_e2_s"] = wait_for(lambda: fleet.upstream_healthy("gw1", "e2") == 0.0, 10)
    samples = []
    while time.time() < cut_at + max(2, phase_s - 3):
        samples.append(fleet.upstream_healthy("gw2", "e2"))
        time.sleep(0.2)
    facts["gw2_kept_e2_healthy"] = bool(samples) and all(s == 1.0 for s in samples)
    fleet.hosts.heal("gw1", "e2")
    ctx["cut"] = (cut_at, time.time())
    facts["gw1_readmitted_e2_s"] = wait_for(lambda: fleet.upstream_healthy("gw1", "e2") == 1.0,
                                            15)


def postgres(fleet, ctx, facts, phase_s):
    time.sleep(1)
    fleet.pg("pause", "immediate")
    down_at = time.time()
    time.sleep(0.5)
    ready = [json.loads(fleet.procs[g].get("/ready", timeout=5)[1])["database"]
             for g in ("gw1", "gw2")]
    facts["ready_database_while_down"] = ready
    time.sleep(max(0, phase_s / 2 - 1.5))
    spooled = sum(len(open(fleet.dir / f"spool-{g}.jsonl").read().splitlines())
                  for g in ("gw1", "gw2") if (fleet.dir / f"spool-{g}.jsonl").exists())
    facts["rows_spooled"] = spooled
    fleet.pg("resume")
    facts["down_s"] = round(time.time() - down_at, 3)


def database_link_cut(fleet, ctx, facts, phase_s):
    time.sleep(1)
    fleet.hosts.cut("gw1", "pg")
    cut_at = time.time()
    facts["gw1_database_unreachable_s"] = wait_for(
        lambda: json.loads(fleet.procs["gw1"].get("/ready", timeout=5)[1])["database"] ==
        "unreachable", 20, 0.2)
    facts["gw2_database"] = json.loads(fleet.procs["gw2"].get("/ready", timeout=5)[1])["database"]
    time.sleep(max(0, cut_at + phase_s / 2 - time.time()))
    spool = fleet.dir / "spool-gw1.jsonl"
    facts["gw1_rows_spooled"] = len(spool.read_text().splitlines()) if spool.exists() else 0
    fleet.hosts.heal("gw1", "pg")
    facts["cut_s"] = round(time.time() - cut_at, 3)
    facts["gw1_spool_written_after_heal_s"] = wait_for(
        lambda: not spool.exists() or not spool.read_text().strip(), 30, 0.2)


PHASES = [("baseline", None), ("gateway_kill", gateway_kill), ("late_gateway", late_gateway),
          ("rollout_apply", rollout_apply), ("rollback", rollback),
          ("engine_kill", engine_kill), ("engine_drain", engine_drain),
          ("partition", partition), ("postgres", postgres),
          ("database_link_cut", database_link_cut)]


# ---------------------------------------------------------------- the figures
def ledger_counts(fleet):
    rows = fleet.pg_rows("SELECT request_id, count(*) FROM brisk_ledger GROUP BY request_id")
    return {rid: int(n) for rid, n in rows}


def wait_spools_drained(fleet, timeout=60):
    def empty():
        for g in ("gw1", "gw2"):
            path = fleet.dir / f"spool-{g}.jsonl"
            if path.exists() and path.read_text().strip():
                return False
        return True
    return wait_for(empty, timeout, 0.2)


def summarize(records, phases, ledger, gateway_prefix):
    base = [r["ttft"] for r in records if r["phase"] == "baseline" and r["ttft"] is not None]
    base_p99 = p99(base)
    base_e2e = p99([r["t1"] - r["t0"] for r in records
                    if r["phase"] == "baseline" and r["outcome"] == "ok"])
    table = []
    for name, facts in phases:
        rs = [r for r in records if r["phase"] == name]
        killed_at = facts.get("killed_at")
        phase_t0 = facts["started_at"]
        allowed = [r for r in rs if r["outcome"] == "before_first_byte" and killed_at and
                   r["t0"] < killed_at <= r["t1"]]
        failed = [r for r in rs if r["outcome"] == "before_first_byte" and r not in allowed]
        ok = [r for r in rs if r["outcome"] == "ok"]
        ttft = p99([r["ttft"] for r in rs if r["ttft"] is not None])
        e2e = p99([r["t1"] - r["t0"] for r in ok])
        row = {
            "phase": name, "sent": len(rs), "ok": len(ok),
            "failed_before_first_byte": len(failed),
            "killed_gateways_in_flight": len(allowed),
            "cut_mid_stream": sum(r["outcome"] == "mid_stream" for r in rs),
            "refused_by_budget": sum(r["outcome"] == "refused_budget" for r in rs),
            "ledger_missing": sum(1 for r in ok if ledger.get(r["id"], 0) == 0),
            "ledger_doubled": sum(1 for r in ok if ledger.get(r["id"], 0) > 1),
            "ttft_p99_s": round(ttft, 3) if ttft else None,
            "ttft_p99_ratio": round(ttft / base_p99, 2) if ttft and base_p99 else None,
            "e2e_p99_s": round(e2e, 3) if e2e else None,
            "e2e_p99_ratio": round(e2e / base_e2e, 2) if e2e and base_e2e else None,
            "errors": sorted({r.get("error") for r in failed + allowed if r.get("error")}),
            # The three slowest first tokens, to see where a tail came from.
            "slowest": [{"ttft_s": round(r["ttft"], 3), "sent_s": round(r["t0"] - phase_t0, 3),
                         "id": r["id"], "upstream": r["upstream"]}
                        for r in sorted((r for r in rs if r["ttft"] is not None),
                                        key=lambda r: -r["ttft"])[:3]],
            "facts": {k: v for k, v in facts.items() if k not in ("killed_at", "started_at")},
        }
        if name == "partition":
            # gw2's requests that e2 answered while gw1 was cut from it (gw2 restarted as
            # the late gateway: its requests are those without gw1's id prefix).
            cut_from, cut_to = facts.get("cut_window", (0, 0))
            row["facts"]["gw2_requests_served_by_e2_during_cut"] = sum(
                1 for r in ok if cut_from <= r["t0"] <= cut_to and r["id"] and
                not r["id"].startswith(gateway_prefix["gw1"]) and r["upstream"] and
                r["upstream"].endswith(f"{facts['e2_addr']}:{ENGINE_PORT}"))
        table.append(row)
    return table, base_p99


def check(result):
    """The goals, as messages for each one missed."""
    missed = []
    for row in result["phases"]:
        if row["failed_before_first_byte"]:
            missed.append(f"{row['phase']}: {row['failed_before_first_byte']} requests failed "
                          f"before their first byte ({row['errors']})")
        if row["ledger_missing"] or row["ledger_doubled"]:
            missed.append(f"{row['phase']}: ledger rows missing {row['ledger_missing']}, "
                          f"doubled {row['ledger_doubled']}")
        f = row["facts"]
        if row["phase"] == "late_gateway":
            if f.get("rollout_stage_on_late") != "canary":
                missed.append(f"late gateway saw the rollout as {f.get('rollout_stage_on_late')}")
            if f.get("spend_seen_late", 0) <= 0:
                missed.append("late gateway saw no spend")
        if row["phase"] == "rollout_apply":
            for k in ("abort_via_gw2_applied_on_gw1_s", "start_via_gw1_applied_on_gw2_s"):
                if f.get(k) is None or f[k] > 1.0:
                    missed.append(f"{k}: {f.get(k)} (goal <= 1 s)")
        if row["phase"] == "rollback":
            applied = f.get("decision_to_applied_s") or {}
            if f.get("rollback_decisions") != 1 or len(applied) != 2 or \
                    max(applied.values()) > 2.0:
                missed.append(f"rollback: {f}")
        if row["phase"] == "database_link_cut":
            if f.get("gw1_database_unreachable_s") is None or f.get("gw2_database") != "ok" or \
                    f.get("gw1_spool_written_after_heal_s") is None:
                missed.append(f"database link cut: {f}")
        if row["phase"] == "partition":
            if f.get("gw1_ejected_e2_s") is None or not f.get("gw2_kept_e2_healthy") or \
                    not f.get("gw2_requests_served_by_e2_during_cut"):
                missed.append(f"partition: {f}")
    b = result["budget"]
    if b["overshoot_usd"] > b["bound_usd"] + 1e-12:
        missed.append(f"budget: spent {b['spent_usd']} over the limit {b['limit_usd']}")
    if result["spools_drained_s"] is None:
        missed.append("the spools did not drain")
    return missed


def markdown(result):
    lines = ["| fault | sent | failed before 1st byte | killed gw's in flight | cut mid-stream | "
             "ledger rows missing | TTFT p99 (ratio to baseline) | end to end p99 (ratio) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["phases"]:
        ratio = f"{r['ttft_p99_s']} s ({r['ttft_p99_ratio']}x)" if r["ttft_p99_s"] else "-"
        e2e = f"{r['e2e_p99_s']} s ({r['e2e_p99_ratio']}x)" if r["e2e_p99_s"] else "-"
        lines.append(f"| {r['phase']} | {r['sent']} | {r['failed_before_first_byte']} | "
                     f"{r['killed_gateways_in_flight']} | {r['cut_mid_stream']} | "
                     f"{r['ledger_missing']} | {ratio} | {e2e} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--phase-s", type=float, default=12)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--capped-limit-usd", type=float, default=60 * ESTIMATE)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "fleet_chaos.json"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if not namespaces_work():
        sys.exit("fleet_chaos: cannot make network namespaces (needs root and iproute2)")
    work = tempfile.mkdtemp(prefix="brisk-fleet-")
    t_setup = time.time()
    fleet = Fleet(args.brisk, work, args.capped_limit_usd)
    setup_s = time.time() - t_setup
    try:
        # gw1's request-id prefix (its instance), to tell whose request was whose.
        prefix = {}
        for g in ("gw1",):
            c = openai.OpenAI(base_url=fleet.gateway_url(g) + "/v1", api_key=KEYS["load"],
                              max_retries=0)
            raw = c.chat.completions.with_raw_response.create(
                model="small", messages=[{"role": "user", "content": "hi"}], max_tokens=1)
            prefix[g] = raw.headers["x-request-id"].rsplit("-", 1)[0] + "-"
        load = Load(fleet.lb_url, args.workers, 1)
        ctx, phases = {}, []
        for name, action in PHASES:
            facts = {}
            load.phase = name
            t0 = time.time()
            facts["started_at"] = t0
            if action:
                action(fleet, ctx, facts, args.phase_s)
            time.sleep(max(0, t0 + args.phase_s - time.time()))
            if name == "partition":
                facts["cut_window"] = ctx["cut"]
                facts["e2_addr"] = fleet.addr["e2"]
            phases.append((name, facts))
            print(f"{name}: {time.time() - t0:.1f} s {facts}", file=sys.stderr, flush=True)
        load.phase = "end"
        load.stop()
        drained = wait_spools_drained(fleet)
        ledger = ledger_counts(fleet)
        table, base_p99 = summarize(load.records, phases, ledger, prefix)
        for row in table:
            row["facts"].pop("cut_window", None)
            row["facts"].pop("e2_addr", None)
        spent = sum(float(c) for (c,) in fleet.pg_rows(
            "SELECT cost_usd FROM brisk_ledger WHERE api_key_name = 'capped'"))
        result = {
            "setup_s": round(setup_s, 1), "phase_s": args.phase_s, "workers": args.workers,
            "max_tokens": MAX_TOKENS, "baseline_ttft_p99_s": base_p99,
            "phases": table, "spools_drained_s": drained,
            "budget": {"limit_usd": args.capped_limit_usd, "spent_usd": round(spent, 9),
                       "overshoot_usd": round(max(0.0, spent - args.capped_limit_usd), 9),
                       "bound_usd": 0.0,
                       "admitted": sum(1 for r in load.records if r["key"] == "capped" and
                                       r["outcome"] != "refused_budget"),
                       "refused": sum(1 for r in load.records if r["key"] == "capped" and
                                      r["outcome"] == "refused_budget")},
        }
    except BaseException:
        for host in ("gw1", "gw2"):  # what the gateways said, for a failed run
            if host in fleet.procs:
                print(f"--- {host}:\n{fleet.procs[host].log_tail(20)}", file=sys.stderr)
        raise
    finally:
        fleet.close()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(markdown(result))
    print(json.dumps({k: v for k, v in result.items() if k != "phases"}, indent=1))
    for row in result["phases"]:
        print(row["phase"], json.dumps(row["facts"]))
    if args.check:
        missed = check(result)
        for m in missed:
            print("MISSED:", m, file=sys.stderr)
        sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
