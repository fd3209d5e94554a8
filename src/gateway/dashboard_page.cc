// The dashboard's page, script and style sheet. The script polls
// /dashboard/data every 2 s, keeps the polled snapshots (the last 300: ten
// minutes) and draws them with Chart.js (window.Chart from
// /dashboard/chart.js). Names from outside (tiers, replicas, features from
// X-Feature headers) reach the page only as text nodes and chart labels
// drawn on canvases, never as markup.
//
// The fleet section (tables gateway-table, rollout-table, decision-table) is
// the same on every gateway: it is read from the shared database.
//
// Each chart's canvas has a stable id (chart-rps, chart-escalation,
// chart-queue, chart-kv, chart-cost, and per tier chart-ttft-<tier> and
// chart-tpot-<tier>, the tier name with characters other than [A-Za-z0-9_-]
// as '_'); after each draw its data-points attribute holds the number of
// points (non-null values) it drew, so a test can tell a chart with data.
#include "gateway/dashboard_page.h"

namespace brisk::gateway {

std::string_view DashboardHtml() {
  return R"page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brisk gateway</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/app.css">
<script src="/dashboard/chart.js" defer></script>
<script src="/dashboard/app.js" defer></script>
</head>
<body>
<header>
  <h1>Brisk gateway</h1>
  <span id="status" class="status">connecting&hellip;</span>
  <form id="key-form" class="key-form" autocomplete="off">
    <input id="api-key" type="password" placeholder="API key (for cost)" aria-label="API key">
    <button type="submit">use key</button>
  </form>
</header>
<main>
<section>
  <h2>Tiers <small id="window-note"></small></h2>
  <table id="tier-table">
    <thead><tr>
      <th>tier</th><th>requests</th><th>req/s</th><th>escalated</th>
      <th>TTFT p50 / p95 / p99 (ms)</th><th>TPOT p50 / p95 / p99 (ms)</th>
      <th>end to end p50 / p95 / p99 (ms)</th><th>outcomes</th>
    </tr></thead>
    <tbody></tbody>
  </table>
</section>
<section>
  <h2>Latency per tier</h2>
  <div id="tier-charts" class="grid"></div>
</section>
<section>
  <h2>Traffic</h2>
  <div class="grid">
    <figure><figcaption>Requests per second</figcaption>
      <div class="chart"><canvas id="chart-rps"></canvas></div></figure>
    <figure><figcaption>Escalation rate (% of requests)</figcaption>
      <div class="chart"><canvas id="chart-escalation"></canvas></div></figure>
  </div>
</section>
<section>
  <h2>Replicas</h2>
  <div class="grid">
    <figure><figcaption>Queue depth (waiting sequences)</figcaption>
      <div class="chart"><canvas id="chart-queue"></canvas></div></figure>
    <figure><figcaption>KV cache fill (%)</figcaption>
      <div class="chart"><canvas id="chart-kv"></canvas></div></figure>
  </div>
  <table id="replica-table">
    <thead><tr>
      <th>tier</th><th>replica</th><th>state</th><th>in flight</th>
      <th>waiting</th><th>running</th><th>KV fill</th>
    </tr></thead>
    <tbody></tbody>
  </table>
</section>
<section>
  <h2>Fleet <small id="fleet-note"></small></h2>
  <table id="gateway-table">
    <thead><tr>
      <th>gateway</th><th>address</th><th>up since</th><th>last seen (s)</th>
      <th>in flight</th><th>requests</th>
    </tr></thead>
    <tbody></tbody>
  </table>
  <h3>Rollouts</h3>
  <table id="rollout-table">
    <thead><tr>
      <th>rollout</th><th>tier</th><th>stage</th><th>candidate share</th><th>arm</th>
      <th>requests</th><th>TTFT p95 (ms)</th><th>TPOT p95 (ms)</th><th>errors</th>
      <th>structured output failures</th>
    </tr></thead>
    <tbody></tbody>
  </table>
  <p id="rollout-note" class="note"></p>
  <h3>Decisions</h3>
  <table id="decision-table">
    <thead><tr>
      <th>time</th><th>rollout</th><th>action</th><th>from &rarr; to</th><th>who</th>
      <th>metric: value (limit)</th>
    </tr></thead>
    <tbody></tbody>
  </table>
</section>
<section>
  <h2>Cost per feature per day (USD, last 30 days)</h2>
  <figure class="wide"><div class="chart"><canvas id="chart-cost"></canvas></div></figure>
  <p id="cost-note" class="note"></p>
</section>
</main>
</body>
</html>
)page";
}

std::string_view DashboardStyle() {
  return R"page(:root { --fg: #1d2430; --muted: #667085; --line: #e4e7ec; --bg: #f7f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 1em; padding: 12px 20px;
         background: #fff; border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 20px 0 8px; }
h2 small { font-weight: normal; color: var(--muted); }
h3 { font-size: 14px; margin: 14px 0 4px; }
main { padding: 0 20px 20px; }
.status { color: var(--muted); }
.status.error { color: #b42318; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; }
figure { margin: 0; padding: 8px 10px; background: #fff; border: 1px solid var(--line);
         border-radius: 6px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
.chart { position: relative; height: 220px; }
figure.wide .chart { height: 280px; }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line);
        margin-top: 8px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: right;
         white-space: nowrap; }
th:first-child, td:first-child, td.text { text-align: left; }
th { font-weight: 600; color: var(--muted); }
.down { color: #b42318; font-weight: 600; }
.note { color: var(--muted); }
.key-form { margin-left: auto; }
)page";
}

std::string_view DashboardScript() {
  return R"page("use strict";
(function () {
  const POLL_MS = 2000;
  const KEEP = 300;  // polled snapshots kept: ten minutes
  const COLORS = ["#2e6fdb", "#e4572e", "#17a398", "#f3a712", "#8e44ad", "#5d6d7e",
                  "#c0392b", "#27ae60", "#d35400", "#1abc9c"];
  const history = [];  // {label, data}
  const charts = {};   // canvas id -> Chart

  const $ = (id) => document.getElementById(id);
  const slug = (s) => String(s).replace(/[^A-Za-z0-9_-]/g, "_");
  const fmt = (v, digits) => (v === null || v === undefined ? "\u2014" : Number(v).toFixed(digits));
  const color = (i) => COLORS[i % COLORS.length];

  function setStatus(text, error) {
    const s = $("status");
    s.textContent = text;
    s.className = error ? "status error" : "status";
  }

  // Counts what a chart drew, on the canvas, after every draw.
  const pointCounter = {
    id: "briskPoints",
    afterDraw(chart) {
      let n = 0;
      for (const ds of chart.data.datasets) {
        for (const v of ds.data) if (v !== null && v !== undefined) n++;
      }
      chart.canvas.setAttribute("data-points", String(n));
    },
  };

  // Dollars with two significant digits below a dollar: $0.000036, $0.12, $3.50.
  const usd = (v) => (v === 0 ? "$0" : "$" + (Math.abs(v) >= 1 ? v.toFixed(2)
                                                             : String(Number(v.toPrecision(2)))));

  function makeChart(id, type, yTitle, stacked) {
    if (charts[id]) return charts[id];
    const canvas = $(id);
    if (!canvas || typeof window.Chart !== "function") return null;
    charts[id] = new window.Chart(canvas, {
      type: type,
      data: { labels: [], datasets: [] },
      plugins: [pointCounter],
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        spanGaps: true,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: { stacked: !!stacked, ticks: { maxTicksLimit: 8, autoSkip: true } },
          y: { stacked: !!stacked, beginAtZero: true, title: { display: true, text: yTitle },
               ticks: yTitle === "USD" ? { callback: usd } : {} },
        },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
      },
    });
    return charts[id];
  }

  // series: [{label, values}], one dataset each, matched by label.
  function setSeries(chart, labels, series, bar) {
    if (!chart) return;
    chart.data.labels = labels;
    const keep = new Set(series.map((s) => s.label));
    chart.data.datasets = chart.data.datasets.filter((d) => keep.has(d.label));
    series.forEach((s, i) => {
      let ds = chart.data.datasets.find((d) => d.label === s.label);
      if (!ds) {
        ds = { label: s.label, data: [], borderColor: color(i), backgroundColor: color(i),
               borderWidth: bar ? 0 : 2, pointRadius: 1.5, tension: 0.2, maxBarThickness: 80 };
        chart.data.datasets.push(ds);
      }
      ds.data = s.values;
    });
    chart.update("none");
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }

  function fillTable(id, rows) {
    const body = $(id).tBodies[0];
    body.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const c of r) cell(tr, c.text !== undefined ? c.text : c, c.cls);
      body.appendChild(tr);
    }
  }

  const triple = (q) => `${fmt(q.p50, 1)} / ${fmt(q.p95, 1)} / ${fmt(q.p99, 1)}`;

  // A figure with a TTFT and a TPOT chart for each tier, made once.
  function ensureTierCharts(tier) {
    const ttft = "chart-ttft-" + slug(tier);
    if ($(ttft)) return;
    const box = $("tier-charts");
    for (const [id, caption] of [[ttft, "TTFT (ms)"], ["chart-tpot-" + slug(tier), "TPOT (ms)"]]) {
      const fig = document.createElement("figure");
      const cap = document.createElement("figcaption");
      cap.textContent = `${tier}: ${caption}`;
      const div = document.createElement("div");
      div.className = "chart";
      const canvas = document.createElement("canvas");
      canvas.id = id;
      div.appendChild(canvas);
      fig.append(cap, div);
      box.appendChild(fig);
    }
  }

  const pct = (v) => (v === null || v === undefined ? "\u2014" : `${fmt(100 * v, 1)} %`);
  const TERMINAL = new Set(["promoted", "rolled_back", "aborted", "refused"]);

  // Every gateway on the ledger's database, the running rollouts with each arm
  // against the candidate's limits (over the limit: marked), and the decisions.
  function renderFleet(latest) {
    const fleet = latest.fleet || { gateways: [], decisions: [], database: "ok" };
    fillTable("gateway-table", fleet.gateways.map((g) => [
      { text: g.instance + (g.this_gateway ? " (this one)" : ""), cls: "text" },
      { text: g.address, cls: "text" }, { text: g.started_at, cls: "text" },
      fmt(g.seconds_since_seen, 1), String(g.active_requests), String(g.requests_total)]));
    $("fleet-note").textContent = fleet.database === "ok"
        ? `(${fleet.gateways.length} gateway${fleet.gateways.length === 1 ? "" : "s"} on the database)`
        : "(the database is unreachable: last known state; rollouts frozen)";
    const running = (latest.rollouts || []).filter((r) => !TERMINAL.has(r.stage));
    const rows = [];
    const over = (v, limit) => v !== null && v !== undefined && v >= 0 && limit !== null &&
                               limit !== undefined && v > limit;
    for (const r of running) {
      const lim = r.limits || {};
      for (const arm of ["baseline", "candidate"]) {
        const s = r[arm];
        const cand = arm === "candidate";
        const ms = (v) => (v === null || v < 0 ? "\u2014" : fmt(v, 1));
        const withLimit = (v, text, limit, shown) => ({
          text: cand ? `${text} (\u2264 ${shown(limit)})` : text,
          cls: cand && s.requests >= r.min_samples && over(v, limit) ? "down" : undefined,
        });
        rows.push([
          { text: r.id, cls: "text" }, { text: r.tier, cls: "text" },
          { text: r.stage + (r.step !== undefined ? ` ${r.step + 1}` : ""), cls: "text" },
          pct(r.candidate_share), { text: arm, cls: "text" }, String(s.requests),
          withLimit(s.ttft_p95_ms, ms(s.ttft_p95_ms), lim.ttft_p95_ms, ms),
          withLimit(s.tpot_p95_ms, ms(s.tpot_p95_ms), lim.tpot_p95_ms, ms),
          withLimit(s.error_rate, pct(s.error_rate), lim.error_rate, pct),
          withLimit(s.structured_failure_rate,
                    s.structured_requests ? pct(s.structured_failure_rate) : "\u2014",
                    lim.structured_failure_rate, pct)]);
      }
    }
    fillTable("rollout-table", rows);
    $("rollout-note").textContent = running.length ? "" : "No rollout is running.";
    fillTable("decision-table", fleet.decisions.slice().reverse().map((e) => [
      { text: e.time || "", cls: "text" }, { text: e.rollout || "", cls: "text" },
      { text: e.action || "", cls: "text" }, { text: `${e.from || ""} \u2192 ${e.to || ""}`,
                                                cls: "text" },
      { text: e.who || "", cls: "text" },
      { text: e.metric ? `${e.metric}: ${fmt(e.value, 3)} (${fmt(e.limit, 3)})` : "\u2014",
        cls: "text" }]));
  }

  function render() {
    const latest = history[history.length - 1].data;
    const labels = history.map((h) => h.label);
    const tiers = Object.keys(latest.tiers).sort();

    fillTable("tier-table", tiers.map((t) => {
      const s = latest.tiers[t];
      const outcomes = Object.entries(s.outcomes).map(([k, v]) => `${k} ${v}`).join(", ");
      return [{ text: t, cls: "text" }, String(s.requests), fmt(s.requests_per_s, 2),
              s.escalation_rate === null ? "\u2014" : `${fmt(100 * s.escalation_rate, 1)} %`,
              triple(s.ttft_ms), triple(s.tpot_ms), triple(s.e2e_ms),
              { text: outcomes || "\u2014", cls: "text" }];
    }));
    $("window-note").textContent = `(last ${Math.round(latest.window_s / 60)} min)`;

    const series = (pick) => history.map((h) => {
      const v = pick(h.data);
      return v === undefined ? null : v;
    });
    for (const t of tiers) {
      ensureTierCharts(t);
      for (const [kind, field] of [["ttft", "ttft_ms"], ["tpot", "tpot_ms"]]) {
        const chart = makeChart(`chart-${kind}-${slug(t)}`, "line", "ms");
        setSeries(chart, labels, ["p50", "p95", "p99"].map((p) => ({
          label: p,
          values: series((d) => (d.tiers[t] ? d.tiers[t][field][p] : null)),
        })));
      }
    }
    setSeries(makeChart("chart-rps", "line", "requests/s"), labels, tiers.map((t) => ({
      label: t, values: series((d) => (d.tiers[t] ? d.tiers[t].requests_per_s : null)),
    })));
    setSeries(makeChart("chart-escalation", "line", "%"), labels, tiers.map((t) => ({
      label: t,
      values: series((d) => {
        const r = d.tiers[t] ? d.tiers[t].escalation_rate : null;
        return r === null || r === undefined ? null : 100 * r;
      }),
    })));

    const replicaKey = (r) => `${r.tier}/${r.upstream}`;
    const replicas = latest.replicas.map(replicaKey);
    const replicaSeries = (field, scale) => replicas.map((key) => ({
      label: key,
      values: series((d) => {
        const r = d.replicas.find((x) => replicaKey(x) === key);
        return !r || r[field] === null ? null : scale * r[field];
      }),
    }));
    setSeries(makeChart("chart-queue", "line", "sequences"), labels,
              replicaSeries("queue_depth", 1));
    setSeries(makeChart("chart-kv", "line", "%"), labels, replicaSeries("kv_fill", 100));
    fillTable("replica-table", latest.replicas.map((r) => [
      { text: r.tier, cls: "text" }, { text: r.upstream, cls: "text" },
      { text: r.healthy ? "up" : "ejected", cls: r.healthy ? "text" : "text down" },
      String(r.outstanding), r.load_known ? String(r.queue_depth) : "\u2014",
      r.load_known ? String(r.running) : "\u2014",
      r.kv_fill === null ? "\u2014" : `${fmt(100 * r.kv_fill, 1)} %`]));

    renderFleet(latest);

    const cost = latest.cost_by_feature_day;
    const days = [...new Set(cost.map((g) => g.day))].sort();
    const features = [...new Set(cost.map((g) => g.feature))].sort();
    setSeries(makeChart("chart-cost", "bar", "USD", true), days, features.map((f) => ({
      label: f === "" ? "(no feature)" : f,
      values: days.map((day) => {
        const g = cost.find((x) => x.day === day && x.feature === f);
        return g ? g.cost_usd : null;
      }),
    })), true);
    const total = cost.reduce((sum, g) => sum + g.cost_usd, 0);
    const scope = latest.cost_scope === "all" ? "all tenants" :
        String(latest.cost_scope || "").replace(/^tenant:/, "tenant ");
    $("cost-note").textContent = latest.cost_scope === null
        ? `No cost data: ${latest.cost_error}.`
        : latest.cost_error
        ? `The ledger query failed: ${latest.cost_error}`
        : `${cost.reduce((n, g) => n + g.requests, 0)} requests, ${usd(total)} in total (${scope}).`;
  }

  // The key the user typed, for this tab only: the cost part of
  // /dashboard/data is that key's tenant's (an admin key's: every tenant's).
  const KEY_ITEM = "brisk-dashboard-key";
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = $("api-key").value.trim();
    if (key === "") sessionStorage.removeItem(KEY_ITEM); else sessionStorage.setItem(KEY_ITEM, key);
    $("api-key").value = "";
  });

  function poll() {
    const key = sessionStorage.getItem(KEY_ITEM);
    const headers = key ? { Authorization: `Bearer ${key}` } : {};
    fetch("/dashboard/data", { cache: "no-store", headers: headers })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(
          r.status === 401 ? "HTTP 401: the API key is not one of this gateway's" :
                             `HTTP ${r.status}`))))
      .then((data) => {
        const at = new Date(data.generated_at * 1000);
        history.push({ label: at.toTimeString().slice(0, 8), data: data });
        if (history.length > KEEP) history.shift();
        render();
        const charting = typeof window.Chart === "function" ? "" :
            " \u00b7 charts unavailable: /dashboard/chart.js did not load (install libjs-chart.js)";
        setStatus(`updated ${at.toLocaleTimeString()}${charting}`, charting !== "");
      })
      .catch((e) => setStatus(`cannot read /dashboard/data: ${e.message}`, true))
      .finally(() => setTimeout(poll, POLL_MS));
  }

  poll();
})();
)page";
}

}  // namespace brisk::gateway
