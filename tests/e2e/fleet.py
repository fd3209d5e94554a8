"""The fleet that bench/fleet_chaos.py and tests/e2e/test_fleet_hosts.py break, on
namespace hosts (fleet_hosts.py), one process per host as one pod per node:

  lb        HAProxy (Debian's), standing where a Kubernetes Service stands in front of
            gateway pods: health checks on the gateways' /ready, leastconn, and a
            connection that is refused is retried on the other gateway
  gw1, gw2  `brisk gateway`, both on one PostgreSQL (ledger, budgets, rollouts, stored
            responses), each with its own spool file
  e1, e2    `brisk serve` of SmolLM2-135M: tier "small"'s replicas
  e3        the same file with --serving-key: the rollout candidate, behind the tests'
            fault proxy (on the client host) so it can be made to regress
  pg        PostgreSQL (scripts/pg_test_server.sh)

Prices are output-only and every request caps its output, so a request's budget
estimate is at least its cost: the budget's stated bound (spend passes a limit only by
the sum of cost - estimate of the requests admitted) is then 0."""
import json
import os
import pathlib
import subprocess
import time
import urllib.error
import urllib.request

from fault_proxy import FaultProxy
from fleet_hosts import Hosts

REPO = pathlib.Path(__file__).resolve().parents[2]
SMOL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
FACTS = REPO / "bench" / "golden" / "facts_completion.jsonl"
HOSTS = ["lb", "gw1", "gw2", "e1", "e2", "e3", "pg"]
ENGINES = ["e1", "e2"]
GATEWAYS = ["gw1", "gw2"]
ENGINE_PORT, GATEWAY_PORT, LB_PORT, PG_PORT = 8000, 8080, 8000, 5432
ADMIN = "fleet-admin-key"
OUTPUT_PRICE = 100.0  # $ per million output tokens, nothing else priced
KEYS = {"load": "sk-fleet-load", "capped": "sk-fleet-capped"}


def http_json(url, method="GET", body=None, headers=None, timeout=10):
    """(status, parsed body or None) of one request; an HTTP error status is returned."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"null")
        except ValueError:
            return e.code, None


HAPROXY = """global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 300s
  timeout server 300s
  timeout http-request 10s
  retries 3
  option redispatch 1
  # Refused or reset before a response: nothing ran there, so it is safe to send
  # the request to the other gateway (a body needs buffering to be re-sent).
  retry-on conn-failure
  option http-buffer-request
frontend api
  bind {lb}:{lb_port}
  default_backend gateways
backend gateways
  balance leastconn
  option httpchk GET /ready
  http-check expect status 200
  default-server inter 500ms fastinter 200ms downinter 500ms fall 2 rise 2
{servers}
"""


class Fleet:
    def __init__(self, brisk, workdir, capped_daily_usd, subnet="10.77.0", tag="bfl"):
        self.brisk, self.dir = str(brisk), pathlib.Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hosts = Hosts(HOSTS, subnet, tag)
        self.addr = self.hosts.addr
        self.procs = {}
        self.proxy = None
        try:
            self.pg_url = self._start_postgres()
            for e in ENGINES + ["e3"]:
                self.start_engine(e)
            self.proxy = FaultProxy(ENGINE_PORT, upstream_host=self.addr["e3"],
                                    host=f"{subnet}.1")
            self.gate_report = self._gate_report()
            self.config = self._write_gateway_config(capped_daily_usd)
            for g in GATEWAYS:
                self.start_gateway(g)
            self._start_lb()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ hosts' processes
    def _start_postgres(self):
        env = {**os.environ, "PG_LISTEN": self.addr["pg"]}
        out = self.hosts.run("pg", ["bash", REPO / "scripts" / "pg_test_server.sh", "start",
                                    self.dir / "pg", PG_PORT], env=env)
        return out.stdout.strip().splitlines()[-1]

    def pg(self, action, mode="immediate"):
        """pause (stopped as `mode` stops it, data kept) or resume the database host's server."""
        args = [mode] if action == "pause" else [PG_PORT]
        self.hosts.run("pg", ["bash", REPO / "scripts" / "pg_test_server.sh", action,
                              self.dir / "pg", *args])

    def pg_rows(self, sql):
        out = subprocess.run(["psql", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", self.pg_url,
                              "-c", sql], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr}")
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def start_engine(self, host):
        cmd = [self.brisk, "serve", "--model", SMOL, "--model-name", "smol", "--host", "0.0.0.0",
               "--port", ENGINE_PORT, "--threads", "1", "--kv-cache", "64MiB",
               "--gate-dir", self.dir / "gates"]
        if host == "e3":
            cmd.append("--serving-key")
        self.procs[host] = self.hosts.start(host, cmd, ENGINE_PORT, name=f"engine {host}",
                                            ready_path="/health")
        return self.procs[host]

    def _gate_report(self):
        """The candidate's golden-set gate report (four facts; it is its own reference)."""
        gates = self.dir / "gates"
        golden = self.dir / "facts.jsonl"
        golden.write_text("\n".join(FACTS.read_text().splitlines()[:4]) + "\n")
        (self.dir / "facts.gate.yaml").write_text("min_pass_rate: 0.0\nmax_kld: 0.05\n")
        r = subprocess.run([self.brisk, "eval", "golden", "--set", golden, "--url",
                            self.proxy.url, "--save-gate", gates],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"brisk eval golden failed: {r.stderr}")
        [report] = gates.glob("*-native-kvf16-*.json")
        return report

    def _write_gateway_config(self, capped_daily_usd):
        upstreams = ", ".join(f"http://{self.addr[e]}:{ENGINE_PORT}" for e in ENGINES)
        path = self.dir / "gateway.yaml"
        path.write_text(
            f"server: {{port: {GATEWAY_PORT}, http_threads: 2}}\n"
            "replicas: {health_interval_s: 0.2, eject_s: 1, connect_timeout_s: 0.5}\n"
            "tiers:\n"
            "  - name: small\n"
            f"    prices: {{input: 0, cached_input: 0, output: {OUTPUT_PRICE}}}\n"
            f"    upstreams: [{upstreams}]\n"
            "keys:\n"
            f"  - {{key: {KEYS['load']}, tenant: acme, name: load}}\n"
            f"  - {{key: {KEYS['capped']}, tenant: acme, name: capped}}\n"
            "budgets:\n"
            f"  limits:\n    - {{key: capped, daily_usd: {capped_daily_usd}}}\n"
            "  on_store_outage: refuse\n"
            f"rollout: {{admin_key: {ADMIN}, tick_s: 0.1}}\n"
            f"ledger: {{url: '{self.pg_url}', gateways: {len(GATEWAYS)}}}\n")
        return path

    def start_gateway(self, host):
        """Its own spool file (its own disk, as a pod's volume is)."""
        spool = self.dir / f"spool-{host}.jsonl"
        cfg = self.dir / f"gateway-{host}.yaml"
        cfg.write_text(self.config.read_text().replace(
            f"gateways: {len(GATEWAYS)}}}", f"gateways: {len(GATEWAYS)}, spool_path: {spool}}}"))
        cmd = [self.brisk, "gateway", "--config", cfg, "--host", self.addr[host]]
        self.procs[host] = self.hosts.start(host, cmd, GATEWAY_PORT, name=f"gateway {host}",
                                            ready_path="/ready")
        return self.procs[host]

    def _start_lb(self):
        servers = "\n".join(f"  server {g} {self.addr[g]}:{GATEWAY_PORT} check" for g in GATEWAYS)
        cfg = self.dir / "haproxy.cfg"
        cfg.write_text(HAPROXY.format(lb=self.addr["lb"], lb_port=LB_PORT, servers=servers))
        self.procs["lb"] = self.hosts.start("lb", ["haproxy", "-db", "-f", cfg], LB_PORT,
                                            name="haproxy")
        self.lb_url = f"http://{self.addr['lb']}:{LB_PORT}"
        # Until HAProxy's checks see both gateways up.
        deadline = time.time() + 20
        while time.time() < deadline:
            if all(self.gateway_ready(g) for g in GATEWAYS):
                break
            time.sleep(0.2)
        time.sleep(1.2)  # rise 2 at inter 500 ms

    # ------------------------------------------------------------ reading the fleet
    def gateway_url(self, host):
        return f"http://{self.addr[host]}:{GATEWAY_PORT}"

    def gateway_ready(self, host):
        try:
            return http_json(self.gateway_url(host) + "/ready", timeout=2)[0] == 200
        except OSError:
            return False

    def rollouts(self, host):
        status, body = http_json(self.gateway_url(host) + "/admin/rollouts",
                                 headers={"Authorization": f"Bearer {ADMIN}"}, timeout=5)
        if status != 200:
            raise RuntimeError(f"/admin/rollouts on {host}: {status} {body}")
        return {r["id"]: r for r in body["data"]}

    def audit(self, host):
        status, body = http_json(self.gateway_url(host) + "/admin/audit",
                                 headers={"Authorization": f"Bearer {ADMIN}"}, timeout=5)
        if status != 200:
            raise RuntimeError(f"/admin/audit on {host}: {status} {body}")
        return body["data"]

    def budget(self, host):
        status, body = http_json(self.gateway_url(host) + "/v1/budgets",
                                 headers={"Authorization": f"Bearer {KEYS['capped']}"}, timeout=5)
        if status != 200:
            raise RuntimeError(f"/v1/budgets on {host}: {status} {body}")
        return body["data"][0]["daily"]

    def upstream_healthy(self, gateway, engine):
        """brisk_gateway_upstream_healthy of `engine` as `gateway` sees it."""
        _, text = self.procs[gateway].get("/metrics", timeout=5)
        where = f"{self.addr[engine]}:{ENGINE_PORT}"
        for line in text.splitlines():
            if line.startswith("brisk_gateway_upstream_healthy{") and where in line:
                return float(line.rsplit(" ", 1)[1])
        return None

    def rollout(self, host, *args):
        r = subprocess.run([self.brisk, "rollout", *args, "--gateway", self.gateway_url(host),
                            "--admin-key", ADMIN, "--json"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"brisk rollout {' '.join(args)} on {host}: {r.stderr}")
        return json.loads(r.stdout)

    def start_rollout(self, host, threshold_args):
        return self.rollout(host, "start", "--tier", "small", "--upstream", self.proxy.url,
                            "--gate-report", str(self.gate_report), "--shadow", "0:0:0",
                            "--canary", "0.5:600", *threshold_args)

    def close(self):
        if self.proxy is not None:
            self.proxy.stop()
        try:
            self.hosts.run("pg", ["bash", REPO / "scripts" / "pg_test_server.sh", "stop",
                                  self.dir / "pg"], check=False)
        finally:
            self.hosts.close()
