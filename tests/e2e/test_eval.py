"""`brisk eval golden` end to end: a golden set against a real `brisk serve`
on the default model, its gate passing and failing (exit 0 / 1), the JSON
and markdown reports, and a bad set refused with its file and line (exit 2)."""
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FACTS = os.path.join(ROOT, "bench", "golden", "facts_completion.jsonl")


def run_eval(brisk_bin, *args):
    return subprocess.run([brisk_bin, "eval", "golden", *args], capture_output=True, text=True,
                          timeout=300)


def test_golden_set_gate_passes_and_fails(brisk_bin, brisk_server, tmp_path):
    cases = open(FACTS).read().splitlines()[:8]
    golden = tmp_path / "facts.jsonl"
    golden.write_text("\n".join(cases) + "\n")
    (tmp_path / "facts.gate.yaml").write_text("min_pass_rate: 0.25\nmax_latency_p95_ms: 60000\n")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    r = run_eval(brisk_bin, "--set", str(golden), "--url", brisk_server.url, "--json",
                 str(out_json), "--markdown", str(out_md))
    assert r.returncode == 0, r.stderr + r.stdout
    report = json.loads(out_json.read_text())
    assert report["cases"] == 8 and len(report["results"]) == 8
    assert report["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert report["gate_passed"] and [g["threshold"] for g in report["gate"]] == [
        "min_pass_rate", "max_latency_p95_ms"]
    passed = sum(x["passed"] for x in report["results"])
    assert report["passed"] == passed >= 2
    assert 0 <= report["pass_rate_lower_bound_95"] < report["pass_rate"] == passed / 8
    for x in report["results"]:
        assert x["answer"] and x["latency_ms"] > 0 and (x["passed"] == (x["why"] == ""))
    assert out_md.read_text() == r.stdout and "Gate: **passed**" in r.stdout
    # A gate the set cannot meet: exit 1, and the report says which threshold.
    strict = tmp_path / "strict.yaml"
    strict.write_text("min_pass_rate_lower_bound: 0.99\n")
    r = run_eval(brisk_bin, "--set", str(golden), "--url", brisk_server.url, "--gate",
                 str(strict))
    assert r.returncode == 1, r.stderr
    assert "| min_pass_rate_lower_bound |" in r.stdout and "Gate: **failed**" in r.stdout


def test_bad_set_and_gate_are_refused(brisk_bin, brisk_server, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x", "check": {"contains": "a"}}\n{"prompt": "y"}\n')
    r = run_eval(brisk_bin, "--set", str(bad), "--url", brisk_server.url)
    assert r.returncode == 2 and f"{bad}:2: a case needs a \"check\"" in r.stderr
    good = tmp_path / "good.jsonl"
    good.write_text('{"prompt": "x", "check": {"contains": "a"}}\n')
    gate = tmp_path / "gate.yaml"
    gate.write_text("min_pass_rat: 0.5\n")
    r = run_eval(brisk_bin, "--set", str(good), "--url", brisk_server.url, "--gate", str(gate))
    assert r.returncode == 2 and "min_pass_rat" in r.stderr
    r = run_eval(brisk_bin, "--set", str(good), "--url", "http://127.0.0.1:1")
    assert r.returncode == 2 and ("/v1/models" in r.stderr or "127.0.0.1:1" in r.stderr)


def models_info(server):
    status, body = server.get("/v1/models")
    assert status == 200
    return json.loads(body)["data"][0]["brisk"]


def test_converted_precision_starts_only_through_the_golden_set_gate(
        brisk_bin, make_server, tmp_path):
    gates = tmp_path / "gates"
    serve = [brisk_bin, "serve", "--port", "0", "--gate-dir", str(gates)]
    # No gate report: refused at startup, naming how to make one; fp8, int8
    # and int4 too.
    for p in ("q8_0", "fp8", "int8", "int4"):
        r = subprocess.run(serve + ["--precision", p], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and "--save-gate" in r.stderr + r.stdout, (p, r.stderr)
    r = subprocess.run(serve + ["--precision", "fp4"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "not supported yet" in r.stderr + r.stdout
    # --allow-ungated serves it (weights converted at load) and says so in the
    # log, /v1/models and /metrics.
    s = make_server(args=["--precision", "q8_0", "--allow-ungated", "--gate-dir", str(gates)])
    info = models_info(s)
    assert info["precision"] == "q8_0" and info["gated"] is False
    assert info["serving_key"]["id"].endswith("-q8_0-kvf16-" + info["serving_key"]["engine_version"])
    assert "brisk:serving_ungated 1" in s.get("/metrics")[1]
    # The warning is written before the URL, but the thread draining stderr
    # may not have read it yet on a loaded machine.
    deadline = time.monotonic() + 5
    while (not any("WITHOUT a passing golden-set gate" in line for line in s.stderr_lines)
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert any("WITHOUT a passing golden-set gate" in line for line in s.stderr_lines)
    # The golden set with its gate, kept under the server's serving key.
    golden = tmp_path / "facts.jsonl"
    golden.write_text("\n".join(open(FACTS).read().splitlines()[:8]) + "\n")
    (tmp_path / "facts.gate.yaml").write_text("min_pass_rate: 0.25\n")
    r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--save-gate", str(gates))
    assert r.returncode == 0, r.stderr
    kept = gates / (info["serving_key"]["id"] + ".json")
    report = json.loads(kept.read_text())
    assert report["gate_passed"] and report["serving_key"] == info["serving_key"]
    s.stop()
    # Now it starts without the flag, and reports the gate it passed.
    s = make_server(args=["--precision", "q8_0", "--gate-dir", str(gates)])
    info = models_info(s)
    assert info["gated"] is True and info["gate_report"] == str(kept)
    assert "brisk:serving_ungated 0" in s.get("/metrics")[1]
    # Another precision is another key: no report for it.
    r = subprocess.run(serve + ["--precision", "q4_0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "q4_0" in r.stderr + r.stdout
    # The file's own precision needs no gate (and no key).
    native = models_info(make_server())
    assert native["gated"] is True and native["precision"] == "native"
    assert "serving_key" not in native


def test_gate_with_a_distribution_check(brisk_bin, make_server, tmp_path):
    """A gate file that names KLD thresholds: `brisk eval golden` also scores
    the served configuration against the file's native one (one short chunk
    of the installed text here) and the report passes only when both checks
    hold. int4 answers these facts well enough but fails the KLD bound, so
    no report is kept and serve still refuses; int8 passes both."""
    gates = tmp_path / "gates"
    golden = tmp_path / "facts.jsonl"
    golden.write_text("\n".join(open(FACTS).read().splitlines()[:4]) + "\n")
    gate = tmp_path / "facts.gate.yaml"
    # The shipped gates' KLD bounds (bench/golden/smollm2.gate.yaml), on one
    # chunk of 128 tokens.
    gate.write_text("min_pass_rate: 0.0\nmax_kld: 0.05\nmin_same_top1: 0.85\n"
                    "kld_ctx: 128\nkld_chunks: 1\n")
    s = make_server(args=["--precision", "int4", "--allow-ungated", "--gate-dir", str(gates)])
    key = models_info(s)["serving_key"]
    out = tmp_path / "int4.json"
    r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--save-gate", str(gates),
                 "--json", str(out), "--kld-threads", "2")
    assert r.returncode == 1, r.stderr
    report = json.loads(out.read_text())
    verdicts = {g["threshold"]: g for g in report["gate"]}
    assert set(verdicts) == {"min_pass_rate", "max_kld", "min_same_top1"}
    assert verdicts["min_pass_rate"]["ok"] and not verdicts["max_kld"]["ok"], verdicts
    assert report["kld"]["tested"]["precision"] == "int4"
    assert report["kld"]["reference"] == {"model": report["kld"]["tested"]["model"],
                                          "precision": "native", "kv_precision": "f16"}
    assert report["kld"]["positions"] == 63 and report["kld"]["chunks"] == 1
    assert "Distribution check" in r.stdout and "no report kept" in r.stderr
    assert not (gates / (key["id"] + ".json")).exists()
    # The local file must be the one the server loaded (its hash is the key's).
    other = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q8_0.gguf")
    if os.path.exists(other):
        r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--model-file", other)
        assert r.returncode == 2 and "--model-file" in r.stderr, r.stderr
    s.stop()
    r = subprocess.run([brisk_bin, "serve", "--port", "0", "--gate-dir", str(gates),
                        "--precision", "int4"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--model-file" in r.stderr + r.stdout and "max_kld" in r.stderr

    s = make_server(args=["--precision", "int8", "--allow-ungated", "--gate-dir", str(gates)])
    key = models_info(s)["serving_key"]
    r = run_eval(brisk_bin, "--set", str(golden), "--url", s.url, "--save-gate", str(gates),
                 "--kld-threads", "2")
    assert r.returncode == 0, r.stderr
    kept = json.loads((gates / (key["id"] + ".json")).read_text())
    assert kept["gate_passed"] and kept["serving_key"] == key
    assert kept["kld"]["tested"] == {"model": kept["kld"]["reference"]["model"],
                                     "precision": "int8", "kv_precision": "f16"}
    assert kept["kld"]["kld"]["mean"] < 0.05 and kept["kld"]["same_top1"]["mean"] >= 0.85
    assert [g["threshold"] for g in kept["gate"] if g["ok"]] == [
        "min_pass_rate", "max_kld", "min_same_top1"]
    s.stop()
    assert models_info(make_server(args=["--precision", "int8", "--gate-dir", str(gates)]))[
        "gated"] is True
    # A native server is the check's reference: nothing to compare, said so.
    out = tmp_path / "native.json"
    r = run_eval(brisk_bin, "--set", str(golden), "--url", make_server().url, "--json", str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert report["kld"]["checked"] is False and "native" in report["kld"]["why"]
    assert [g["threshold"] for g in report["gate"]] == ["min_pass_rate"]
