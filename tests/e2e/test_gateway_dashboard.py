"""The gateway's dashboard in a real browser: one `brisk serve` engine behind a
`brisk gateway` with one tier, a few requests through the `openai` client,
then headless Chromium (Debian's `chromium`, driven by Selenium when it is
installed, else on its command line) loads /dashboard and the test waits
until every chart reports the points it drew (data-points), asserts them in
the DOM and saves a screenshot (in tmp_path, and in $BRISK_ARTIFACTS when
set)."""
import html.parser
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time
import urllib.request

import openai
import pytest

from conftest import TIME_SCALE, skip_or_fail
from gateway_util import SMOL, start_engine, start_gateway, wait_models_known, write_gateway_config

# The canvases the page draws (the tier's two made when its data arrives).
CHARTS = ["chart-ttft-small", "chart-tpot-small", "chart-rps", "chart-escalation", "chart-queue",
          "chart-kv", "chart-cost"]
FEATURES = ["search", "summarize", None]  # None: no X-Feature header


@pytest.fixture(scope="module")
def stack(brisk_bin, tmp_path_factory):
    if not SMOL.exists():
        pytest.fail("default model missing: run scripts/install_models.sh")
    tmp = tmp_path_factory.mktemp("dashboard")
    engine = start_engine(brisk_bin, SMOL, "smol")
    cfg = write_gateway_config(tmp / "gateway.yaml",
                               [("small", [engine.url], (0.1, 0.02, 0.4))])
    gw = start_gateway(brisk_bin, cfg, tmp / "ledger.db")
    try:
        wait_models_known(gw, 1)
        send_requests(gw)
        yield gw, engine
    finally:
        gw.stop()
        engine.stop(signal.SIGKILL)


def send_requests(gw):
    """Six chat requests, three streamed, spread over FEATURES."""
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="none", max_retries=0)
    for i in range(6):
        feature = FEATURES[i % len(FEATURES)]
        headers = {"X-Feature": feature} if feature else {}
        messages = [{"role": "user", "content": f"Count from {i} to {i + 9}."}]
        if i % 2 == 0:
            r = c.chat.completions.create(model="small", messages=messages, max_tokens=8,
                                          extra_headers=headers)
            assert r.choices[0].message.content is not None
        else:
            stream = c.chat.completions.create(model="small", messages=messages, max_tokens=8,
                                               stream=True, extra_headers=headers)
            assert list(stream)


def fetch(gw, path):
    with urllib.request.urlopen(gw.url + path, timeout=30) as r:
        return r.status, r.headers, r.read()


def test_dashboard_files_and_headers(stack):
    gw, _ = stack
    for path, content_type in [("/dashboard", "text/html; charset=utf-8"),
                               ("/dashboard/app.js", "application/javascript"),
                               ("/dashboard/app.css", "text/css"),
                               ("/dashboard/chart.js", "application/javascript"),
                               ("/dashboard/data", "application/json")]:
        status, headers, body = fetch(gw, path)
        assert status == 200, path
        assert headers["Content-Type"].startswith(content_type), (path, headers["Content-Type"])
        assert headers["X-Frame-Options"] == "DENY", path
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp, csp
        assert body, path
    _, _, page = fetch(gw, "/dashboard")
    assert b"<script>" not in page  # nothing inline: the policy would block it
    _, _, chart_js = fetch(gw, "/dashboard/chart.js")
    assert b"Chart.js v" in chart_js[:200]


def test_dashboard_data(stack):
    gw, engine = stack
    _, _, body = fetch(gw, "/dashboard/data")
    data = json.loads(body)
    assert abs(data["generated_at"] - time.time()) < 60
    small = data["tiers"]["small"]
    assert small["requests"] == 6
    assert small["outcomes"] == {"completed": 6}
    assert small["ttft_ms"]["count"] == 6
    assert 0 < small["ttft_ms"]["p50"] <= small["ttft_ms"]["p95"] <= small["ttft_ms"]["p99"]
    assert 1 <= small["tpot_ms"]["count"] <= 3  # streamed answers with more than one token
    assert small["e2e_ms"]["count"] == 6
    assert small["escalation_rate"] == 0
    assert small["requests_per_s"] > 0
    [replica] = data["replicas"]
    assert replica["tier"] == "small" and replica["upstream"] == f"127.0.0.1:{engine.port}"
    assert replica["healthy"] is True and replica["outstanding"] == 0
    by_feature = {}
    for g in data["cost_by_feature_day"]:
        by_feature[g["feature"]] = by_feature.get(g["feature"], 0) + g["requests"]
        assert g["cost_usd"] > 0
    assert by_feature == {"search": 2, "summarize": 2, "": 2}


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    skip_or_fail("Chromium is not installed (Debian: apt-get install chromium chromium-driver)")


def keep_screenshot(path):
    artifacts = os.environ.get("BRISK_ARTIFACTS")
    if artifacts:
        pathlib.Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, pathlib.Path(artifacts) / path.name)


BROWSER_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--window-size=1400,2200"]


def selenium_driver(chromium):
    """A Selenium Chrome driver, or None when Selenium or chromedriver is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    driver_path = shutil.which("chromedriver")
    if not driver_path:
        return None
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in BROWSER_ARGS:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)


def points_by_selenium(driver, url, timeout):
    """{canvas id: data-points} once every chart drew something (or at the timeout)."""
    from selenium.webdriver.common.by import By
    driver.get(url)
    deadline = time.time() + timeout
    points = {}
    while time.time() < deadline:
        points = {}
        for cid in CHARTS:
            found = driver.find_elements(By.ID, cid)
            points[cid] = int(found[0].get_attribute("data-points") or 0) if found else 0
        if all(points.values()):
            break
        time.sleep(0.25)
    return points


class CanvasPoints(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.points, self.cells = {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "canvas" and a.get("id"):
            self.points[a["id"]] = int(a.get("data-points") or 0)

    def handle_data(self, data):
        if data.strip():
            self.cells.append(data.strip())


def test_dashboard_charts_have_data_in_chromium(stack, tmp_path):
    gw, _ = stack
    chromium = chromium_binary()
    url = gw.url + "/dashboard"
    shot = tmp_path / "gateway_dashboard.png"
    driver = selenium_driver(chromium)
    if driver is not None:
        try:
            points = points_by_selenium(driver, url, 30 * TIME_SCALE)
            # Two more polls, so the line charts show a line.
            time.sleep(4.5)
            driver.save_screenshot(str(shot))
            table = driver.find_element("id", "tier-table").text
            fleet = driver.find_element("id", "gateway-table").text
            status = driver.find_element("id", "status").text
            errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            driver.quit()
    else:
        # No Selenium: Chromium's command line. Virtual time runs the page's
        # polls (its timers) without waiting for them in real time.
        common = [chromium, *BROWSER_ARGS, "--virtual-time-budget=10000"]
        out = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True,
                             timeout=120 * TIME_SCALE)
        assert out.returncode == 0, out.stderr[-2000:]
        parser = CanvasPoints()
        parser.feed(out.stdout)
        points = {cid: parser.points.get(cid, 0) for cid in CHARTS}
        table = " ".join(parser.cells)
        fleet = table
        status = "updated" if "updated" in out.stdout else out.stdout[-500:]
        errors = []
        subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True,
                       timeout=120 * TIME_SCALE)
    assert all(points.values()), f"charts without data: {points}; status: {status}"
    assert points["chart-cost"] >= 3  # one bar per feature (search, summarize, none) today
    assert points["chart-ttft-small"] >= 3  # p50, p95, p99
    assert "small" in table and "completed 6" in table, table
    assert "updated" in status, status
    assert "(this one)" in fleet, fleet  # the fleet view lists this gateway
    assert not errors, errors  # no script errors, no Content-Security-Policy violations
    assert shot.exists() and shot.stat().st_size > 10_000
    keep_screenshot(shot)
