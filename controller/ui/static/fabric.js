// Heliostat status page: the fabric as a picture (/api/fabric-view). Blocks around, OCSes in the
// middle, for each block pair and OCS a curve through the OCS for the circuits that OCS carries between them,
// coloured by the pair's load; a drained or failed OCS greyed and marked. A click on a block,
// an OCS or a line opens its drill-down (/api/device, /api/link): load, capacity, the load over
// the last polls, its circuits. Loaded before app.js, whose helpers ($, el, getJson) it uses.
"use strict";

const PICTURE = { W: 760, H: 560, blockR: 17, ocsW: 58, ocsH: 26 };
//: Above this many (pair, OCS) lines, one straight line per pair (fabric-64 has thousands) and
//: the view is asked for without them (?by_ocs=0).
const MAX_OCS_LINES = 1500;
let selected = null;  // {kind: "device", name} or {kind: "link", a, b}
let lastView = null;  // the view last drawn (its size says whether to ask for by_ocs)

function svg(tag, attrs, ...children) {
  const node = document.createElementNS($("picture").namespaceURI, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function loadColour(utilisation, carrying) {
  if (!carrying) return "#9aa3ad";
  if (utilisation === null || utilisation === undefined) return "#5b6672";
  const hue = 120 * (1 - Math.min(Math.max(utilisation, 0), 1));
  return `hsl(${hue.toFixed(0)}, 70%, 42%)`;
}

function percent(u) { return u === null || u === undefined ? "-" : `${(100 * u).toFixed(1)}%`; }

function gbps(v) { return v === null || v === undefined ? "-" : `${Number(v).toFixed(1)}`; }

function nodeState(d) { return d.failed ? "failed" : d.maintenance ? "drained" : d.state; }

function layout(view) {
  const { W, H } = PICTURE, cx = W / 2, cy = H / 2;
  const at = new Map();
  const n = view.blocks.length;
  view.blocks.forEach((b, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    at.set(b.name, [cx + (W / 2 - 50) * Math.cos(angle), cy + (H / 2 - 40) * Math.sin(angle)]);
  });
  const k = view.ocs.length, cols = Math.ceil(Math.sqrt(k)), rows = Math.ceil(k / Math.max(cols, 1));
  const dx = Math.min(PICTURE.ocsW + 14, 300 / Math.max(cols, 1)), dy = Math.min(PICTURE.ocsH + 16, 220 / Math.max(rows, 1));
  view.ocs.forEach((o, i) => {
    const c = i % cols, r = Math.floor(i / cols);
    at.set(o.name, [cx + (c - (cols - 1) / 2) * dx, cy + (r - (rows - 1) / 2) * dy]);
  });
  return at;
}

function renderPicture(view) {
  const at = layout(view);
  const lines = svg("g", { class: "circuits" });
  const perOcs = view.links.every((l) => l.by_ocs) && view.links.reduce((sum, l) => sum + l.by_ocs.length, 0) <= MAX_OCS_LINES;
  for (const link of view.links) {
    const [ax, ay] = at.get(link.a), [bx, by] = at.get(link.b);
    const title = `${link.a} - ${link.b}: ${link.circuits.installed} circuits, ${link.circuits.carrying} carrying; ` +
      `load ${gbps(link.load_gbps)} of ${gbps(link.capacity_gbps)} Gbit/s (${percent(link.utilisation)})`;
    const parts = perOcs ? link.by_ocs : [{ ocs: null, installed: link.circuits.installed, carrying: link.circuits.carrying }];
    for (const part of parts) {
      const via = part.ocs ? at.get(part.ocs) : null;
      // A curve from one block to the other bent towards the OCS: every pair's line through an
      // OCS stays apart from the others (a click picks the pair), and shows which OCS carries it.
      const d = via ? `M${ax},${ay} Q${2 * via[0] - (ax + bx) / 2},${2 * via[1] - (ay + by) / 2} ${bx},${by}`
        : `M${ax},${ay} L${bx},${by}`;
      const line = svg("path", {
        d, fill: "none", stroke: loadColour(link.utilisation, part.carrying),
        "stroke-width": (1 + 1.5 * Math.sqrt(part.installed)).toFixed(1),
        "stroke-dasharray": part.carrying ? "none" : "5 4", class: "link",
        "data-a": link.a, "data-b": link.b, "data-ocs": part.ocs || "", "data-circuits": part.installed,
      }, svg("title", {}, title + (part.ocs ? `; ${part.installed} on ${part.ocs}` : "")));
      line.addEventListener("click", () => select({ kind: "link", a: link.a, b: link.b }));
      lines.append(line);
    }
  }
  const nodes = svg("g", { class: "nodes" });
  for (const o of view.ocs) {
    const [x, y] = at.get(o.name), state = nodeState(o);
    const fill = state === "failed" ? "#f3d0ce" : state === "drained" ? "#c9ced4" : "#dbe9f6";
    const group = svg("g", { class: `device ocs ${state}`, "data-device": o.name, "data-kind": "ocs", "data-state": state },
      svg("title", {}, `${o.name} (domain ${o.domain}): ${state}; ${o.circuits.installed} circuits, ` +
        `${o.circuits.carrying} carrying`),
      svg("rect", { x: x - PICTURE.ocsW / 2, y: y - PICTURE.ocsH / 2, width: PICTURE.ocsW, height: PICTURE.ocsH, rx: 4,
        fill, stroke: state === "failed" ? "#c8322d" : "#1f77b4", "stroke-width": 1.5 }),
      svg("text", { x, y: y + (state === "up" ? 4 : 0), "text-anchor": "middle" }, o.name));
    if (state === "drained" || state === "failed") {
      group.append(svg("text", { x, y: y + 10, "text-anchor": "middle", class: "mark" }, state));
    }
    group.addEventListener("click", () => select({ kind: "device", name: o.name }));
    nodes.append(group);
  }
  for (const b of view.blocks) {
    const [x, y] = at.get(b.name), state = nodeState(b);
    const group = svg("g", { class: `device block ${state}`, "data-device": b.name, "data-kind": "block", "data-state": state },
      svg("title", {}, `${b.name}: ${state}; load ${gbps(b.load_gbps)} of ${gbps(b.capacity_gbps)} Gbit/s`),
      svg("circle", { cx: x, cy: y, r: PICTURE.blockR, fill: state === "drained" ? "#c9ced4" : "#fff",
        stroke: state === "failed" ? "#c8322d" : loadColour(b.utilisation, b.circuits.carrying), "stroke-width": 3 }),
      svg("text", { x, y: y + 4, "text-anchor": "middle" }, b.name));
    group.addEventListener("click", () => select({ kind: "device", name: b.name }));
    nodes.append(group);
  }
  $("picture").setAttribute("viewBox", `0 0 ${PICTURE.W} ${PICTURE.H}`);
  $("picture").replaceChildren(lines, nodes);
  $("picture").dataset.blocks = String(view.blocks.length);
  $("picture").dataset.ocs = String(view.ocs.length);
}

function circuitCount(c) {
  $("circuit-count").replaceChildren(el("span", {}, "circuits: "),
    ...[["installed", c.installed], ["up", c.up], ["carrying traffic", c.carrying], ["drained", c.drained], ["down", c.down]]
      .map(([label, n]) => el("span", { class: `count ${label.split(" ")[0]}` }, el("b", {}, n), ` ${label}`)));
  Object.assign($("circuit-count").dataset, { installed: c.installed, up: c.up, carrying: c.carrying, drained: c.drained });
}

function operatorText(d) {
  return `${d.action}${d.target ? " " + d.target : ""}${d.forced ? " (forced)" : ""}${d.result ? ": " + d.result : ""}`;
}

// -- drill-down ----------------------------------------------------------------------------

function select(what) { selected = what; refreshDrill(); }

function sparkline(history) {
  const W = 320, H = 64, points = history.filter((h) => h.load_gbps !== null);
  const top = Math.max(1, ...history.map((h) => h.capacity_gbps || 0), ...points.map((h) => h.load_gbps));
  const t0 = history.length ? history[0].time : 0, t1 = history.length ? history[history.length - 1].time : 1;
  const x = (t) => 2 + (W - 4) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1), y = (v) => H - 2 - (H - 4) * (v / top);
  const line = (key) => history.filter((h) => h[key] !== null).map((h) => `${x(h.time).toFixed(1)},${y(h[key]).toFixed(1)}`).join(" ");
  const pic = svg("svg", { id: "drill-spark", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-points": points.length },
    svg("polyline", { points: line("capacity_gbps"), fill: "none", stroke: "#c8322d", "stroke-dasharray": "4 3" }),
    svg("polyline", { points: line("load_gbps"), fill: "none", stroke: "#1f77b4", "stroke-width": 1.6, class: "load" }));
  return pic;
}

function renderDrill(d) {
  const isLink = d.a !== undefined;
  const name = isLink ? `${d.a} - ${d.b}` : d.name;
  const head = isLink ? `link ${name}` : `${d.kind} ${name}: ${nodeState(d)}`;
  const c = d.circuits;
  const rows = (d.circuit_list || []).map((x) => el("tr", { class: `circuit-${x.state}` },
    el("td", {}, x.ocs), el("td", {}, `${x.a.block}:${x.a.port}`), el("td", {}, `${x.b.block}:${x.b.port}`), el("td", {}, x.state)));
  const circuits = el("table", { id: "drill-circuits" },
    el("thead", {}, el("tr", {}, el("th", {}, "ocs"), el("th", {}, "a"), el("th", {}, "b"), el("th", {}, "state"))), el("tbody", {}, ...rows));
  const pairs = !isLink && d.kind !== "spine" ? el("p", { class: "muted" }, (d.links || []).map((l) =>
    `${l.a}-${l.b}: ${l.circuits.installed}${l.circuits.carrying !== l.circuits.installed ? ` (${l.circuits.carrying} carrying)` : ""}`).join(" · ")) : "";
  $("drill").replaceChildren(
    el("h3", {}, head),
    el("p", {}, `load ${gbps(d.load_gbps)} of ${gbps(d.capacity_gbps)} Gbit/s (${percent(d.utilisation)})`,
      c ? ` · circuits ${c.installed} installed, ${c.up} up, ${c.carrying} carrying traffic, ${c.drained} drained, ${c.down} down` : ""),
    el("div", { class: "muted" }, `load over the last ${(d.history || []).length} polls (dashed: capacity)`),
    sparkline(d.history || []), pairs, circuits);
  Object.assign($("drill").dataset, { kind: isLink ? "link" : d.kind, name });
}

async function refreshDrill() {
  if (!selected) return;
  const path = selected.kind === "link"
    ? `api/link?a=${encodeURIComponent(selected.a)}&b=${encodeURIComponent(selected.b)}`
    : `api/device?name=${encodeURIComponent(selected.name)}`;
  try {
    renderDrill(await getJson(path));
  } catch (err) {
    $("drill").replaceChildren(el("p", { class: "bad" }, err.message));
  }
}

async function refreshFabricView() {
  const pairs = (view) => view.blocks.length * (view.blocks.length - 1) / 2;
  const few = lastView === null || pairs(lastView) * lastView.ocs.length <= MAX_OCS_LINES;
  const view = await getJson(few ? "api/fabric-view" : "api/fabric-view?by_ocs=0");
  lastView = view;
  renderPicture(view);
  circuitCount(view.circuits);
  await refreshDrill();
}
