"""`brisk schema suite`: many schemas and their test instances in one process
(the engine of bench/maskbench.py)."""
import json
import subprocess

CASES = [
    {"id": "person", "schema": {"type": "object",
                                "properties": {"name": {"type": "string"},
                                               "age": {"type": "integer", "minimum": 0}},
                                "required": ["name", "age"]},
     "tests": [{"text": '{"name":"Ann","age":31}', "valid": True},
               {"text": '{"name":"Ann","age":-1}', "valid": False},
               {"text": '{"name":"Ann"', "valid": False}]},
    {"id": "zip", "schema": {"type": "string", "pattern": "^[0-9]{5}$"},
     "tests": [{"text": '"12345"', "valid": True}, {"text": '"1234"', "valid": False},
               {"text": '"123456"', "valid": False}]},
    {"id": "date", "schema": {"type": "string", "format": "date"},
     "tests": [{"text": '"2024-02-29"', "valid": True}, {"text": '"2023-02-29"', "valid": False}]},
    # Lookahead is beyond the grammar: reported, and the string is not constrained.
    {"id": "lookahead", "schema": {"type": "string", "pattern": "^(?!0)[0-9]+$"},
     "tests": [{"text": '"0"', "valid": False}]},
    {"id": "broken", "schema": {"type": "no-such-type"}, "tests": []},
    {"id": "extra", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
     "tests": [{"text": '{"a":1,"b":2}', "valid": True}]},
]


def run_suite(brisk_bin, model, *flags):
    text = "\n".join(json.dumps(c) for c in CASES) + "\nnot json\n"
    p = subprocess.run([brisk_bin, "schema", "suite", "-", "--model", model, *flags],
                       input=text, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    return lines[0], {r.get("id", "?"): r for r in lines[1:]}


def test_suite_reports_compile_verdicts_and_mask_times(brisk_bin, default_model):
    head, out = run_suite(brisk_bin, default_model)
    assert head["vocab"] == 49152 and head["strict_defaults"] is True
    person = out["person"]
    assert person["compiled"] and person["unenforced"] == []
    assert [t["accepted"] for t in person["tests"]] == [True, False, False]
    # The incomplete value is rejected at the end (EOS not allowed).
    assert person["tests"][2]["rejected_at"] == person["tests"][2]["tokens"]
    assert all("mask_disagrees" not in t for t in person["tests"])
    # A mask before every token of the accepted instance plus one at the end.
    assert len(person["mask_us"]) >= person["tests"][0]["tokens"] + 1
    assert all(x >= 0 for x in person["mask_us"])
    # pattern and format are enforced token by token.
    assert out["zip"]["compiled"] and out["zip"]["unenforced"] == []
    assert [t["accepted"] for t in out["zip"]["tests"]] == [True, False, False]
    assert out["date"]["unenforced"] == []
    assert [t["accepted"] for t in out["date"]["tests"]] == [True, False]
    assert all("mask_disagrees" not in t for t in out["zip"]["tests"] + out["date"]["tests"])
    assert out["lookahead"]["unenforced"] == ["pattern@"]
    assert out["lookahead"]["tests"][0]["accepted"] is True
    assert out["broken"]["compiled"] is False and "no-such-type" in out["broken"]["error"]
    assert out["?"]["error"] == "case is not a JSON object"
    # Strict defaults: no extra keys unless additionalProperties says so.
    assert out["extra"]["tests"][0]["accepted"] is False


def test_suite_lenient_allows_extra_keys(brisk_bin, default_model):
    head, out = run_suite(brisk_bin, default_model, "--lenient")
    assert head["strict_defaults"] is False
    assert out["extra"]["tests"][0]["accepted"] is True
