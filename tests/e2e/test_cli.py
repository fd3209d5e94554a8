"""The real `brisk` binary from the command line: it generates, and bad input
(files, flags, prompts) gets one clear error and a non-zero exit, never a crash."""
import subprocess


def brisk(bin_, *args, timeout=120):
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=timeout)


def test_generate_greedy_completes_a_fact(brisk_bin, default_model):
    r = brisk(brisk_bin, "generate", "-m", default_model, "-p", "The capital of France is",
              "--temp", "0", "-n", "6")
    assert r.returncode == 0, r.stderr
    assert "Paris" in r.stdout


def test_generate_chat_uses_the_models_template(brisk_bin, default_model):
    r = brisk(brisk_bin, "generate", "-m", default_model, "--chat", "-p", "What is 2+2?",
              "--temp", "0", "-n", "16", "-v")
    assert r.returncode == 0, r.stderr
    assert "4" in r.stdout
    assert "finish=" in r.stderr


def test_same_seed_same_text(brisk_bin, default_model):
    args = ["generate", "-m", default_model, "-p", "Once upon a time", "--temp", "1.0",
            "--seed", "7", "-n", "20"]
    a, b = brisk(brisk_bin, *args), brisk(brisk_bin, *args)
    assert a.returncode == 0 and a.stdout == b.stdout


def test_missing_model_file(brisk_bin):
    r = brisk(brisk_bin, "generate", "-m", "/nonexistent.gguf", "-p", "hi")
    assert r.returncode == 1
    assert "does not exist" in r.stderr
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr


def test_serve_bad_chat_template(brisk_bin, default_model, tmp_path):
    # --chat-template (model.chat_template): a missing, directory or broken
    # file stops serve at startup with an error naming it.
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content }}")
    for path, why in (("/nonexistent.jinja", "does not exist"), (str(tmp_path), "is a directory"),
                      (str(bad), "parsing")):
        r = brisk(brisk_bin, "serve", "--port", "0", "--chat-template", path)
        assert r.returncode == 1, r.stderr
        assert "model.chat_template" in r.stderr and path in r.stderr and why in r.stderr
        assert "Segmentation" not in r.stderr


def test_truncated_model_file(brisk_bin, default_model, tmp_path):
    data = open(default_model, "rb").read(5_000_000)
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(data)
    r = brisk(brisk_bin, "generate", "-m", str(bad), "-p", "hi")
    assert r.returncode == 1
    assert "truncated" in r.stderr


def test_not_a_gguf_file(brisk_bin, tmp_path):
    bad = tmp_path / "text.gguf"
    bad.write_text("this is not a model file at all, just some text to read")
    r = brisk(brisk_bin, "generate", "-m", str(bad), "-p", "hi")
    assert r.returncode == 1
    assert "bad magic" in r.stderr


def test_corrupt_header_counts(brisk_bin, default_model, tmp_path):
    data = bytearray(open(default_model, "rb").read(1_000_000))
    data[8:16] = (2**62).to_bytes(8, "little")  # absurd tensor count
    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes(bytes(data))
    r = brisk(brisk_bin, "generate", "-m", str(bad), "-p", "hi")
    assert r.returncode == 1
    assert "error" in r.stderr


def test_prompt_longer_than_context(brisk_bin, default_model):
    r = brisk(brisk_bin, "generate", "-m", default_model, "-p", "word " * 9000, "-n", "4")
    assert r.returncode == 1
    assert "exceeds the context length" in r.stderr


def test_bad_flags(brisk_bin, default_model):
    r = brisk(brisk_bin, "generate", "-m", default_model, "-p", "hi", "--temp", "5")
    assert r.returncode == 1 and "temperature" in r.stderr
    r = brisk(brisk_bin, "generate", "-m", default_model, "-p", "hi", "-n", "-3")
    assert r.returncode != 0 and r.returncode != -11
    r = brisk(brisk_bin, "generate", "-p", "hi", "--top-p", "banana")
    assert r.returncode != 0 and "top-p" in r.stderr
    r = brisk(brisk_bin, "frobnicate")
    assert r.returncode != 0


def test_invalid_utf8_prompt(brisk_bin, default_model):
    r = subprocess.run([brisk_bin, "generate", "-m", default_model, "-p", b"\xff\xfe ok \xc3",
                        "--temp", "0", "-n", "3"], capture_output=True, timeout=60)
    assert r.returncode == 0


def test_bench_model_reports_speeds(brisk_bin, default_model, tmp_path):
    out = tmp_path / "bench.json"
    r = brisk(brisk_bin, "bench-model", "-m", default_model, "-t", "1", "-p", "32", "-n", "8",
              "-r", "1", "--parallel", "2", "--npp", "8", "--ntg", "4", "--json", str(out))
    assert r.returncode == 0, r.stderr
    import json
    d = json.loads(out.read_text())
    assert d["pp"]["tokens_per_s"] > 0 and d["tg"]["tokens_per_s"] > 0
    assert d["batched"][0]["parallel"] == 2
