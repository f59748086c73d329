// The rewardsvc dashboard: polls GET /v1/monitor?history=true and draws uPlot charts.
"use strict";

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const MARK = { firing: "#d62728", resolved: "#2ca02c", version: "#1f77b4", identity: "#9467bd" };
const REFRESH_MS = 5000;
let plots = [];
let selected = localStorage.getItem("rewardsvc-run") || "";

const seconds = (iso) => Date.parse(iso) / 1000;
const fmt = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(3));
// Costs run from fractions of a cent per reward to hundreds per run: significant digits.
const money = (v) => (v === null || v === undefined ? "–" : Number(v).toPrecision(4));

function headers() {
  const key = document.getElementById("key").value || sessionStorage.getItem("rewardsvc-key");
  return key ? { Authorization: "Bearer " + key } : {};
}

// Vertical lines on the time axis where an alert fired or resolved or the rubric changed.
function markers(events) {
  return {
    hooks: {
      draw: [(u) => {
        const ctx = u.ctx;
        const { left, top, width, height } = u.bbox;
        ctx.save();
        ctx.font = `${Math.round(10 * devicePixelRatio)}px sans-serif`;
        let row = 0;
        for (const e of events) {
          const x = u.valToPos(e.t, "x", true);
          if (x < left || x > left + width) continue;
          ctx.strokeStyle = ctx.fillStyle = MARK[e.kind] || "#000";
          ctx.setLineDash([5, 3]);
          ctx.lineWidth = 1.5 * devicePixelRatio;
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          if (e.kind !== "resolved") {
            // Stacked so that alerts firing close together stay readable.
            const y = top + (10 + 11 * (row++ % 8)) * devicePixelRatio;
            ctx.fillText(e.kind === "version" ? `rubric ${e.name.slice(0, 14)}` : e.name, x + 3, y);
          }
        }
        ctx.restore();
      }],
    },
  };
}

// A single point (one canary check) would otherwise stretch the time axis over years.
const PADDED_X = { x: { time: true, range: (u, min, max) => (min === max ? [min - 300, max + 300] : [min, max]) } };

function draw(panelId, times, named, events, yRange) {
  const panel = document.getElementById(panelId);
  panel.querySelectorAll(".uplot, .none").forEach((n) => n.remove());
  const names = Object.keys(named);
  if (names.length === 0) {
    const note = document.createElement("p");
    note.className = "none";
    note.textContent = "no data yet";
    panel.appendChild(note);
  }
  const series = [{}].concat(names.map((name, i) => ({
    label: name, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true,
  })));
  const opts = {
    width: Math.max(panel.clientWidth - 12, 300), height: 200,
    series, plugins: [markers(events)], legend: { live: false },
    scales: Object.assign({}, PADDED_X, yRange ? { y: { range: yRange } } : {}),
  };
  plots.push(new uPlot(opts, [times].concat(names.map((n) => named[n])), panel));
}

function pick(series, test) {
  const out = {};
  for (const [name, values] of Object.entries(series)) if (test(name)) out[name] = values;
  return out;
}

// One table body: a row per entry, its class and its cells' text from the entry.
function fillRows(selector, entries, rowClass, cells) {
  const body = document.querySelector(`${selector} tbody`);
  body.replaceChildren();
  for (const entry of entries) {
    const tr = document.createElement("tr");
    tr.className = rowClass(entry);
    for (const cell of cells(entry)) {
      const td = document.createElement("td");
      td.textContent = cell;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function alertsTable(run, canaries, golden) {
  const rows = run ? run.alerts.map((a) => [a.name, a.state, a.since, a.value, a.threshold]) : [];
  for (const c of canaries) {
    if (c.alert) rows.push([`canary:${c.judge}:${c.attack}`, "firing", c.since,
      c.reward - c.anchor_reward, c.margin]);
  }
  for (const g of golden) {
    if (g.alert) rows.push([`golden:${g.judge}`, "firing", g.since, g.shift, g.max_shift]);
  }
  const order = { firing: 0, pending: 1, resolved: 2 };
  rows.sort((a, b) => order[a[1]] - order[b[1]]);
  fillRows("#alerts", rows, ([, state]) => `alert ${state}`,
    ([name, state, since, value, threshold]) => [name, state, since, fmt(value), fmt(threshold)]);
  document.getElementById("no-alerts").hidden = rows.length > 0;
}

// Rubric health: the zero-spread share of groups and each criterion's pass rate,
// saturation and discrimination (variance within groups) over the run's window.
function healthTable(run) {
  const health = run ? run.health : null;
  document.getElementById("health-summary").textContent = health
    ? `${health.zero_spread_groups} of ${health.groups} groups with zero spread (share ${fmt(health.zero_spread_share)}); `
      + `saturated: ${health.saturated.length ? health.saturated.join(", ") : "none"}`
    : "not evaluated yet";
  fillRows("#health", health ? health.criteria : [], (c) => (c.saturated ? "saturated" : ""),
    (c) => [c.criterion, fmt(c.pass_rate), c.saturated || "–", fmt(c.discrimination),
      String(c.samples), String(c.groups)]);
}

function canaryTable(canaries) {
  fillRows("#canaries", canaries, (c) => (c.alert ? "alert firing" : ""),
    (c) => [c.judge, c.attack, fmt(c.reward), fmt(c.anchor_reward), fmt(c.margin),
      fmt(c.share_above), c.alert ? "FIRING" : "ok"]);
}

// Golden sets: each judge's latest re-score, and whether its identity changed.
function goldenTable(golden, judges) {
  const identity = new Map(judges.map((j) => [j.judge, j]));
  const changed = (g) => {
    const j = identity.get(g.judge);
    return j && j.alert ? `CHANGED ${j.changed}` : j ? (j.identity.root || j.identity.served || "") : "";
  };
  fillRows("#golden", golden, (g) => (g.alert ? "alert firing" : ""),
    (g) => [g.judge, String(g.rescores), `${g.answered}/${g.expected}`, fmt(g.accuracy),
      fmt(g.agreement), fmt(g.shift), fmt(g.max_shift), changed(g), g.alert ? "FIRING" : "ok"]);
}

function spendTable(spend) {
  const state = (r) => (r.budget === null ? "no budget" : r.exceeded ? "EXCEEDED: refused" : "under");
  fillRows("#spend", spend, (r) => (r.exceeded ? "alert firing" : ""),
    (r) => [r.run, money(r.cost), money(r.budget), money(r.cost_per_reward),
      String(r.judge_calls), String(r.rewards), state(r)]);
  document.getElementById("no-spend").hidden = spend.length > 0;
}

function loopsTable(loops) {
  const ended = (r) => Object.entries(r.outcomes).map(([k, n]) => `${k}: ${n}`).join(", ");
  const firing = (r) => r.alert !== null && r.alert.state === "firing";
  fillRows("#loops", loops, (r) => (firing(r) ? "alert firing" : ""),
    (r) => [r.rubric, r.run, String(r.loops), String(r.tool_calls), ended(r),
      fmt(r.unfinished_share), fmt(r.baseline), fmt(r.threshold),
      r.alert ? r.alert.state : "–"]);
  document.getElementById("no-loops").hidden = loops.length > 0;
}

function canaryPlot(canaries) {
  const stamps = new Set();
  for (const c of canaries) for (const [t] of c.history || []) stamps.add(seconds(t));
  const times = [...stamps].sort((a, b) => a - b);
  const named = {};
  const events = [];
  for (const c of canaries) {
    const byTime = new Map((c.history || []).map(([t, r, a]) =>
      [seconds(t), r === null || a === null ? null : r - a]));
    named[`${c.judge}:${c.attack}`] = times.map((t) => (byTime.has(t) ? byTime.get(t) : null));
    if (c.alert && c.since) events.push({ t: seconds(c.since), kind: "firing", name: `${c.judge}:${c.attack}` });
  }
  draw("plot-canaries", times, named, events, [-1, 1]);
}

function render(report) {
  plots.forEach((p) => p.destroy());
  plots = [];
  const select = document.getElementById("run");
  const keys = report.runs.map((r) => `${r.rubric} / ${r.run}`);
  if (!keys.includes(selected)) selected = keys[0] || "";
  select.replaceChildren(...keys.map((k) => new Option(k, k, false, k === selected)));
  const run = report.runs.find((r) => `${r.rubric} / ${r.run}` === selected);
  const canaries = report.canaries.filter((c) => !run || c.rubric === run.rubric);
  const golden = (report.golden || []).filter((g) => !run || g.rubric === run.rubric);
  alertsTable(run, canaries, golden);
  healthTable(run);
  canaryTable(canaries);
  goldenTable(golden, report.judges || []);
  spendTable(report.spend || []);
  loopsTable(report.tool_loops || []);
  const h = run ? run.history : { times: [], series: {}, events: [] };
  const times = h.times.map(seconds);
  const events = h.events.map((e) => ({ t: seconds(e.time), kind: e.kind, name: e.name }));
  const s = h.series;
  document.getElementById("summary").textContent = run
    ? `${run.samples} samples, version ${run.version.slice(0, 19)}` : "no runs yet";
  draw("plot-reward", times, pick(s, (n) => n.startsWith("reward_") && !n.endsWith("_sd")
    && n !== "reward_length_corr" && n !== "reward_drift"), events);
  draw("plot-length", times, pick(s, (n) => n === "length_mean"), events);
  draw("plot-corr", times, pick(s, (n) => n === "reward_length_corr"), events, [-1, 1]);
  draw("plot-flags", times, pick(s, (n) => n.startsWith("flag_rate:")), events);
  draw("plot-judges", times, pick(s, (n) => n === "judge_disagreement" || n === "uncertainty_mean"), events);
  draw("plot-drift", times, pick(s, (n) => n.endsWith("_drift")), events, [0, 1]);
  draw("plot-status", times, pick(s, (n) => n.endsWith("_share")), events, [0, 1]);
  draw("plot-criteria", times, pick(s, (n) => n.startsWith("criterion_pass_rate:")), events, [0, 1]);
  draw("plot-health", times, pick(s, (n) => n === "zero_spread_share"), events, [0, 1]);
  canaryPlot(canaries);
  document.getElementById("updated").textContent = "updated " + new Date().toISOString();
  document.body.dataset.plots = String(plots.length);
}

async function refresh() {
  try {
    const response = await fetch("v1/monitor?history=true", { headers: headers() });
    if (!response.ok) throw new Error(`GET /v1/monitor: HTTP ${response.status}`);
    render(await response.json());
    document.body.dataset.error = "";
  } catch (err) {
    document.getElementById("updated").textContent = String(err);
    document.body.dataset.error = String(err);
  }
}

document.getElementById("run").addEventListener("change", (e) => {
  selected = e.target.value;
  localStorage.setItem("rewardsvc-run", selected);
  refresh();
});
document.getElementById("key").addEventListener("change", (e) => {
  sessionStorage.setItem("rewardsvc-key", e.target.value);
  refresh();
});
refresh();
setInterval(refresh, REFRESH_MS);
