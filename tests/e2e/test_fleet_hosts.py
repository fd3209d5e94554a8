"""The fleet on several hosts: bench/fleet_chaos.py with short phases and --check.
Hosts are network namespaces (tests/e2e/fleet.py: HAProxy, two gateways on one
PostgreSQL, two engines and a rollout candidate); real openai clients send through
the load balancer while a gateway is killed, a late one joins a running rollout, a
rollout is changed and rolled back on a breach, an engine is killed and another
drained, a gateway-engine link is cut and the database stops as a crash stops it.
The goals it checks: no request fails before its first byte but a killed gateway's
own, no completed request lacks its ledger row or has two, the budget never passes
its limit, rollout changes apply on every gateway within 1 s and rollbacks within
2 s of the decision, the cut gateway ejects the engine while the other keeps it.
Needs root (CI has it); skipped on a developer's machine that cannot make
namespaces, failed in CI."""
import json
import shutil
import subprocess
import sys

from conftest import skip_or_fail
from fleet import REPO
from fleet_hosts import namespaces_work
from gateway_util import pg_available


def test_fleet_survives_every_fault(brisk_bin, tmp_path):
    if not namespaces_work():
        skip_or_fail("network namespaces (root and iproute2)")
    for tool in ("haproxy", "nft"):
        if shutil.which(tool) is None:
            skip_or_fail(f"{tool} (Debian packages haproxy, nftables)")
    if not pg_available():
        skip_or_fail("PostgreSQL server binaries (Debian package postgresql)")
    out = tmp_path / "fleet_chaos.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "fleet_chaos.py"), "--brisk",
                        brisk_bin, "--phase-s", "5", "--out", str(out), "--check"],
                       capture_output=True, text=True, timeout=400)
    print(r.stdout)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr[-6000:]}"
    result = json.loads(out.read_text())
    assert [p["phase"] for p in result["phases"]] == [
        "baseline", "gateway_kill", "late_gateway", "rollout_apply", "rollback", "engine_kill",
        "engine_drain", "partition", "postgres", "database_link_cut"]
    pg = next(p for p in result["phases"] if p["phase"] == "postgres")
    assert pg["facts"]["rows_spooled"] > 0  # the outage was real: rows waited in the spools
    assert result["budget"]["refused"] > 0  # and the limit was reached
