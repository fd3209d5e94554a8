#!/usr/bin/env python3
"""Renders Brisk's Kubernetes manifests from deploy/values.yaml.

    python3 deploy/render.py -f deploy/values.yaml -o out/
    kubectl apply -f out/

Writes plain manifests (no Helm, no templating language): the namespace, the
gateway (ConfigMap with its gateway.yaml, Deployment, Service,
PodDisruptionBudget), one engine pool per tier (Deployment of `brisk serve`,
Service, PodDisruptionBudget; a shared ConfigMap with inference.yaml) and a
KEDA ScaledObject per tier. Needs PyYAML (requirements-test.txt).

Shutdown, as the binaries do it (src/cli/serve.cc, src/cli/gateway.cc): on
SIGTERM `brisk serve` turns /ready to 503, answers new requests 503 and gives
running ones server.drain_grace_s; `brisk gateway` stops accepting, gives
in-flight requests --drain-grace seconds and flushes its ledger. A second
signal stops either at once. Kubernetes removes a terminating pod from its
Service's endpoints at the same time as it runs preStop, so preStop sleeps
first (new connections still arrive for a moment); then SIGTERM starts the
drain. terminationGracePeriodSeconds = preStop sleep + drain grace + 10 s, so
the kubelet's SIGKILL comes only after the drain has had its full time.
"""
import argparse
import hashlib
import pathlib
import sys

import yaml

APP = "brisk"
# Kubernetes 1.30 is the oldest version with the preStop `sleep` action
# (no shell needed in the image); tests validate against it.
MIN_KUBERNETES = "1.30"


def labels(component, tier=None):
    out = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": component}
    if tier:
        out["tier"] = tier
    return out


def meta(name, ns, lbls, annotations=None):
    m = {"name": name, "namespace": ns, "labels": lbls}
    if annotations:
        m["annotations"] = annotations
    return m


def engine_name(tier):
    return f"brisk-engine-{tier['name']}"


def scrape_annotations(port):
    # Read by deploy/prometheus.yml's pod discovery (the common
    # prometheus.io/* convention, no Prometheus Operator needed).
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
            "prometheus.io/path": "/metrics"}


def probes(port, startup_s):
    def get(path, period, failures):
        return {"httpGet": {"path": path, "port": "http"}, "periodSeconds": period,
                "failureThreshold": failures, "timeoutSeconds": 2}
    # The HTTP port opens only after the model is loaded: the startup probe
    # holds liveness off until then.
    startup = get("/health", 5, max(1, startup_s // 5))
    return {"startupProbe": startup, "readinessProbe": get("/ready", 2, 2),
            "livenessProbe": get("/health", 10, 3)}


def grace(component):
    return component["preStopSleepSeconds"] + component["drainGraceSeconds"] + 10


def checksum(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pdb(name, ns, lbls):
    # One pod of a pool may be evicted at a time (node drains, upgrades).
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": meta(name, ns, lbls),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": lbls}}}


def service(name, ns, lbls, port):
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, ns, lbls),
            "spec": {"selector": lbls,
                     "ports": [{"name": "http", "port": port, "targetPort": "http"}]}}


def configmap(name, ns, lbls, key, text):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, ns, lbls),
            "data": {key: text}}


def deployment(name, ns, lbls, container, pod_annotations, volumes, grace_s, replicas=None):
    spec = {"selector": {"matchLabels": lbls},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": lbls, "annotations": pod_annotations},
                         "spec": {"terminationGracePeriodSeconds": grace_s,
                                  "containers": [container], "volumes": volumes}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, ns, lbls),
            "spec": spec}


def container(name, v, args, port, component, resources, mounts):
    c = {"name": name, "image": v["image"],
         "imagePullPolicy": v.get("imagePullPolicy", "IfNotPresent"),
         "command": ["brisk"], "args": args,
         "ports": [{"name": "http", "containerPort": port}],
         "lifecycle": {"preStop": {"sleep": {"seconds": component["preStopSleepSeconds"]}}},
         "resources": resources, "volumeMounts": mounts}
    c.update(probes(port, component.get("startupSeconds", 60)))
    return c


class _Dumper(yaml.SafeDumper):
    # Shared label dicts would otherwise come out as &id001 anchors.
    def ignore_aliases(self, data):
        return True


def _str(dumper, s):
    # Embedded config files read best as literal blocks.
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)


def to_yaml(obj):
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)


def ledger_config(g):
    """gateway.yaml's ledger: the Secret's URL (an environment variable) for any number of
    replicas, or a SQLite URL for one."""
    if g.get("ledgerSecret"):
        return {"url_env": "BRISK_LEDGER_URL", "gateways": g["replicas"],
                "spool_path": "/var/lib/brisk/ledger.spool.jsonl"}
    url = g.get("ledgerUrl", "")
    if not url:
        sys.exit("gateway: set ledgerSecret (a postgresql:// URL in a Secret) or ledgerUrl")
    if g["replicas"] > 1 and not url.startswith("postgres"):
        sys.exit(f"gateway: {g['replicas']} replicas share budgets, rollouts and stored "
                 f"responses through PostgreSQL; ledgerUrl '{url}' is not postgresql:// "
                 "(use ledgerSecret)")
    return {"url": url, "gateways": g["replicas"]}


def gateway_yaml(v):
    ns, eng = v["namespace"], v["engine"]
    doc = {"server": {"host": "0.0.0.0", "port": v["gateway"]["port"]},
           "tiers": [{"name": t["name"],
                      "prices": t["prices"],
                      # The tier's Service: kube-proxy spreads connections over
                      # its ready pods (those not draining).
                      "upstreams": [f"http://{engine_name(t)}.{ns}.svc:{eng['port']}"]}
                     for t in v["tiers"]],
           "ledger": ledger_config(v["gateway"]),
           "logging": {"level": "info", "format": "json"}}
    return to_yaml(doc)


def inference_yaml(v):
    eng = v["engine"]
    return to_yaml({"server": {"host": "0.0.0.0", "port": eng["port"],
                               "drain_grace_s": eng["drainGraceSeconds"]},
                    "logging": {"level": "info", "format": "json"}})


def render_gateway(v):
    ns, g = v["namespace"], v["gateway"]
    name, lbls = "brisk-gateway", labels("gateway")
    text = gateway_yaml(v)
    args = ["gateway", "--config", "/etc/brisk/gateway.yaml",
            "--drain-grace", str(g["drainGraceSeconds"])]
    c = container("gateway", v, args, g["port"], g, g["resources"],
                  [{"name": "config", "mountPath": "/etc/brisk", "readOnly": True},
                   {"name": "ledger", "mountPath": "/var/lib/brisk"}])
    if g.get("ledgerSecret"):
        c["env"] = [{"name": "BRISK_LEDGER_URL", "valueFrom": {"secretKeyRef": {
            "name": g["ledgerSecret"]["name"], "key": g["ledgerSecret"]["key"]}}}]
    vols = [{"name": "config", "configMap": {"name": name}},
            {"name": "ledger", "emptyDir": {}}]  # SQLite (one replica) or the ledger's spool
    ann = {**scrape_annotations(g["port"]), "brisk/config-checksum": checksum(text)}
    dep = deployment(name, ns, lbls, c, ann, vols, grace(g), replicas=g["replicas"])
    # Gateway pods on different nodes (and zones) where the cluster can: losing a node
    # loses one gateway, not the front door.
    dep["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": lbls}}
        for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")]
    return [configmap(name, ns, lbls, "gateway.yaml", text),
            dep,
            service(name, ns, lbls, g["port"]),
            pdb(name, ns, lbls)]


def render_engine(v, t, config_text):
    ns, eng, models = v["namespace"], v["engine"], v.get("models") or {}
    name, lbls = engine_name(t), labels("engine", t["name"])
    args = ["serve", "--config", "/etc/brisk/inference.yaml", "--threads", str(t["threads"])]
    mounts = [{"name": "config", "mountPath": "/etc/brisk", "readOnly": True}]
    vols = [{"name": "config", "configMap": {"name": "brisk-engine"}}]
    if t.get("model"):
        if not models.get("claimName"):
            sys.exit(f"tier {t['name']}: model {t['model']} needs models.claimName")
        args += ["--model", f"{models['mountPath']}/{t['model']}"]
        mounts.append({"name": "models", "mountPath": models["mountPath"], "readOnly": True})
        vols.append({"name": "models", "persistentVolumeClaim": {
            "claimName": models["claimName"], "readOnly": True}})
    c = container("engine", v, args, eng["port"], eng, t["resources"], mounts)
    ann = {**scrape_annotations(eng["port"]), "brisk/config-checksum": checksum(config_text)}
    # No spec.replicas: KEDA's HPA owns the count, and a re-apply must not
    # reset it (the Deployment starts at 1, KEDA raises it to minReplicaCount).
    return [deployment(name, ns, lbls, c, ann, vols, grace(eng)),
            service(name, ns, lbls, eng["port"]),
            pdb(name, ns, lbls)]


def keda_queries(ns, tier):
    """PromQL per trigger; labels namespace and tier come from
    deploy/prometheus.yml's relabelling of the engine pods."""
    sel = f'namespace="{ns}",tier="{tier}"'
    return {
        # Requests waiting in the pool's engines.
        "queue-depth": f"sum(brisk:num_requests_waiting{{{sel}}})",
        "ttft-p95": ("histogram_quantile(0.95, sum by (le) "
                     f"(rate(brisk:time_to_first_token_seconds_bucket{{{sel}}}[2m])))"),
        # Each pod states the replica-equivalents its load needs.
        "desired-replicas": f"sum(brisk:desired_replicas{{{sel}}})",
    }


def render_scaledobject(v, t):
    ns, k = v["namespace"], v["keda"]
    q = keda_queries(ns, t["name"])

    def trigger(name, metric_type, threshold):
        return {"type": "prometheus", "name": name, "metricType": metric_type,
                "metadata": {"serverAddress": k["prometheusServer"], "query": q[name],
                             "threshold": str(threshold)}}
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": meta(engine_name(t), ns, labels("engine", t["name"])),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": engine_name(t)},
                "pollingInterval": k["pollingInterval"], "cooldownPeriod": k["cooldownPeriod"],
                "minReplicaCount": t["replicas"]["min"], "maxReplicaCount": t["replicas"]["max"],
                "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                    "stabilizationWindowSeconds": k["scaleDownStabilizationSeconds"]}}}},
                # The HPA takes the largest replica count any trigger asks for.
                # AverageValue: replicas = ceil(sum / threshold). Value (TTFT):
                # replicas = ceil(current * p95 / threshold).
                "triggers": [trigger("queue-depth", "AverageValue", k["queueDepthPerReplica"]),
                             trigger("ttft-p95", "Value", k["ttftP95Seconds"]),
                             trigger("desired-replicas", "AverageValue",
                                     k["desiredReplicasPerReplica"])]}}


def render(values):
    """{file name: [manifest dicts]}"""
    v, ns = values, values["namespace"]
    config_text = inference_yaml(v)
    files = {"00-namespace.yaml": [{"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": ns, "labels": labels("namespace")}}],
             "10-gateway.yaml": render_gateway(v),
             "20-engine-config.yaml": [configmap("brisk-engine", ns, labels("engine"),
                                                 "inference.yaml", config_text)]}
    for t in v["tiers"]:
        files[f"30-engine-{t['name']}.yaml"] = render_engine(v, t, config_text)
        files[f"40-keda-{t['name']}.yaml"] = [render_scaledobject(v, t)]
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-f", "--values", default=str(pathlib.Path(__file__).with_name("values.yaml")))
    ap.add_argument("-o", "--out", required=True, help="directory for the manifests")
    a = ap.parse_args(argv)
    values = yaml.safe_load(pathlib.Path(a.values).read_text())
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, docs in render(values).items():
        (out / name).write_text("---\n".join(to_yaml(d) for d in docs))
        print(out / name)


if __name__ == "__main__":
    main()
