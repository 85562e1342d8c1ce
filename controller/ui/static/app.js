// Heliostat status page: a thin view on the daemon's JSON endpoints (/api/...), polled every
// few seconds. Everything is drawn here (canvas); nothing is loaded from anywhere else.
"use strict";

const POLL_MS = 3000;
const COLOURS = { mlu: "#1f77b4", measured: "#ff7f0e", predicted: "#9467bd", demand: "#2ca02c" };
let fabric = null;
let polls = 0;

function $(id) { return document.getElementById(id); }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function fixed(value, digits) { return value === null || value === undefined ? "-" : Number(value).toFixed(digits); }

function clock(t) { return t === null || t === undefined ? "-" : new Date(t * 1000).toLocaleTimeString(); }

function ago(t, now) {
  if (t === null || t === undefined) return "never";
  const s = Math.max(0, now - t);
  return s < 90 ? `${s.toFixed(0)} s ago` : s < 5400 ? `${(s / 60).toFixed(0)} min ago` : clock(t);
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(`${path}: ${body.message || response.status}`);
  return body;
}

function fillRows(table, rows) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
}

// -- header --------------------------------------------------------------------------------

function renderStatus(s) {
  $("fabric-name").textContent = s.fabric;
  $("phase").textContent = s.phase + (s.reconfiguration_id !== null ? ` #${s.reconfiguration_id}` : "");
  const health = (s.details && s.details.health) || "-";
  $("health").textContent = health;
  $("health").className = health === "ok" ? "ok" : "bad";
  $("mlu").textContent = fixed(s.mlu, 4);
  $("mlu").dataset.mlu = s.mlu === null ? "" : String(s.mlu);
  $("measured-mlu").textContent = fixed(s.measured_mlu, 4);
  $("predicted-mlu").textContent = fixed(s.predicted_mlu, 4);
  $("te-runs").textContent = s.te_runs;
  $("te-runs").dataset.teRuns = String(s.te_runs);
  $("toe-paused").textContent = s.toe_paused ? "paused" : "automatic";
  const problems = [...((s.details && s.details.degraded) || [])];
  if (s.last_error) problems.push(`last error: ${s.last_error}`);
  $("problems").replaceChildren(...problems.map((p) => el("div", {}, p)));
  const maintenance = s.maintenance.length ? s.maintenance.join(", ") : "none";
  const rows = [el("p", {}, "Drained for maintenance: ", el("b", {}, maintenance))];
  const deferred = s.details && s.details.deferred_plan;
  if (deferred) {  // a ToE plan waiting for the predicted load to leave room (controller/reconfig/deferred.py)
    const since = new Date(deferred.since * 1000).toLocaleTimeString();
    rows.push(el("p", { id: "deferred-plan" }, "ToE plan deferred since ", el("b", {}, since),
      ` (MLU ${fixed(deferred.current_mlu, 4)} -> ${fixed(deferred.target_mlu, 4)} once applied): ${deferred.why}`));
  }
  $("maintenance").replaceChildren(...rows);
  if (s.metrics_url) $("metrics-link").replaceChildren(" · metrics: ", el("a", { href: s.metrics_url }, s.metrics_url));
}

// -- fabric --------------------------------------------------------------------------------

function renderFabric(f, status) {
  const items = [
    `${f.blocks.length} blocks`, `${f.ocs.length} OCSes`, `${f.domains.length} failure domains`,
    f.spine.length ? `${f.spine.length} spine switches` : "no spine",
    `${(f.capacity_gbps / 1000).toFixed(1)} Tbit/s of uplinks`,
  ];  // the circuits by state: fabric.js (circuitCount), from /api/fabric-view
  $("fabric-summary").replaceChildren(...items.map((t) => el("span", {}, t)));
  $("domains").replaceChildren(...f.domains.map((dom) =>
    el("div", {}, el("b", {}, `domain ${dom.domain}: `), dom.ocs.join(", "))));
}

// -- topology heatmap ----------------------------------------------------------------------

function renderHeatmap(f, topology) {
  const names = f.blocks.map((b) => b.name);
  const index = new Map(names.map((n, i) => [n, i]));
  const n = names.length;
  const counts = Array.from({ length: n }, () => new Array(n).fill(0));
  let most = 0;
  for (const link of topology.topology.links) {
    const i = index.get(link.a), j = index.get(link.b);
    if (i === undefined || j === undefined) continue;
    counts[i][j] += link.count; counts[j][i] += i === j ? 0 : link.count;
    most = Math.max(most, counts[i][j]);
  }
  const canvas = $("heatmap");
  const ctx = canvas.getContext("2d");
  const margin = n <= 32 ? 44 : 8;
  const cell = Math.max(1, Math.floor((canvas.width - margin - 8) / Math.max(n, 1)));
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = "11px system-ui, sans-serif";
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const v = counts[i][j];
      const share = most ? v / most : 0;
      ctx.fillStyle = i === j ? "#eceff2" : `rgb(${Math.round(255 - 224 * share)},${Math.round(255 - 136 * share)},${Math.round(255 - 75 * share)})`;
      ctx.fillRect(margin + j * cell, margin + i * cell, cell - (cell > 4 ? 1 : 0), cell - (cell > 4 ? 1 : 0));
      if (n <= 16 && v > 0) {
        ctx.fillStyle = share > 0.55 ? "#fff" : "#1d232a";
        ctx.textAlign = "center"; ctx.textBaseline = "middle";
        ctx.fillText(String(v), margin + (j + 0.5) * cell, margin + (i + 0.5) * cell);
      }
    }
  }
  if (n <= 32) {
    ctx.fillStyle = "#6b7480";
    for (let i = 0; i < n; i++) {
      ctx.textAlign = "right"; ctx.textBaseline = "middle";
      ctx.fillText(names[i], margin - 4, margin + (i + 0.5) * cell);
      ctx.save();
      ctx.translate(margin + (i + 0.5) * cell, margin - 4);
      ctx.rotate(-Math.PI / 2); ctx.textAlign = "left";
      ctx.fillText(names[i], 0, 0);
      ctx.restore();
    }
  }
  const total = topology.topology.links.reduce((sum, l) => sum + l.count, 0);
  const spine = (topology.spine || []).reduce((sum, s) => sum + s.in_service, 0);
  $("topology-note").textContent = `${total} circuits; the darkest cell has ${most}` +
    (topology.spine && topology.spine.length ? `; spine links in service: ${spine}` : "");
}

// -- MLU and demand over time --------------------------------------------------------------

function renderHistory(samples) {
  const canvas = $("history");
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, left = 44, right = 60, top = 10, bottom = 24;
  ctx.clearRect(0, 0, W, H);
  if (samples.length < 2) {
    ctx.fillStyle = "#6b7480"; ctx.fillText("waiting for samples...", left, H / 2);
    return;
  }
  const t0 = samples[0].time, t1 = samples[samples.length - 1].time;
  const series = (key) => samples.filter((s) => s[key] !== null && s[key] !== undefined).map((s) => [s.time, s[key]]);
  const lines = { mlu: series("mlu"), measured: series("measured_mlu"), predicted: series("predicted_mlu") };
  const demand = series("demand_gbps");
  const mluMax = Math.max(1.0, ...Object.values(lines).flat().map((p) => p[1])) * 1.05;
  const demandMax = Math.max(1, ...demand.map((p) => p[1])) * 1.1;
  const x = (t) => left + (W - left - right) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
  const yMlu = (v) => H - bottom - (H - top - bottom) * (v / mluMax);
  const yDemand = (v) => H - bottom - (H - top - bottom) * (v / demandMax);
  ctx.strokeStyle = "#d9dee4"; ctx.fillStyle = "#6b7480"; ctx.font = "11px system-ui, sans-serif";
  ctx.lineWidth = 1;
  for (let k = 0; k <= 4; k++) {
    const v = (mluMax * k) / 4, y = yMlu(v);
    ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(W - right, y); ctx.stroke();
    ctx.textAlign = "right"; ctx.fillText(v.toFixed(2), left - 4, y + 4);
    ctx.textAlign = "left"; ctx.fillText(((demandMax * k) / 4).toFixed(0), W - right + 4, y + 4);
  }
  ctx.setLineDash([4, 3]); ctx.strokeStyle = "#c8322d";
  ctx.beginPath(); ctx.moveTo(left, yMlu(1)); ctx.lineTo(W - right, yMlu(1)); ctx.stroke();
  ctx.setLineDash([]);
  ctx.textAlign = "left"; ctx.fillText(clock(t0), left, H - 6);
  ctx.textAlign = "right"; ctx.fillText(clock(t1), W - right, H - 6);
  const draw = (points, colour, y) => {
    if (!points.length) return;
    ctx.strokeStyle = colour; ctx.lineWidth = 1.6; ctx.beginPath();
    points.forEach(([t, v], i) => (i ? ctx.lineTo(x(t), y(v)) : ctx.moveTo(x(t), y(v))));
    ctx.stroke();
  };
  draw(demand, COLOURS.demand, yDemand);
  draw(lines.predicted, COLOURS.predicted, yMlu);
  draw(lines.measured, COLOURS.measured, yMlu);
  draw(lines.mlu, COLOURS.mlu, yMlu);
}

// -- reconfigurations ----------------------------------------------------------------------

function renderReconfigurations(r) {
  const now = r.in_progress;
  if (!now) {
    $("reconfig-now").replaceChildren(el("p", { class: "muted" }, "none in progress"));
  } else {
    const stage = now.stage === null ? "-" : now.stage + 1;
    const doneSteps = new Set(now.journal.filter((s) => s.stage === now.stage && s.state === "done").map((s) => s.step));
    const steps = el("div", { class: "steps" }, ...now.steps.map((name) =>
      el("span", { class: name === now.step ? "now" : doneSteps.has(name) ? "done" : "" }, name)));
    const fill = el("div", {});
    fill.style.width = `${((now.progress || 0) * 100).toFixed(1)}%`;  // CSSOM: the CSP forbids style=""
    const bar = el("div", { class: "progress" }, fill);
    const stages = now.stages.map((s) => `${s.index + 1}: domain ${s.domain ?? "-"}, -${s.remove ?? 0} +${s.add ?? 0}`);
    $("reconfig-now").replaceChildren(
      el("p", {}, el("b", {}, `#${now.id} `), `${now.trigger}: stage ${stage} of ${now.stages_total}, ` +
        `step ${now.step || "-"} (${fixed((now.progress || 0) * 100, 0)}%)`),
      bar, steps, el("div", { class: "muted" }, stages.join(" · ")),
      el("p", { class: "muted" }, now.reason || ""));
  }
  fillRows($("reconfig-recent"), r.recent.map((x) => el("tr", { class: x.state === "done" ? "" : x.state === "in_progress" ? "warn" : "bad" },
    el("td", {}, x.id), el("td", {}, x.state), el("td", {}, x.trigger), el("td", {}, x.stages),
    el("td", {}, `-${x.circuits_removed ?? 0} +${x.circuits_added ?? 0}`),
    el("td", {}, `${fixed(x.current_mlu, 3)} → ${fixed(x.planned_mlu, 3)}`), el("td", {}, clock(x.created)))));
}

// -- devices and events --------------------------------------------------------------------

function renderDevices(devices, now) {
  fillRows($("devices"), devices.map((d) => el("tr", {},
    el("td", {}, d.name + (d.maintenance ? " (maintenance)" : "")), el("td", {}, d.kind),
    el("td", { class: `state-${d.state}` }, d.state), el("td", {}, ago(d.last_seen, now)))));
}

function describe(details) {
  // Stages are numbered from 1 on the page, as in the reconfiguration above (0-based in the API).
  const shown = (k, v) => k === "stage" && Number.isInteger(v) ? v + 1
    : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : Array.isArray(v) ? v.join(",") : v;
  return Object.entries(details).filter(([, v]) => v !== null && v !== "" && !(Array.isArray(v) && !v.length)).map(([k, v]) => `${k} ${shown(k, v)}`).join(", ");
}

function renderEvents(events) {
  fillRows($("events"), events.map((e) => el("tr", { class: `level-${e.level} kind-${e.kind}` },
    el("td", { class: "nowrap" }, clock(e.time)), el("td", {}, e.kind + (e.repeated > 1 ? ` ×${e.repeated}` : "")),
    el("td", {}, e.kind === "operator" ? operatorText(e.details) : describe(e.details)))));
}

// -- the loop ------------------------------------------------------------------------------

async function refresh() {
  try {
    const [status, topology, history, reconfigurations, devices, events] = await Promise.all([
      getJson("api/status"), getJson("api/topology?circuits=0"), getJson("api/history"),
      getJson("api/reconfigurations"), getJson("api/devices"), getJson("api/events"),
    ]);
    if (!fabric) fabric = await getJson("api/fabric");
    const now = Date.now() / 1000;
    renderStatus(status);
    renderFabric(fabric, status);
    renderHeatmap(fabric, topology);
    renderHistory(history.samples);
    renderReconfigurations(reconfigurations);
    renderDevices(devices.devices, now);
    renderEvents(events.events);
    await refreshFabricView();  // fabric.js: the picture, the circuit count, the drill-down
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    $("updated").className = "muted";
    document.body.dataset.loaded = "1";
    document.body.dataset.polls = String(++polls);
  } catch (err) {
    $("updated").textContent = `cannot reach the controller: ${err.message}`;
    $("updated").className = "bad";
  }
}

refresh();
setInterval(refresh, POLL_MS);

// -- announced jobs (issue 31): their own poll, so a controller without them changes nothing else --

function renderJobs(data) {
  $("jobs-lead").textContent = `(planned for ${fixed(data.lead_time_s / 60, 0)} min ahead)`;
  // communication time per iteration: on the routing when announced (before) and now (after)
  const comm = (s) => (s === null || s === undefined ? "\u2014" : `${fixed(s, 3)} s`);
  const rows = data.jobs.map((j) => el("tr", { class: `job-${j.phase}` },
    el("td", {}, j.name), el("td", {}, j.phase), el("td", { class: "nowrap" }, clock(j.start)),
    el("td", { class: "nowrap" }, clock(j.end)), el("td", {}, j.blocks.join(",")), el("td", {}, fixed(j.gbps, 1)),
    el("td", { class: "nowrap" }, comm((j.comm_seconds || {}).announced)),
    el("td", { class: "nowrap" }, comm((j.comm_seconds || {}).now))));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "8", class: "muted" }, "none")));
  fillRows($("jobs"), rows);
}

async function refreshJobs() {
  try {
    renderJobs(await getJson("api/jobs"));
  } catch (err) {
    fillRows($("jobs"), [el("tr", {}, el("td", { colspan: "8", class: "muted" }, err.message))]);
  }
}

refreshJobs();
setInterval(refreshJobs, POLL_MS);
