"""`brisk judge` end to end: the rollout judge (src/gateway/judge.h) asked by
a real `brisk serve` on the default model about a few pairs of the project's
set (tests/fixtures/judge_pairs.jsonl). Checks the report's fields and that
every pair got both orders' verdicts, not how well the tiny model judges."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIRS = os.path.join(ROOT, "tests", "fixtures", "judge_pairs.jsonl")


def run_judge(brisk_bin, *args):
    return subprocess.run([brisk_bin, "judge", *args], capture_output=True, text=True,
                          timeout=300)


def test_judge_reports_agreement_and_position_bias(brisk_bin, brisk_server, tmp_path):
    lines = open(PAIRS).read().splitlines()
    assert len(lines) >= 40
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(lines[:4]) + "\n")
    out = tmp_path / "judge.json"
    before = brisk_server.metric("brisk:constrained_requests_total") or 0
    r = run_judge(brisk_bin, "--url", brisk_server.url, "--pairs", str(pairs), "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "| n | agree | disagree | tie | failed | agreement | position bias |" in r.stdout
    report = json.loads(out.read_text())
    assert report["model"] == "SmolLM2-135M-Instruct.Q4_1" and report["seed"] == 1234
    assert report["n"] == 4 and report["failed"] == 0 and report["llm_ran"] == 4
    assert report["agree"] + report["disagree"] + report["ties"] == 4
    assert report["agreement_rate"] == report["agree"] / 4
    for key in ("agreement_rate", "tie_rate", "position_bias_rate", "single_order_accuracy",
                "single_order_picked_a"):
        assert 0 <= report[key] <= 1, key
    assert report["position_bias_rate"] == report["position_inconsistent"] / 4
    assert len(report["results"]) == 4
    for x in report["results"]:
        # No structure and no greedy request: only the LLM decides, in both orders.
        assert x["llm_ran"] and x["llm_error"] == "" and x["decided"]
        assert x["baseline_valid"] == x["candidate_valid"] == x["exact_agree"] == -1
        assert x["winner_baseline_first"] in ("A", "B", "tie")
        assert x["winner_candidate_first"] in ("A", "B", "tie")
        assert x["score"] in (0, 0.5, 1) and x["better"] in ("baseline", "candidate")
    # Both orders of every pair reached the server, each constrained to the verdict schema.
    assert brisk_server.metric("brisk:constrained_requests_total") >= before + 8


def test_bad_pairs_file_is_refused(brisk_bin, brisk_server, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [], "baseline": "a", "candidate": "b", "better": "a"}\n')
    r = run_judge(brisk_bin, "--url", brisk_server.url, "--pairs", str(bad))
    assert r.returncode == 2 and f"{bad}:1: \"better\" must be" in r.stderr, r.stderr
    r = run_judge(brisk_bin, "--url", brisk_server.url, "--pairs", str(tmp_path / "none.jsonl"))
    assert r.returncode == 2 and "cannot open pairs file" in r.stderr
