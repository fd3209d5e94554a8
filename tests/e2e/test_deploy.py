"""deploy/: the Kubernetes manifests render for three tiers, validate against
the Kubernetes schemas (kubernetes-validate, pinned version) and a KEDA
ScaledObject schema, their embedded configs start the real binaries, and every
metric the dashboard and the KEDA triggers query is one a real `brisk serve`
and `brisk gateway` export on /metrics."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import jsonschema
import pytest
import yaml

from conftest import MODEL_ID, BriskServer, skip_or_fail
from gateway_util import (Postgres, pg_available, start_engine, start_gateway, wait_models_known,
                          write_gateway_config)
from server_process import ServerProcess, free_port

REPO = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
sys.path.insert(0, str(DEPLOY))
import render  # noqa: E402  (deploy/render.py)

# The oldest Kubernetes the manifests support (preStop `sleep`); the schemas
# come with the pinned kubernetes-validate in requirements-test.txt.
KUBERNETES_VERSION = render.MIN_KUBERNETES
TIERS = ("small", "medium", "large")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The CLI's output for deploy/values.yaml (three tiers): {file: [docs]}."""
    out = tmp_path_factory.mktemp("manifests")
    subprocess.run([sys.executable, str(DEPLOY / "render.py"), "-f", str(DEPLOY / "values.yaml"),
                    "-o", str(out)], check=True, capture_output=True, timeout=60)
    files = {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
             for p in sorted(out.glob("*.yaml"))}
    assert [t["name"] for t in yaml.safe_load((DEPLOY / "values.yaml").read_text())["tiers"]] \
        == list(TIERS)
    return files


def docs_of(rendered, kind):
    return [d for docs in rendered.values() for d in docs if d["kind"] == kind]


def by_name(rendered, kind, name):
    found = [d for d in docs_of(rendered, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def scaledobject_validator():
    schema = json.loads((DEPLOY / "schemas" / "scaledobject.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_manifests_validate(rendered):
    kv = pytest.importorskip("kubernetes_validate.utils")
    so = scaledobject_validator()
    kinds = []
    for name, docs in rendered.items():
        for d in docs:
            kinds.append(d["kind"])
            if d["kind"] == "ScaledObject":
                so.validate(d)
            else:
                # strict: unknown fields are errors, so a typo cannot pass.
                kv.validate(d, KUBERNETES_VERSION, strict=True)
    for kind, n in (("Deployment", 4), ("Service", 4), ("PodDisruptionBudget", 4),
                    ("ScaledObject", 3), ("ConfigMap", 2), ("Namespace", 1)):
        assert kinds.count(kind) == n, (kind, kinds)
    # The validators bite: a misspelt field and a numeric KEDA threshold fail.
    bad = json.loads(json.dumps(by_name(rendered, "Deployment", "brisk-gateway")))
    bad["spec"]["replica"] = 2
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, KUBERNETES_VERSION, strict=True)
    bad = json.loads(json.dumps(docs_of(rendered, "ScaledObject")[0]))
    bad["spec"]["triggers"][0]["metadata"]["threshold"] = 8
    assert not so.is_valid(bad)


def test_pools_probes_and_drain(rendered):
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    services = {s["metadata"]["name"]: s for s in docs_of(rendered, "Service")}
    for name in ["brisk-gateway"] + [f"brisk-engine-{t}" for t in TIERS]:
        dep = by_name(rendered, "Deployment", name)
        pod = dep["spec"]["template"]
        labels = pod["metadata"]["labels"]
        # Service and PDB select exactly this Deployment's pods.
        assert services[name]["spec"]["selector"] == labels
        assert by_name(rendered, "PodDisruptionBudget", name)["spec"]["selector"][
            "matchLabels"] == labels
        c = pod["spec"]["containers"][0]
        assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
        assert c["livenessProbe"]["httpGet"]["path"] == "/health"
        assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
        comp = values["gateway"] if name == "brisk-gateway" else values["engine"]
        sleep_s = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        # SIGKILL only after preStop and the whole drain grace.
        assert pod["spec"]["terminationGracePeriodSeconds"] > sleep_s + comp["drainGraceSeconds"]
    gw = by_name(rendered, "Deployment", "brisk-gateway")["spec"]["template"]["spec"]
    args = gw["containers"][0]["args"]
    assert args[args.index("--drain-grace") + 1] == str(values["gateway"]["drainGraceSeconds"])
    engine_cfg = yaml.safe_load(by_name(rendered, "ConfigMap", "brisk-engine")["data"][
        "inference.yaml"])
    assert engine_cfg["server"]["drain_grace_s"] == values["engine"]["drainGraceSeconds"]
    # The gateway's tiers point at the engine Services, on their ports.
    gcfg = yaml.safe_load(by_name(rendered, "ConfigMap", "brisk-gateway")["data"]["gateway.yaml"])
    assert [t["name"] for t in gcfg["tiers"]] == list(TIERS)
    for t in gcfg["tiers"]:
        m = re.fullmatch(r"http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc:(\d+)", t["upstreams"][0])
        svc = services[m.group(1)]
        assert m.group(2) == svc["metadata"]["namespace"]
        assert int(m.group(3)) == svc["spec"]["ports"][0]["port"]
    for so in docs_of(rendered, "ScaledObject"):
        assert so["spec"]["scaleTargetRef"]["name"] in services
        assert {t["name"] for t in so["spec"]["triggers"]} == {
            "queue-depth", "ttft-p95", "desired-replicas"}


def test_rendered_configs_start_the_binaries(rendered, brisk_bin, default_model, tmp_path):
    """The ConfigMaps' files are what the real binaries read: the engine
    serves with inference.yaml and drains on SIGTERM as documented (/ready
    503, the running stream finishes); the gateway starts on gateway.yaml."""
    inf = tmp_path / "inference.yaml"
    inf.write_text(by_name(rendered, "ConfigMap", "brisk-engine")["data"]["inference.yaml"])
    s = BriskServer(brisk_bin, args=["--config", str(inf), "--host", "127.0.0.1"])
    try:
        assert s.get("/ready")[0] == 200
        got = {}

        def stream():
            chunks = s.client().chat.completions.create(
                model=MODEL_ID, messages=[{"role": "user", "content": "Count to fifty."}],
                max_tokens=120, stream=True, extra_body={"ignore_eos": True})
            for ch in chunks:
                if ch.choices and ch.choices[0].finish_reason:
                    got["finish"] = ch.choices[0].finish_reason
        t = threading.Thread(target=stream)
        t.start()
        deadline = time.time() + 30
        while s.metric("brisk:num_requests_running") in (None, 0.0) and time.time() < deadline:
            time.sleep(0.02)
        s.proc.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        while s.get("/ready")[0] != 503 and time.time() < deadline:
            time.sleep(0.05)
        assert s.get("/ready")[0] == 503
        t.join(60)
        assert got.get("finish") == "length", got
        assert s.proc.wait(timeout=60) == 0
    finally:
        s.stop(signal.SIGKILL)

    # The gateway's replicas share PostgreSQL: its URL arrives from the Secret as
    # BRISK_LEDGER_URL. Two of them start on the rendered file.
    gcfg = tmp_path / "gateway.yaml"
    text = by_name(rendered, "ConfigMap", "brisk-gateway")["data"]["gateway.yaml"]
    gcfg.write_text(text.replace("/var/lib/brisk/", f"{tmp_path}/")
                    .replace("port: 8080", "port: 0"))  # two on one host
    assert "port: 0" in gcfg.read_text()
    if not pg_available():
        skip_or_fail("PostgreSQL server binaries (Debian package postgresql)")
    pg = Postgres(tmp_path)
    env = {**os.environ, "BRISK_LEDGER_URL": pg.url}
    gws = []
    try:
        gws = [start_gateway(brisk_bin, gcfg, None, env=env) for _ in range(2)]
        assert all(g.get("/health")[0] == 200 for g in gws)
        # Told it has peers, a gateway refuses a SQLite ledger and says why.
        out = subprocess.run([brisk_bin, "gateway", "--config", str(gcfg), "--ledger",
                              str(tmp_path / "l.db")], capture_output=True, text=True,
                             timeout=60, env=env)
        assert out.returncode != 0 and "postgresql://" in out.stderr, out.stderr
    finally:
        for g in gws:
            g.stop()
        pg.stop()


def test_gateway_replicas_share_postgres_and_spread(rendered, tmp_path):
    dep = by_name(rendered, "Deployment", "brisk-gateway")
    spec = dep["spec"]["template"]["spec"]
    env = spec["containers"][0]["env"]
    assert env[0]["name"] == "BRISK_LEDGER_URL" and "secretKeyRef" in env[0]["valueFrom"]
    assert {c["topologyKey"] for c in spec["topologySpreadConstraints"]} == {
        "kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert by_name(rendered, "PodDisruptionBudget", "brisk-gateway")["spec"]["maxUnavailable"] == 1
    # SQLite for more than one replica is refused at render time.
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    del values["gateway"]["ledgerSecret"]
    values["gateway"]["ledgerUrl"] = "sqlite:///var/lib/brisk/ledger.db"
    p = tmp_path / "values.yaml"
    p.write_text(yaml.safe_dump(values))
    out = subprocess.run([sys.executable, str(DEPLOY / "render.py"), "-f", str(p), "-o",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "postgresql://" in out.stderr, out.stderr
    values["gateway"]["replicas"] = 1  # one pod may keep its SQLite file
    p.write_text(yaml.safe_dump(values))
    assert subprocess.run([sys.executable, str(DEPLOY / "render.py"), "-f", str(p), "-o",
                           str(tmp_path / "out1")], capture_output=True, timeout=60).returncode == 0


PROMQL_FUNCS = {"sum", "rate", "increase", "histogram_quantile", "max", "avg", "count", "ceil",
                "by", "without", "le"}


def promql_exprs(rendered):
    """(where, expr) for every query of the dashboard and the KEDA triggers."""
    out = []
    dash = json.loads((DEPLOY / "grafana" / "brisk.json").read_text())
    assert dash["panels"], "dashboard has no panels"
    for p in dash["panels"]:
        for t in p["targets"]:
            out.append((f"dashboard '{p['title']}'", t["expr"]))
    for so in docs_of(rendered, "ScaledObject"):
        for t in so["spec"]["triggers"]:
            out.append((f"{so['metadata']['name']} {t['name']}", t["metadata"]["query"]))
    return out


def metric_names(expr):
    """Metric names in a PromQL expression: identifiers outside quoted label
    values that are neither functions nor keywords nor label names."""
    bare = re.sub(r'"[^"]*"', '""', expr)
    bare = re.sub(r"\{[^}]*\}", "{}", bare)          # label matchers
    bare = re.sub(r"\b(by|without)\s*\([^)]*\)", "", bare)  # grouping labels
    bare = re.sub(r"\[[^\]]*\]", "", bare)            # ranges
    names = set()
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)\s*(\()?", bare):
        if m.group(2) is None and m.group(1) not in PROMQL_FUNCS:
            names.add(m.group(1))
    return names


def exported(text):
    """{family name: type} from a /metrics page, plus every sample's name."""
    families = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            families[m.group(1)] = m.group(2)
        elif line and not line.startswith("#"):
            families.setdefault(re.match(r"[^{\s]+", line).group(0), "sample")
    return families


def is_exported(name, families):
    if name in families:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and families.get(base) == "histogram":
            return True
    return False


@pytest.fixture(scope="module")
def stack(brisk_bin, default_model, tmp_path_factory):
    """A real engine (tier small) behind a real gateway, after one request."""
    tmp = tmp_path_factory.mktemp("stack")
    engine = start_engine(brisk_bin, default_model, "smol", threads=2)
    gw = None
    try:
        cfg = write_gateway_config(tmp / "gateway.yaml",
                                   [("small", [engine.url], (0.05, 0.01, 0.2))])
        gw = start_gateway(brisk_bin, cfg, tmp / "ledger.db")
        wait_models_known(gw, 1)
        yield engine, gw
    finally:
        if gw:
            gw.stop()
        engine.stop()


def chat_through(gw):
    import openai
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="none", max_retries=0,
                           default_headers={"X-Feature": "summarize"})
    for _ in client.chat.completions.create(
            model="small", messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
            stream=True):
        pass


def test_queried_metrics_are_exported(rendered, stack):
    engine, gw = stack
    # One streamed request gives the labelled series (by tier, by feature,
    # TTFT/TPOT histograms) their first samples.
    chat_through(gw)
    families = exported(engine.get("/metrics")[1])
    families.update(exported(gw.get("/metrics")[1]))
    assert families.get("brisk:desired_replicas") == "gauge"
    exprs = promql_exprs(rendered)
    assert len(exprs) > 20
    seen = set()
    for where, expr in exprs:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        for n in names:
            assert is_exported(n, families), f"{where}: {n} is not on /metrics ({expr})"
        seen |= names
    # The signals the seeds ask for are all there.
    for n in ("brisk:time_to_first_token_seconds_bucket", "brisk:num_requests_waiting",
              "brisk:desired_replicas", "brisk:kv_cache_usage_perc",
              "brisk:num_requests_running", "brisk_gateway_cost_usd_total",
              "brisk_gateway_requests_total", "brisk:generation_tokens_total"):
        assert n in seen, n


def test_selector_labels_come_from_prometheus_yml(rendered):
    """Labels the queries select on that /metrics does not carry (namespace,
    tier on engine series) are the ones deploy/prometheus.yml attaches."""
    cfg = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    targets = {r["target_label"] for job in cfg["scrape_configs"]
               for r in job.get("relabel_configs", []) if "target_label" in r}
    assert {"namespace", "tier", "pod"} <= targets
    for where, expr in promql_exprs(rendered):
        for matcher in re.findall(r"\{([^}]*)\}", expr):
            for label in re.findall(r"(\w+)\s*(?:=~|!=|!~|=)", matcher):
                assert label in targets | {"outcome", "feature"}, (where, label)


def tool(env, name):
    path = os.environ.get(env) or shutil.which(name) or f"/usr/bin/{name}"
    if not os.access(path, os.X_OK):
        skip_or_fail(f"{name} not installed (apt-get install prometheus, see scripts/setup.sh)")
    return path


def as_static(port, labels, interval="1s"):
    """deploy/prometheus.yml with its pod discovery replaced by one static
    target carrying the __meta_kubernetes_* labels discovery would give a
    Brisk pod (Debian's Prometheus is built without Kubernetes discovery; the
    relabelling is what we test)."""
    cfg = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    cfg["global"].update(scrape_interval=interval, evaluation_interval=interval)
    job = cfg["scrape_configs"][0]
    del job["kubernetes_sd_configs"]
    job["scrape_timeout"] = interval
    job["static_configs"] = [
        {"targets": [f"127.0.0.1:{p}"], "labels": {
            "__meta_kubernetes_namespace": "brisk", "__meta_kubernetes_pod_name": f"pod-{p}",
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "brisk",
            "__meta_kubernetes_pod_container_port_name": "http",
            "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
            "__meta_kubernetes_pod_annotation_prometheus_io_port": str(p),
            "__meta_kubernetes_pod_annotation_prometheus_io_path": "/metrics", **extra}}
        for p, extra in zip(port, labels)]
    return cfg


def test_promtool_accepts_config_and_queries(rendered, tmp_path):
    promtool = tool("PROMTOOL_BIN", "promtool")
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(as_static([9], [{}], interval="15s")))
    out = subprocess.run([promtool, "check", "config", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    # Every query as a recording rule: promtool parses the PromQL.
    rules = [{"record": f"brisk:check_{i}", "expr": expr.replace("$namespace", "brisk")}
             for i, (_, expr) in enumerate(promql_exprs(rendered))]
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "brisk", "rules": rules}]}))
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def prom_query(base, expr):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def test_keda_queries_answer_on_real_prometheus(rendered, stack, tmp_path):
    """A real Prometheus with deploy/prometheus.yml's relabelling scrapes the
    real engine and gateway; the small tier's KEDA queries each return one
    number, so the namespace and tier labels line up."""
    prometheus = tool("PROMETHEUS_BIN", "prometheus")
    engine, gw = stack
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(yaml.safe_dump(as_static(
        [engine.port, gw.port],
        [{"__meta_kubernetes_pod_label_app_kubernetes_io_component": "engine",
          "__meta_kubernetes_pod_label_tier": "small"},
         {"__meta_kubernetes_pod_label_app_kubernetes_io_component": "gateway"}])))
    port = free_port()
    prom = ServerProcess(
        [prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], port=port, ready_path="/-/ready", timeout=60)
    small = by_name(rendered, "ScaledObject", "brisk-engine-small")
    triggers = {t["name"]: t["metadata"]["query"] for t in small["spec"]["triggers"]}
    try:
        deadline = time.time() + 60
        answered = {}
        while time.time() < deadline and len(answered) < len(triggers):
            assert prom.alive(), prom.log_tail()
            chat_through(gw)  # TTFT observations between scrapes give rate() a slope
            try:
                for name, q in triggers.items():
                    r = prom_query(prom.url, q)
                    if len(r) == 1 and r[0]["value"][1] not in ("NaN", "+Inf"):
                        answered[name] = float(r[0]["value"][1])
            except OSError:
                pass
            time.sleep(1)
        assert set(answered) == set(triggers), (answered, prom.log_tail())
        assert answered["queue-depth"] >= 0 and answered["desired-replicas"] >= 0
        assert answered["ttft-p95"] > 0
        # The gateway's series arrive too, without a tier target label of
        # their own (their tier label is the gateway's).
        assert prom_query(prom.url, 'brisk_gateway_requests_total{namespace="brisk",tier="small"}')
    finally:
        prom.stop(signal.SIGKILL)


def test_render_refuses_a_model_without_a_volume(tmp_path):
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    values["models"] = {}
    p = tmp_path / "values.yaml"
    p.write_text(yaml.safe_dump(values))
    out = subprocess.run([sys.executable, str(DEPLOY / "render.py"), "-f", str(p), "-o",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "claimName" in out.stderr
    # Without any model files every tier serves the image's embedded model.
    for t in values["tiers"]:
        t["model"] = ""
    files = render.render(values)
    for t in TIERS:
        dep = files[f"30-engine-{t}.yaml"][0]
        assert "--model" not in dep["spec"]["template"]["spec"]["containers"][0]["args"]
