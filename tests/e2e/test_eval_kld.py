"""`brisk eval kld` end to end on the default model and the project's
evaluation text: the reference (f32 weights) saved once, then the file's own
weights and a load-time precision compared with it; identical configurations
diverge by nothing, thresholds give exit 1, and bad input gives exit 2 with
what is wrong."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = os.path.join(ROOT, "bench", "golden", "kld_text.txt")


def kld(brisk_bin, *args):
    return subprocess.run([brisk_bin, "eval", "kld", *args], capture_output=True, text=True,
                          timeout=300)


def test_kld_against_a_saved_reference(brisk_bin, default_model, tmp_path):
    base = tmp_path / "f32.kldbase"
    r = kld(brisk_bin, "--model", default_model, "--precision", "f32", "--text", TEXT,
            "--save-base", str(base), "--ctx", "128", "--chunks", "2")
    assert r.returncode == 0, r.stderr
    assert "reference perplexity" in r.stdout and base.exists()
    assert not (tmp_path / "f32.kldbase.tmp").exists()

    # The same configuration: no divergence, every top-1 the same.
    out = tmp_path / "self.json"
    r = kld(brisk_bin, "--model", default_model, "--precision", "f32", "--base", str(base),
            "--json", str(out))
    assert r.returncode == 0, r.stderr
    same = json.loads(out.read_text())
    assert same["positions"] == 2 * (128 - 1 - 64)
    assert same["kld"]["mean"] < 1e-5 and same["same_top1"]["mean"] == 1.0
    assert abs(same["ppl_test"] - same["ppl_reference"]) < 1e-3 * same["ppl_reference"]

    # The file's own Q4_1 weights (8-bit activations): a small, real divergence.
    out = tmp_path / "native.json"
    r = kld(brisk_bin, "--model", default_model, "--base", str(base), "--json", str(out),
            "--max-kld", "0.05", "--min-same-top1", "0.8")
    assert r.returncode == 0, r.stderr + r.stdout
    native = json.loads(out.read_text())
    assert 1e-4 < native["kld"]["mean"] < 0.05
    assert native["kld_max"] >= native["kld_p99_9"] >= native["kld_p99"] >= native["kld_median"]
    assert native["reference"] == {"model": default_model, "precision": "f32",
                                   "kv_precision": "f16"}
    assert native["passed"] and "| mean KLD |" in r.stdout and "PASS mean KLD" in r.stdout

    # A threshold it cannot meet: exit 1, and the report says which.
    r = kld(brisk_bin, "--model", default_model, "--base", str(base), "--max-kld", "0.000001")
    assert r.returncode == 1 and "FAIL mean KLD" in r.stdout, r.stderr

    # Q4_0 at load is further from the exact weights than the file's Q4_1.
    out = tmp_path / "q4_0.json"
    r = kld(brisk_bin, "--model", default_model, "--precision", "q4_0", "--base", str(base),
            "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["kld"]["mean"] > native["kld"]["mean"]


def test_kld_bad_input(brisk_bin, default_model, tmp_path):
    r = kld(brisk_bin, "--model", default_model, "--base", str(tmp_path / "missing"))
    assert r.returncode == 2 and "cannot read the base" in r.stderr
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a base, just bytes" * 10)
    r = kld(brisk_bin, "--model", default_model, "--base", str(junk))
    assert r.returncode == 2 and "not a brisk eval kld base" in r.stderr
    r = kld(brisk_bin, "--model", default_model)
    assert r.returncode == 2 and "exactly one of --save-base" in r.stderr
    short = tmp_path / "short.txt"
    short.write_text("Too short for a chunk.")
    r = kld(brisk_bin, "--model", default_model, "--text", str(short), "--save-base",
            str(tmp_path / "b"))
    assert r.returncode == 2 and "fewer than one chunk" in r.stderr
    assert not (tmp_path / "b").exists() and not (tmp_path / "b.tmp").exists()
    r = kld(brisk_bin, "--model", default_model, "--precision", "int3", "--text", TEXT,
            "--save-base", str(tmp_path / "b"))
    assert r.returncode == 2 and "int3" in r.stderr
    # A truncated base is refused before any scoring.
    base = tmp_path / "t.kldbase"
    assert kld(brisk_bin, "--model", default_model, "--text", TEXT, "--save-base", str(base),
               "--ctx", "64", "--chunks", "1").returncode == 0
    with open(base, "r+b") as f:
        f.truncate(os.path.getsize(base) - 3)
    r = kld(brisk_bin, "--model", default_model, "--base", str(base))
    assert r.returncode == 2 and "truncated" in r.stderr
