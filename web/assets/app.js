// nsprof web: the page of one capture. Every name from the capture goes
// to the page through textContent or a canvas's fillText, never as markup.
"use strict";

const $ = (id) => document.getElementById(id);

const state = {
  meta: null,
  timeline: null,
  value: 0,
  since: 0, // ns from the capture's start
  until: 0, // 0: the capture's end
  // The filter other than time: a process, a thread (tid, with its
  // pid) or a container's label; 0 and "" for none.
  pid: 0,
  tid: 0,
  container: "",
  invert: false,
  flame: null,
  zoom: null, // the flame graph node shown at full width
  ctree: null, // the call tree's document (an api/flame answer)
  expanded: new Set(), // its expanded nodes
  search: "",
  busy: 0,
};

// shown makes a name printable: control characters become \xNN, so that
// text cannot move the cursor or hide in a terminal-like rendering.
function shown(s) {
  return String(s).replace(/[\x00-\x1f\x7f]/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function fmtNs(ns) {
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
  if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
  if (a >= 1e3) return (ns / 1e3).toFixed(1) + " µs";
  return ns + " ns";
}

function fmtValue(v, unit) {
  if (unit === "nanoseconds") return fmtNs(v);
  if (unit === "bytes") {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : v) + " " + u[i];
  }
  return String(v);
}

function unit() {
  const t = state.meta && state.meta.sample_types[state.value];
  return t ? t.unit : "count";
}

async function api(path, params) {
  const q = new URLSearchParams(params);
  state.busy++;
  document.body.dataset.busy = state.busy;
  try {
    const r = await fetch("api/" + path + "?" + q.toString(), { credentials: "same-origin", cache: "no-store" });
    const doc = await r.json();
    if (!r.ok) throw new Error(doc.error || r.statusText);
    return doc;
  } finally {
    state.busy--;
    document.body.dataset.busy = state.busy;
  }
}

function selParams() {
  const p = { value: state.value };
  if (state.since) p.since = state.since;
  if (state.until) p.until = state.until;
  return Object.assign(p, filterParams());
}

// filterParams returns the API's parameters of the filter other than
// time.
function filterParams() {
  const p = {};
  if (state.pid) p.pid = state.pid;
  if (state.tid) p.tid = state.tid;
  if (state.container) p.container = state.container;
  return p;
}

// filterText says what the filter keeps, "" for everything.
function filterText() {
  if (state.container) return "container " + state.container;
  const p = state.pid && procOf(state.pid);
  const name = p ? p.comm + " [" + p.pid + "]" : "process " + state.pid;
  if (state.tid) return "thread " + state.tid + " of " + name;
  if (state.pid) return name;
  return "";
}

function procOf(pid) {
  for (const c of state.meta.containers) for (const p of c.processes) if (p.pid === pid) return p;
  return null;
}

// setFilter keeps only the samples of f ({pid, tid, container}; {} for
// all) in every view but the timeline, with the range.
function setFilter(f) {
  state.pid = f.pid || 0;
  state.tid = f.tid || 0;
  state.container = f.container || "";
  showFilter();
  drawTimeline();
  drawProcs();
  refresh();
}

// toggleFilter sets filter f, or clears it when it is the one set.
function toggleFilter(f) {
  if ((f.pid || 0) === state.pid && (f.tid || 0) === state.tid && (f.container || "") === state.container) setFilter({});
  else setFilter(f);
}

function showFilter() {
  const t = filterText(), lab = $("filter");
  lab.textContent = t ? "Only " + shown(t) : "All processes";
  lab.hidden = !t;
  lab.dataset.pid = state.pid;
  lab.dataset.tid = state.tid;
  lab.dataset.container = state.container;
  $("clear-filter").hidden = !t;
}

// isFiltered says whether timeline row r is what the filter keeps.
function isFiltered(r) {
  if (r.kind === "head") return !!state.container && r.container === state.container;
  if (r.kind !== "lane") return false;
  return state.tid ? r.tid === state.tid : !!state.pid && !r.tid && r.pid === state.pid;
}

function status(text) { $("status").textContent = text; }

// ---- Timeline ----

const LABEL_W = 230, ROW_H = 16, HEAD_H = 18, AXIS_H = 18, COUNTER_H = 40;

// groupColour returns a colour for a mark group, the same on every load.
function hashHue(s) {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return ((h % 360) + 360) % 360;
}

// layoutTimeline returns the rows of the timeline, top to bottom, below
// the axis: marks by group and name, counters, then the processes with
// samples by container, each with its threads when it has several.
function layoutTimeline() {
  const rows = [];
  let y = AXIS_H;
  const groups = new Map();
  for (const m of state.timeline.marks) {
    const k = m.group + ":" + m.name;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(m);
  }
  if (groups.size) {
    rows.push({ kind: "head", y, h: HEAD_H, label: "marks" + (state.timeline.marks_total > state.timeline.marks.length ? " (first " + state.timeline.marks.length + " of " + state.timeline.marks_total + ")" : "") });
    y += HEAD_H;
    for (const [k, marks] of groups) {
      rows.push({ kind: "marks", y, h: ROW_H, label: k, marks, hue: hashHue(marks[0].group) });
      y += ROW_H;
    }
  }
  if (state.timeline.counters.length) {
    rows.push({ kind: "head", y, h: HEAD_H, label: "counters" });
    y += HEAD_H;
    for (const c of state.timeline.counters) {
      rows.push({ kind: "counter", y, h: COUNTER_H, label: c.category + " / " + c.name, counter: c });
      y += COUNTER_H;
    }
  }
  const lanes = new Map();
  for (const l of state.timeline.lanes) lanes.set(l.pid + "/" + l.tid, l);
  for (const c of state.meta.containers) {
    const procs = c.processes.filter((p) => lanes.has(p.pid + "/0"));
    if (!procs.length) continue;
    rows.push({ kind: "head", y, h: HEAD_H, label: "container " + c.label, container: c.label });
    y += HEAD_H;
    for (const p of procs) {
      rows.push({ kind: "lane", y, h: ROW_H, bold: true, label: p.comm + " [" + p.pid + "]", lane: lanes.get(p.pid + "/0"), pid: p.pid });
      y += ROW_H;
      const threads = p.threads.filter((t) => lanes.has(p.pid + "/" + t.tid));
      if (threads.length < 2) continue;
      for (const t of threads) {
        rows.push({ kind: "lane", y, h: ROW_H, label: "  " + (t.comm || p.comm) + " (" + t.tid + ")", lane: lanes.get(p.pid + "/" + t.tid), pid: p.pid, tid: t.tid });
        y += ROW_H;
      }
    }
  }
  return { rows, height: y + 4 };
}

function plotW() { return $("tl").clientWidth - LABEL_W - 8; }
function xOf(ns) { return LABEL_W + (ns / Math.max(1, state.meta.duration_ns)) * plotW(); }
function nsOf(x) {
  const f = Math.min(1, Math.max(0, (x - LABEL_W) / plotW()));
  return Math.round(f * state.meta.duration_ns);
}

// TL_MAX_H is the height of the timeline's window; taller timelines
// scroll in it, and only the rows in view are drawn.
const TL_MAX_H = 480;

function scrollTop() { return $("timeline").scrollTop; }

function layoutAndDraw() {
  state.layout = layoutTimeline();
  const h = Math.min(TL_MAX_H, state.layout.height);
  $("tl").style.height = h + "px";
  $("tl-space").style.height = state.layout.height - h + "px";
  drawTimeline();
}

function drawTimeline() {
  const cv = $("tl");
  const lay = state.layout;
  const dpr = window.devicePixelRatio || 1;
  const w = cv.clientWidth, H = cv.clientHeight, top = scrollTop();
  cv.width = w * dpr;
  cv.height = H * dpr;
  const g = cv.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, H);
  g.font = "11px system-ui, sans-serif";
  g.textBaseline = "middle";
  const dur = state.meta.duration_ns;
  const bucketW = plotW() / state.timeline.buckets;
  for (const r of lay.rows) {
    const y = r.y - top;
    if (y + r.h <= AXIS_H || y >= H) continue;
    g.save();
    g.beginPath();
    g.rect(0, Math.max(AXIS_H, y), w, r.h);
    g.clip();
    g.save();
    g.beginPath();
    g.rect(0, y, LABEL_W - 4, r.h);
    g.clip();
    if (isFiltered(r)) {
      g.fillStyle = "#ffe08a";
      g.fillRect(0, y, LABEL_W - 4, r.h);
    }
    g.fillStyle = r.kind === "head" ? "#2d3142" : "#333";
    g.font = (r.kind === "head" || r.bold ? "bold " : "") + "11px system-ui, sans-serif";
    g.fillText(shown(r.label), 4, y + r.h / 2);
    g.restore();
    if (r.kind === "head") {
      g.fillStyle = "#e4e6ee";
      g.fillRect(LABEL_W, y + r.h - 1, plotW(), 1);
    } else if (r.kind === "lane") {
      const l = r.lane, peak = Math.max(1, l.peak);
      g.fillStyle = r.tid ? "#5b8def" : "#2f5fc4";
      for (let i = 0; i < l.at.length; i++) {
        const bh = Math.max(1, (l.w[i] / peak) * (r.h - 2));
        g.fillRect(LABEL_W + l.at[i] * bucketW, y + r.h - 1 - bh, Math.max(1, bucketW), bh);
      }
    } else if (r.kind === "marks") {
      g.fillStyle = "hsl(" + r.hue + ",65%,55%)";
      for (const m of r.marks) {
        const x = xOf(m.start_ns);
        g.fillRect(x, y + 2, Math.max(1, xOf(m.start_ns + m.dur_ns) - x), r.h - 4);
      }
    } else if (r.kind === "counter") {
      const pts = r.counter.points;
      if (pts.length) {
        let lo = Infinity, hi = -Infinity;
        for (const [, v] of pts) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        if (hi === lo) { hi = lo + 1; }
        const yOf = (v) => y + r.h - 3 - ((v - lo) / (hi - lo)) * (r.h - 6);
        g.strokeStyle = "#d0562b";
        g.beginPath();
        pts.forEach(([t, v], i) => {
          const x = xOf(t), py = yOf(v);
          if (i === 0) g.moveTo(x, py); else { g.lineTo(x, yOf(pts[i - 1][1])); g.lineTo(x, py); }
        });
        g.lineTo(xOf(dur), yOf(pts[pts.length - 1][1]));
        g.stroke();
        g.fillStyle = "#777";
        g.fillText(String(+hi.toPrecision(6)), w - 60, y + 6);
      }
    }
    g.restore();
  }
  // The axis, over the rows scrolled under it.
  g.fillStyle = "#fafafa";
  g.fillRect(0, 0, w, AXIS_H);
  g.fillStyle = "#555";
  for (let i = 0; i <= 10; i++) {
    const x = LABEL_W + (i / 10) * plotW();
    g.fillRect(x, AXIS_H - 4, 1, 4);
    if (i === 9) continue; // room for the last label, right-aligned
    g.textAlign = i === 10 ? "right" : "left";
    g.fillText(fmtNs((dur * i) / 10), i === 10 ? x - 2 : x + 2, AXIS_H / 2);
    g.textAlign = "left";
  }
  showSelection();
}

function showSelection() {
  const s = $("tl-sel"), lab = $("selection");
  lab.dataset.since = state.since;
  lab.dataset.until = state.until;
  if (!state.since && !state.until) {
    s.hidden = true;
    lab.textContent = "Whole capture";
    return;
  }
  const until = state.until || state.meta.duration_ns;
  s.hidden = false;
  s.style.top = scrollTop() + "px";
  s.style.height = $("tl").clientHeight + "px";
  s.style.left = xOf(state.since) + "px";
  s.style.width = Math.max(1, xOf(until) - xOf(state.since)) + "px";
  lab.textContent = "Selected " + fmtNs(state.since) + " – " + fmtNs(until) + " (" + fmtNs(until - state.since) + ")";
}

// rowAt returns the row at y on the canvas.
function rowAt(y) {
  if (!state.layout || y < AXIS_H) return null;
  y += scrollTop();
  return state.layout.rows.find((r) => y >= r.y && y < r.y + r.h) || null;
}

function tip(e, lines) {
  const t = $("tip");
  if (!lines) { t.hidden = true; return; }
  t.textContent = lines.map(shown).join("\n");
  t.hidden = false;
  t.style.left = Math.min(e.clientX + 12, window.innerWidth - 320) + "px";
  t.style.top = e.clientY + 14 + "px";
}

function timelineHover(e, x, y) {
  const r = rowAt(y);
  if (!r || x < LABEL_W) {
    const click = r && (r.kind === "lane" || r.container) ? (isFiltered(r) ? "click: all processes" : "click: only this one in the views") : "";
    tip(e, r ? [r.label.trim()].concat(click ? [click] : []) : null);
    return;
  }
  const t = nsOf(x);
  if (r.kind === "marks") {
    const slack = (3 / plotW()) * state.meta.duration_ns;
    const m = r.marks.find((m) => t >= m.start_ns - slack && t <= m.start_ns + m.dur_ns + slack);
    if (m) { tip(e, [m.group + ":" + m.name, "duration " + fmtNs(m.dur_ns), "at " + fmtNs(m.start_ns) + ", pid " + m.pid].concat(m.message ? [m.message] : [])); return; }
  } else if (r.kind === "lane") {
    const b = Math.min(state.timeline.buckets - 1, Math.floor((t / state.meta.duration_ns) * state.timeline.buckets));
    const i = r.lane.at.indexOf(b);
    tip(e, [r.label.trim(), "at " + fmtNs(t) + ": " + fmtValue(i < 0 ? 0 : r.lane.w[i], unit())]);
    return;
  } else if (r.kind === "counter") {
    let v = null;
    for (const [pt, pv] of r.counter.points) { if (pt <= t) v = pv; else break; }
    tip(e, [r.label, "at " + fmtNs(t) + ": " + (v === null ? "no value yet" : v)]);
    return;
  }
  tip(e, null);
}

function initTimeline() {
  const cv = $("tl");
  let drag = null;
  const pos = (e) => { const b = cv.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };
  cv.addEventListener("mousedown", (e) => {
    const [x, y] = pos(e);
    if (e.button !== 0) return;
    if (x < LABEL_W) {
      // A label: a process, thread or container filters the views.
      const r = rowAt(y);
      if (r && r.kind === "lane") toggleFilter(r.tid ? { pid: r.pid, tid: r.tid } : { pid: r.pid });
      else if (r && r.container) toggleFilter({ container: r.container });
      return;
    }
    drag = { x0: x, x1: x };
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    const [x, y] = pos(e);
    if (drag) {
      drag.x1 = x;
      const s = $("tl-sel"), a = Math.max(LABEL_W, Math.min(drag.x0, x)), b = Math.min(LABEL_W + plotW(), Math.max(drag.x0, x));
      s.hidden = false;
      s.style.top = scrollTop() + "px";
      s.style.height = cv.clientHeight + "px";
      s.style.left = a + "px";
      s.style.width = Math.max(1, b - a) + "px";
      return;
    }
    if (e.target === cv) timelineHover(e, x, y); else if (!e.target.closest || !e.target.closest("#flame, #calltree")) tip(e, null);
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (Math.abs(d.x1 - d.x0) < 3) { showSelection(); return; }
    const a = nsOf(Math.min(d.x0, d.x1)), b = nsOf(Math.max(d.x0, d.x1));
    select(a, b >= state.meta.duration_ns ? 0 : b);
  });
  window.addEventListener("resize", () => { if (state.timeline) drawTimeline(); if (state.flame) drawFlame(); });
  let pending = false;
  $("timeline").addEventListener("scroll", () => {
    if (pending || !state.timeline) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; drawTimeline(); });
  });
}

// select shows the range [since, until) (ns from the start; until 0 is the
// end) in every view.
function select(since, until) {
  if (until && until <= since) return;
  state.since = since;
  state.until = until;
  showSelection();
  refresh();
}

// saveURL keeps the selection, sample type and inversion in the URL's
// fragment, so that the link (token included) reopens the same view.
function saveURL() {
  const p = new URLSearchParams();
  if (state.since) p.set("since", state.since);
  if (state.until) p.set("until", state.until);
  if (state.value) p.set("value", state.value);
  if (state.invert) p.set("invert", "1");
  if (state.pid) p.set("pid", state.pid);
  if (state.tid) p.set("tid", state.tid);
  if (state.container) p.set("container", state.container);
  history.replaceState(null, "", p.toString() ? "#" + p.toString() : location.pathname);
}

// loadURL reads what saveURL wrote, ignoring values out of range.
function loadURL() {
  const p = new URLSearchParams(location.hash.slice(1));
  const int = (k) => { const v = Number(p.get(k) || 0); return Number.isSafeInteger(v) && v >= 0 ? v : 0; };
  const dur = state.meta.duration_ns;
  const since = int("since"), until = int("until");
  if (since < dur && (!until || until > since)) { state.since = since; state.until = until >= dur ? 0 : until; }
  const v = int("value");
  if (p.has("value") && v < state.meta.sample_types.length) state.value = v;
  state.invert = p.get("invert") === "1";
  state.pid = int("pid");
  state.tid = int("tid");
  state.container = (p.get("container") || "").slice(0, 256);
}

// ---- Flame graph ----

const FN_H = 18;

function fnColour(n) {
  if (n.kernel) return "hsl(" + (20 + (hashHue(n.function) % 20)) + ",75%,68%)";
  return "hsl(" + (hashHue(n.function) % 50) + ",80%," + (58 + (hashHue(n.dso) % 14)) + "%)";
}

function pathTo(root, target) {
  const path = [];
  const walk = (n) => {
    path.push(n);
    if (n === target) return true;
    for (const c of n.children || []) if (walk(c)) return true;
    path.pop();
    return false;
  };
  walk(root);
  return path;
}

function drawFlame() {
  const box = $("flame");
  box.replaceChildren();
  const f = state.flame;
  $("flame-total").textContent = fmtValue(f.total, f.sample_type.unit);
  $("flame-total").dataset.total = f.total;
  $("flame-total").dataset.since = f.since_ns;
  $("flame-total").dataset.until = f.until_ns;
  $("flame-info").textContent = f.samples + " samples" + (f.hidden_nodes ? "; " + f.hidden_nodes + " nodes under " + fmtValue(f.min_total + 1, f.sample_type.unit) + " not shown" : "");
  if (!f.total) { box.append(el("div", "No samples in the selection.")); box.style.height = "40px"; return; }
  const W = box.clientWidth;
  const zoom = state.zoom || f.root;
  const chain = pathTo(f.root, zoom);
  const q = state.search.toLowerCase();
  let depthMax = 0;
  const add = (n, depth, x, w, dim) => {
    if (w < 1) return;
    depthMax = Math.max(depthMax, depth);
    const d = el("div", shown(n === f.root ? "all (" + fmtValue(n.total, f.sample_type.unit) + ")" : n.function), "fn");
    d.style.left = x + "px";
    d.style.width = w + "px";
    d.style.top = depth * FN_H + "px";
    d.style.background = n === f.root ? "#c8c8d0" : fnColour(n);
    if (dim) d.classList.add("dim");
    if (n.inlined) d.classList.add("inl");
    if (q && n !== f.root && n.function.toLowerCase().includes(q)) d.classList.add("match");
    d.addEventListener("click", () => { state.zoom = n === f.root ? null : n; drawFlame(); });
    d.addEventListener("mousemove", (e) => {
      const pct = ((100 * n.total) / f.total).toFixed(2);
      tip(e, [n === f.root ? "all" : n.function, n.dso ? "in " + n.dso : "", inlinedText(n, f.invert), sourceText(n),
        "total " + fmtValue(n.total, f.sample_type.unit) + " (" + pct + "%)", "self " + fmtValue(n.self, f.sample_type.unit)].filter(Boolean));
    });
    d.addEventListener("mouseleave", (e) => tip(e, null));
    box.append(d);
  };
  chain.forEach((n, i) => { if (n !== zoom) add(n, i, 0, W, true); });
  const base = chain.length - 1;
  const scale = W / Math.max(1, zoom.total);
  const walk = (n, depth, x) => {
    add(n, depth, x, n.total * scale, false);
    let cx = x;
    for (const c of n.children || []) {
      if (c.total * scale >= 1) walk(c, depth + 1, cx);
      cx += c.total * scale;
    }
  };
  walk(zoom, base, 0);
  box.style.height = (depthMax + 1) * FN_H + 2 + "px";
  if (q) {
    let matched = 0;
    const m = (n) => { if (n !== f.root && n.function.toLowerCase().includes(q)) { matched += n.total; return; } (n.children || []).forEach(m); };
    m(f.root);
    $("flame-info").textContent += "; search matches " + ((100 * matched) / f.total).toFixed(2) + "%";
  }
}

// sourceText says where node n's time went in the source, "" when no
// file is known.
function sourceText(n) {
  if (!n.source) return "";
  return "at " + n.source + (n.lines > 1 ? " (most of it; " + n.lines + " lines)" : "");
}

// inlinedText says that node n was an inlined call, "" when it was not.
function inlinedText(n, invert) {
  if (!n.inlined) return "";
  return invert ? "inlined: its callee above was inlined in it" : "inlined in its caller";
}

// ---- Call tree ----

// drawCallTree lists the call tree's nodes whose ancestors are all
// expanded, each indented by its depth.
function drawCallTree() {
  const box = $("calltree");
  box.replaceChildren();
  const f = state.ctree;
  if (!f) return;
  const u = f.sample_type.unit;
  let rows = 0;
  const LIMIT = 3000;
  const add = (n, depth) => {
    if (rows++ >= LIMIT) return;
    const open = state.expanded.has(n);
    const kids = n.children || [];
    const r = el("div", undefined, "ct-row");
    r.setAttribute("role", "treeitem");
    r.style.paddingLeft = 4 + depth * 14 + "px";
    r.append(el("span", kids.length ? (open ? "▾" : "▸") : " ", "tog"), el("span", fmtValue(n.total, u), "num"),
      el("span", ((100 * n.total) / Math.max(1, f.total)).toFixed(2) + "%", "pct"), el("span", fmtValue(n.self, u), "num"),
      el("span", shown(n.function), "fname"), el("span", n.inlined ? "inlined" : "", "inl"), el("span", shown(n.source || ""), "src"), el("span", shown(n.dso), "dso"));
    r.addEventListener("mousemove", (e) => tip(e, [n.function, inlinedText(n, f.invert), sourceText(n)].filter(Boolean)));
    r.addEventListener("mouseleave", (e) => tip(e, null));
    r.addEventListener("click", () => {
      if (!kids.length) return;
      if (open) state.expanded.delete(n); else state.expanded.add(n);
      drawCallTree();
    });
    box.append(r);
    if (open) for (const c of kids) add(c, depth + 1);
  };
  const head = el("div", undefined, "ct-row ct-head");
  head.append(el("span", " ", "tog"), el("span", "Total", "num"), el("span", "%", "pct"), el("span", f.invert ? "Outermost" : "Self", "num"), el("span", "Function", "fname"), el("span", "", "inl"), el("span", "Source", "src"), el("span", "DSO", "dso"));
  box.append(head);
  for (const c of f.root.children || []) add(c, 0);
  $("tree-info").textContent = (f.invert ? "callers of each function" : "callees from each root") + "; total " + fmtValue(f.total, u) +
    (rows > LIMIT ? "; first " + LIMIT + " rows" : "") + (f.hidden_nodes ? "; " + f.hidden_nodes + " small nodes not shown" : "");
}

// setCallTree shows tree f, its heaviest path expanded while a node has
// one child or its first child holds most of its total.
function setCallTree(f) {
  state.ctree = f;
  state.expanded = new Set();
  let n = f.root.children && f.root.children[0];
  for (let i = 0; n && i < 30; i++) {
    const kids = n.children || [];
    if (!kids.length) break;
    state.expanded.add(n);
    if (kids[0].total * 2 < n.total) break;
    n = kids[0];
  }
  drawCallTree();
}

// ---- Tables ----

function drawTop(doc) {
  const tb = $("top").tBodies[0];
  tb.replaceChildren();
  const u = doc.sample_type.unit;
  const fns = doc.functions || [];
  for (const f of fns) {
    const tr = el("tr");
    tr.append(el("td", fmtValue(f.self, u)), el("td", f.self_percent.toFixed(2)), el("td", fmtValue(f.total, u)), el("td", f.total_percent.toFixed(2)),
      el("td", shown(f.function), "name"), el("td", shown(f.dso), "name"), el("td", shown(f.source || ""), "name src"));
    tb.append(tr);
  }
  const n = doc.function_count || 0;
  $("top-info").textContent = n > fns.length ? "(first " + fns.length + " of " + n + ")" : "(" + n + " functions)";
}

// drawMarks lists the marks of the range by group and name with their
// durations, as nsprof report --marks does.
function drawMarks(doc) {
  const tb = $("marks").tBodies[0];
  tb.replaceChildren();
  for (const m of doc.stats) {
    const tr = el("tr");
    tr.append(el("td", shown(m.group), "name"), el("td", shown(m.name), "name"), el("td", String(m.count)), el("td", fmtNs(m.total_ns)),
      el("td", fmtNs(m.min_ns)), el("td", fmtNs(m.median_ns)), el("td", fmtNs(m.mean_ns)), el("td", fmtNs(m.p95_ns)), el("td", fmtNs(m.max_ns)));
    tb.append(tr);
  }
  $("marks-info").textContent = "(" + doc.total + " in the range)";
  const lb = $("longest").tBodies[0];
  lb.replaceChildren();
  for (const m of doc.longest) {
    const tr = el("tr");
    tr.append(el("td", fmtNs(m.start_ns)), el("td", fmtNs(m.dur_ns)), el("td", String(m.pid)), el("td", shown(m.group + ":" + m.name), "name"),
      el("td", shown(m.message || ""), "name"));
    tr.addEventListener("click", () => select(m.start_ns, m.start_ns + Math.max(m.dur_ns, 1)));
    lb.append(tr);
  }
}

// drawCounters lists each counter's updates in the range, as nsprof
// report --counters does.
function drawCounters(doc) {
  const tb = $("counters").tBodies[0];
  tb.replaceChildren();
  const num = (v) => Number.isInteger(v) ? String(v) : v.toFixed(2);
  let updated = 0;
  for (const c of doc.counters) {
    const tr = el("tr");
    tr.append(el("td", shown(c.category), "name"), el("td", shown(c.name), "name"), el("td", String(c.count)),
      ...(c.count ? [c.min, c.mean, c.max, c.last].map((v) => el("td", num(v))) : ["", "", "", ""].map((v) => el("td", v))));
    tb.append(tr);
    if (c.count) updated++;
  }
  $("counters-info").textContent = "(" + doc.counters.length + " counters, " + updated + " updated in the range)";
}

// drawCapture lists the capture's facts (report --summary's JSON).
function drawCapture(doc) {
  const c = doc.capture;
  const rows = [["File", c.file], ["Captured", c.capture_time], ["Duration", fmtNs(Math.round(c.duration_seconds * 1e9))],
    ["CPUs sampled", String((c.cpus || []).length)], ["Samples", c.samples + (c.lost_samples !== undefined ? " (lost: " + c.lost_samples + ")" : "")],
    ["Processes", c.processes + " (" + c.sampled_processes + " sampled)"], ["Threads", String(c.threads)]];
  for (const k of Object.keys(c.metadata || {}).sort()) rows.push([k, c.metadata[k]]);
  if (c.collector) {
    const k = c.collector;
    rows.push(["Collector", k.frames + " frames from the SYSPROF_CONTROL_FD rings, full " + k.rings_full + " times (" + fmtNs(k.blocked_ns) + " blocked, about " + k.lost_estimate + " frames lost)"]);
  }
  for (const w of c.warnings || []) rows.push(["Warning", w]);
  const tb = $("capture").tBodies[0];
  tb.replaceChildren();
  for (const [k, v] of rows) {
    const tr = el("tr");
    tr.append(el("td", shown(k), "name"), el("td", shown(v), "name"));
    tb.append(tr);
  }
  const fb = $("frames").tBodies[0];
  fb.replaceChildren();
  for (const t of Object.keys(doc.frames || {}).sort()) {
    const tr = el("tr");
    tr.append(el("td", t, "name"), el("td", String(doc.frames[t].count)), el("td", String(doc.frames[t].bytes)));
    fb.append(tr);
  }
}

function drawLogs(doc) {
  const tb = $("logs").tBodies[0];
  tb.replaceChildren();
  for (const l of doc.logs) {
    const tr = el("tr");
    tr.append(el("td", fmtNs(l.time_ns)), el("td", String(l.pid)), el("td", l.severity, "name"), el("td", shown(l.domain), "name"), el("td", shown(l.message), "name"));
    tb.append(tr);
  }
  $("logs-info").textContent = doc.total > doc.logs.length ? "(first " + doc.logs.length + " of " + doc.total + " in the range)" : "(" + doc.total + " in the range)";
}

// drawProcs lists the containers, each with its processes, and their
// totals by sample type; a click on a row filters the views to it.
function drawProcs() {
  const types = state.meta.sample_types;
  const hr = $("procs").tHead.rows[0];
  hr.replaceChildren(...["Container", "PID", "NS PID", "Comm", "Command line", "Threads"].map((h) => el("th", h)),
    ...types.map((t) => el("th", t.type)), el("th", "Start"), el("th", "End"));
  const tb = $("procs").tBodies[0];
  tb.replaceChildren();
  const vals = (v) => types.map((t, i) => el("td", fmtValue(v ? v[i] : 0, t.unit)));
  const row = (tr, f) => {
    const on = f.container ? state.container === f.container && !state.pid : state.pid === f.pid && !state.tid && !state.container;
    if (on) tr.classList.add("sel");
    tr.addEventListener("click", () => toggleFilter(f));
    tb.append(tr);
  };
  for (const c of state.meta.containers) {
    const tr = el("tr", undefined, "container");
    tr.dataset.container = c.label;
    tr.append(el("td", shown(c.label), "name"), el("td", ""), el("td", ""), el("td", c.processes.length + (c.processes.length === 1 ? " process" : " processes"), "name"), el("td", "", "name"),
      el("td", ""), ...vals(c.values), el("td", ""), el("td", ""));
    row(tr, { container: c.label });
    for (const p of c.processes) {
      const tr = el("tr");
      tr.dataset.pid = p.pid;
      // A process that exec'd lists the programs it ran before.
      const cmd = el("td", shown(p.cmdline), "name");
      for (const g of (p.programs || []).slice(0, -1)) {
        cmd.append(el("div", "before exec: " + shown(g.cmdline || "[" + g.comm + "]"), "prior"));
      }
      tr.append(el("td", "", "name"), el("td", String(p.pid)), el("td", p.nspid ? String(p.nspid) : ""), el("td", shown(p.comm), "name"),
        cmd, el("td", String(p.threads.length)), ...vals(p.values), el("td", fmtNs(p.start_ns)),
        el("td", p.exited ? fmtNs(p.end_ns) : "–"));
      row(tr, { pid: p.pid });
    }
  }
}

// ---- Loading ----

let generation = 0;
// timings are what the page measured, in ms: firstReadyMs since the
// navigation started, lastRefreshMs for the last selection's views.
const timings = {};

async function refresh() {
  const gen = ++generation;
  saveURL();
  document.body.dataset.ready = "0";
  status("Computing…");
  const t0 = performance.now();
  try {
    const p = selParams();
    const treeInvert = $("tree-dir").value === "1";
    const [fl, top, ct, logs, marks, counters] = await Promise.all([api("flame", Object.assign({ invert: state.invert ? 1 : 0 }, p)), api("top", p),
      treeInvert === state.invert ? null : api("flame", Object.assign({ invert: treeInvert ? 1 : 0 }, p)),
      state.meta.logs ? api("logs", Object.assign({ limit: 1000 }, p)) : { total: 0, logs: [] },
      state.meta.marks ? api("marks", p) : { total: 0, stats: [], longest: [] },
      state.meta.counters ? api("counters", p) : { counters: [] }]);
    if (gen !== generation) return;
    state.flame = fl;
    state.zoom = null;
    $("pprof-link").href = "pprof/" + state.since + "-" + state.until + "-" + state.value + pprofFilter() + "/";
    drawFlame();
    drawTop(top);
    setCallTree(ct || fl);
    drawLogs(logs);
    drawMarks(marks);
    drawCounters(counters);
    const now = performance.now();
    timings.lastRefreshMs = now - t0;
    if (timings.firstReadyMs === undefined) timings.firstReadyMs = now;
    status("Ready (" + Math.round(now - t0) + " ms)");
    document.body.dataset.ready = "1";
  } catch (err) {
    if (gen === generation) status("Error: " + err.message);
  }
}

// pprofFilter returns the pprof selection's filter part: "-" and the
// filter's query in base64url, "" for none.
function pprofFilter() {
  const q = new URLSearchParams(filterParams()).toString();
  if (!q) return "";
  let bin = "";
  for (const b of new TextEncoder().encode(q)) bin += String.fromCharCode(b);
  return "-" + btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function loadTimeline() {
  const t0 = performance.now();
  state.timeline = await api("timeline", { value: state.value, buckets: Math.max(100, Math.min(4000, Math.round(plotW()))) });
  const t1 = performance.now();
  layoutAndDraw();
  timings.timelineFetchMs = t1 - t0;
  timings.timelineDrawMs = performance.now() - t1;
}

async function main() {
  initTimeline();
  timings.startMs = performance.now();
  try {
    state.meta = await api("meta", {});
    timings.metaMs = performance.now();
  } catch (err) {
    status("Error: " + err.message);
    return;
  }
  const m = state.meta;
  $("title").textContent = shown(m.file || "nsprof");
  document.title = shown((m.file || "capture") + " – nsprof web");
  const sel = $("value");
  m.sample_types.forEach((t, i) => {
    const o = el("option", t.type + " (" + fmtValue(t.total, t.unit) + ")");
    o.value = String(i);
    sel.append(o);
  });
  sel.addEventListener("change", async () => { state.value = +sel.value; await loadTimeline(); refresh(); });
  $("invert").addEventListener("change", (e) => { state.invert = e.target.checked; refresh(); });
  $("search").addEventListener("input", (e) => { state.search = e.target.value; if (state.flame) drawFlame(); });
  $("unzoom").addEventListener("click", () => { state.zoom = null; if (state.flame) drawFlame(); });
  $("clear").addEventListener("click", () => select(0, 0));
  $("clear-filter").addEventListener("click", () => setFilter({}));
  $("tree-dir").addEventListener("change", refresh);
  // Keys: Escape selects the whole capture and every process (or leaves
  // the search box), "/" goes to the search box, "i" inverts the flame
  // graph.
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === $("search")) {
      if (e.key === "Escape") $("search").blur();
      return;
    }
    if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT" && e.target.type !== "checkbox") return;
    if (e.key === "Escape") { state.zoom = null; state.pid = state.tid = 0; state.container = ""; showFilter(); drawProcs(); select(0, 0); } else if (e.key === "/") { e.preventDefault(); $("search").focus(); } else if (e.key === "i") { $("invert").click(); }
  });
  // A capture of allocations alone (record --memprof --no-perf) has no
  // stack samples: its views weigh the bytes allocated by default.
  const types = m.sample_types;
  if (types.length && types[0].total === 0) {
    const alloc = types.findIndex((t) => t.type === "alloc_space" && t.total > 0);
    const any = types.findIndex((t) => t.total > 0);
    if (alloc >= 0 || any >= 0) state.value = alloc >= 0 ? alloc : any;
  }
  loadURL();
  sel.value = String(state.value);
  $("invert").checked = state.invert;
  showFilter();
  drawProcs();
  api("summary", {}).then(drawCapture, (err) => status("Error: " + err.message));
  await loadTimeline();
  await refresh();
}

// The hooks a test or a user's console can call.
window.nsprof = { select, setFilter, state, timings };

main();
