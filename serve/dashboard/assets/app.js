// capkit's audit page: the events table first, then the counts, the
// host's state and the charts, then the live stream. Written by hand, no
// dependency; everything it shows is set as text (never as HTML).
"use strict";

const FILTERS = ["actor", "tool", "outcome", "from", "to"];
const MAX_ROWS = 2000; // rows kept in the table; older ones are dropped from the page (not the trail)
const SVGNS = "http://www.w3.org/2000/svg";

const state = { next: "", live: null, seen: new Set(), statsTimer: 0, generation: 0, firstPaint: false, total: undefined, partial: false, statsGap: 1000, stateTimer: 0 };

function $(sel) { return document.querySelector(sel); }

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// The filters are the address's query: what a copied link shows.
function filtersFromURL() {
  const q = new URLSearchParams(location.search);
  const f = {};
  for (const k of FILTERS) { const v = q.get(k); if (v) f[k] = v; }
  return f;
}

function query(f, extra) {
  const q = new URLSearchParams();
  for (const k of FILTERS) if (f[k]) q.set(k, f[k]);
  for (const [k, v] of Object.entries(extra || {})) if (v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

function fillForm(f) {
  const form = $("#filters");
  for (const k of FILTERS) form.elements[k].value = f[k] || "";
}

function formFilters() {
  const form = $("#filters");
  const f = {};
  for (const k of FILTERS) { const v = form.elements[k].value.trim(); if (v) f[k] = v; }
  return f;
}

async function getJSON(path) {
  const r = await fetch(path, { credentials: "same-origin", headers: { "Accept": "application/json" } });
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { const j = await r.json(); if (j.error) msg = j.error; } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  return r.json();
}

function showError(msg) {
  const p = $("#error");
  p.textContent = msg || "";
  p.hidden = !msg;
}

function fmtBytes(n) {
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1024 / 1024).toFixed(1) + " MiB";
}

function fmtUS(us) {
  if (us < 1000) return us + " µs";
  if (us < 1e6) return (us / 1000).toFixed(1) + " ms";
  return (us / 1e6).toFixed(2) + " s";
}

function fmtTime(t) {
  const d = new Date(t);
  return isNaN(d) ? t : d.toISOString().replace("T", " ").replace("Z", "");
}

function rowKey(ev) { return [ev.time, ev.session, ev.request, ev.tool, ev.msg, ev.outcome].join("\u0000"); }

// An event's row: denials and limits are rows of their own kind.
function eventRow(ev) {
  const call = ev.msg === "call";
  const outcome = call ? (ev.outcome || "") : "";
  let kind = "note";
  if (call) kind = outcome === "ok" ? "ok" : outcome === "denied" ? "denial" : outcome === "limit" ? "limit" : "error";
  const tr = el("tr", { class: "event " + kind, "data-actor": ev.actor || "", "data-tool": ev.tool || "", "data-outcome": outcome });
  tr.append(
    el("td", { class: "time" }, fmtTime(ev.time)),
    el("td", { class: "actor" }, ev.actor || ""),
    el("td", { class: "tool" }, ev.tool || ""),
    el("td", { class: "outcome" }, call ? outcome : ev.msg + (ev.lost ? " (" + ev.lost + ")" : "")),
    el("td", { class: "policy" }, ev.policy || ""),
    el("td", { class: "left" }, ev.calls_left === undefined ? "" : ev.calls_left),
    el("td", { class: "in" }, call ? fmtBytes(ev.in_bytes) : ""),
    el("td", { class: "out" }, call ? fmtBytes(ev.out_bytes) : ""),
    el("td", { class: "dur" }, call ? fmtUS(ev.duration_us) : ""),
  );
  return tr;
}

function clearEmpty(tbody) {
  const e = tbody.querySelector("tr.empty");
  if (e) e.remove();
}

function emptyRow(tbody, cols, text) {
  tbody.replaceChildren();
  const tr = el("tr", { class: "empty" });
  tr.append(el("td", { colspan: cols }, text));
  tbody.append(tr);
}

function paintEvents(events, append) {
  const tbody = $("#events tbody");
  if (!append) { tbody.replaceChildren(); state.seen.clear(); }
  for (const ev of events) {
    const k = rowKey(ev);
    if (state.seen.has(k)) continue;
    state.seen.add(k);
    tbody.append(eventRow(ev));
  }
  if (!tbody.children.length) emptyRow(tbody, 9, "no events match");
  $("#older").hidden = !state.next;
}

function prependLive(events) {
  const tbody = $("#events tbody");
  clearEmpty(tbody);
  // events are newest first: insert the oldest first, each on top.
  for (let i = events.length - 1; i >= 0; i--) {
    const ev = events[i];
    const k = rowKey(ev);
    if (state.seen.has(k)) continue;
    state.seen.add(k);
    const tr = eventRow(ev);
    tr.classList.add("fresh");
    tbody.prepend(tr);
  }
  while (tbody.children.length > MAX_ROWS) tbody.lastElementChild.remove();
}

function rate(g) { return g.calls ? (100 * g.errors / g.calls).toFixed(1) + "%" : "–"; }

function groupRows(sel, attr, groups) {
  const tbody = $(sel + " tbody");
  tbody.replaceChildren();
  for (const g of groups || []) {
    const tr = el("tr", { [attr]: g.name });
    tr.append(el("td", {}, g.name), el("td", { class: "num" }, g.calls), el("td", { class: "num" }, g.errors),
      el("td", { class: "num" }, rate(g)), el("td", { class: "num" }, g.denials), el("td", { class: "num" }, g.limits),
      el("td", { class: "num" }, fmtUS(g.p50_us)), el("td", { class: "num" }, fmtUS(g.p95_us)), el("td", { class: "num" }, fmtUS(g.p99_us)));
    tbody.append(tr);
  }
  if (!tbody.children.length) emptyRow(tbody, 9, "no calls");
}

function paintStats(st) {
  const t = $("#totals");
  t.replaceChildren();
  const box = (label, v) => { const d = el("div", {}); d.append(el("b", {}, v), el("span", { class: "muted" }, label)); t.append(d); };
  box("calls", st.calls);
  box("errors", st.errors);
  box("error rate", rate(st));
  box("denials", st.denials);
  box("limits", st.limits);
  groupRows("#stats", "data-tool", st.tools);
  groupRows("#actors", "data-actor", st.actors);
  callsChart(st.buckets || [], st.bucket_seconds || 0);
  latencyChart(st.tools || []);
}

function callsChart(buckets, secs) {
  const s = $("#calls-chart");
  s.replaceChildren();
  const W = 600, H = 180, L = 36, B = 22, T = 8;
  s.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W, y2: H - B }));
  if (!buckets.length) { s.append(svg("text", { x: L + 8, y: H / 2 }, "no calls")); return; }
  const max = Math.max(1, ...buckets.map(b => b.calls));
  const bw = (W - L) / buckets.length;
  buckets.forEach((b, i) => {
    const h = (H - B - T) * b.calls / max, he = (H - B - T) * b.errors / max;
    const x = L + i * bw;
    const title = fmtTime(b.start) + ": " + b.calls + " calls, " + b.errors + " errors";
    const r = svg("rect", { class: "calls", x: x + 1, y: H - B - h, width: Math.max(1, bw - 2), height: h });
    r.append(svg("title", {}, title));
    s.append(r);
    if (b.errors) {
      const e = svg("rect", { class: "errors", x: x + 1, y: H - B - he, width: Math.max(1, bw - 2), height: he });
      e.append(svg("title", {}, title));
      s.append(e);
    }
  });
  s.append(svg("text", { x: 2, y: T + 8 }, max), svg("text", { x: 2, y: H - B }, 0),
    svg("text", { x: L, y: H - 6 }, fmtTime(buckets[0].start)),
    svg("text", { x: W - 4, y: H - 6, "text-anchor": "end" }, secs + " s a bar"));
}

// The latency chart: a row of p50, p95 and p99 bars for each of the
// busiest tools (at most the page's data-max-tools, the server's bound),
// on a log scale from a microsecond, so that a tool of a few µs shows
// next to one of seconds.
const DECADES = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];

function tickLabel(us) {
  if (us < 1e3) return us + " µs";
  if (us < 1e6) return us / 1e3 + " ms";
  return us / 1e6 + " s";
}

function latencyChart(tools) {
  const s = $("#latency-chart");
  s.replaceChildren();
  const bound = Number(s.dataset.maxTools) || tools.length;
  const list = tools.slice(0, bound), left = tools.length - list.length;
  const W = 600, L = 130, R = 60, bar = 7, gap = 13, T = 8, axis = 16;
  const per = 3 * bar + gap; // a tool's three bars and the space after them
  const H = T + list.length * per + axis + (left ? 16 : 0);
  s.setAttribute("viewBox", "0 0 " + W + " " + Math.max(60, H));
  if (!list.length) { s.append(svg("text", { x: 8, y: 30 }, "no calls")); return; }
  const top = DECADES.find(d => d >= Math.max(10, ...list.map(t => t.p99_us))) || DECADES[DECADES.length - 1];
  const span = Math.log10(top), plot = W - L - R;
  const x = us => L + plot * Math.log10(Math.max(1, Math.min(us, top))) / span;
  const bottom = T + list.length * per;
  for (const d of DECADES.filter(d => d <= top)) {
    s.append(svg("line", { class: "tick", x1: x(d), y1: T, x2: x(d), y2: bottom }),
      svg("text", { class: "tick", x: x(d), y: bottom + 11, "text-anchor": "middle" }, tickLabel(d)));
  }
  let y = T;
  for (const t of list) {
    s.append(svg("text", { x: L - 6, y: y + 14, "text-anchor": "end" }, t.name));
    for (const p of ["p50", "p95", "p99"]) {
      const v = t[p + "_us"];
      const r = svg("rect", { class: p, "data-tool": t.name, x: L, y: y, width: Math.max(1, x(v) - L), height: bar - 1 });
      r.append(svg("title", {}, t.name + " " + p + ": " + fmtUS(v)));
      s.append(r);
      y += bar;
    }
    s.append(svg("text", { x: W - 2, y: y - 2, "text-anchor": "end" }, fmtUS(t.p99_us)));
    y += gap;
  }
  if (left) {
    s.append(svg("text", { class: "more", x: L, y: bottom + axis + 12 },
      left + " more tool" + (left === 1 ? "" : "s") + " not drawn (the chart shows the " + list.length + " busiest; the tools table lists all)"));
  }
}

function paintState(st) {
  $("#source").textContent = st.source || "";
  const c = st.chain || {};
  const chain = $("#chain");
  if (c.broken) {
    chain.dataset.state = "broken";
    chain.textContent = "chain broken: " + c.broken;
  } else if (!c.streams) {
    chain.dataset.state = "unchained";
    chain.textContent = "in memory, not chained: " + (c.total || 0) + " events" + (st.chain_hint ? "; " + st.chain_hint : "");
  } else {
    chain.dataset.state = "ok";
    chain.textContent = "chain holds: " + c.records + " of " + c.total + " records verified" +
      (c.streams > 1 ? " in " + c.streams + " streams" : "") + (c.missing ? ", " + c.missing + " waiting" : "");
  }
  chain.title = c.head ? "head " + c.head : "";
  const partial = $("#partial");
  partial.hidden = !c.partial;
  partial.textContent = c.partial ? "counts are partial: the trail is still being indexed, " + c.total + " records so far (" +
    fmtBytes(Math.min(c.read_bytes || 0, c.size_bytes || 0)) + " of " + fmtBytes(c.size_bytes || 0) + " read); they are counted again when it is done" : "";
  const b = $("#budgets tbody");
  b.replaceChildren();
  for (const x of st.budgets || []) {
    const tr = el("tr", { "data-group": x.group, "data-unit": x.unit });
    tr.append(el("td", {}, x.group), el("td", {}, x.unit), el("td", { class: "num" }, x.used), el("td", { class: "num" }, x.limit),
      el("td", { class: "num" }, Math.max(0, x.limit - x.used)),
      el("td", {}, x.window_seconds + " s, " + Math.round(x.window_remaining_seconds) + " s left"), el("td", {}, x.state));
    b.append(tr);
  }
  if (!b.children.length) emptyRow(b, 7, "no budget configured");
  const u = $("#upstreams tbody");
  u.replaceChildren();
  for (const x of st.upstreams || []) {
    const tr = el("tr", { "data-upstream": x.upstream, "data-state": x.state });
    tr.append(el("td", {}, x.upstream), el("td", {}, x.tool), el("td", {}, x.state === "new" ? "awaiting review" : "withdrawn (" + x.state + ")"),
      el("td", {}, x.reason || ""));
    u.append(tr);
  }
  if (!u.children.length) emptyRow(u, 4, "none");
  for (const [id, names] of [["#actor-names", st.actors], ["#tool-names", st.tools]]) {
    const dl = $(id);
    dl.replaceChildren(...(names || []).map(n => el("option", { value: n })));
  }
}

// refreshStats repaints the counts. Counting a large trail takes a while:
// the next refresh waits at least five times as long as this one took.
async function refreshStats(gen) {
  const t0 = performance.now();
  try {
    const st = await getJSON("/api/stats" + query(filtersFromURL()));
    if (gen === state.generation) paintStats(st);
  } catch (e) { if (gen === state.generation) showError("stats: " + e.message); }
  state.statsGap = Math.max(1000, 5 * (performance.now() - t0));
}

// refreshState repaints the host's state, and the counts when the source
// read more of its trail since (an index still being built).
async function refreshState() {
  try {
    const st = await getJSON("/api/state");
    paintState(st);
    const c = st.chain || {}, total = c.total || 0;
    if (state.partial && !c.partial) refreshStats(state.generation); // the index is done: the counts are whole now
    else if (state.total !== undefined && total !== state.total) statsSoon(state.generation);
    state.total = total;
    state.partial = !!c.partial;
    if (c.partial) stateSoon(); // follow the index closely until it is done
  } catch (e) { showError("state: " + e.message); }
}

function statsSoon(gen) {
  if (state.statsTimer) return;
  state.statsTimer = setTimeout(() => { state.statsTimer = 0; refreshStats(gen); }, state.statsGap);
}

function stateSoon() {
  if (state.stateTimer) return;
  state.stateTimer = setTimeout(() => { state.stateTimer = 0; refreshState(); }, 1000);
}

function setLive(on) {
  document.body.dataset.live = on ? "1" : "0";
  $("#live-state").textContent = on ? "live" : "not live";
}

function openLive(f, position, gen) {
  if (state.live) state.live.close();
  setLive(false);
  const es = new EventSource("/api/live" + query(f, { after: position }));
  state.live = es;
  es.onopen = () => { if (state.live === es) setLive(true); };
  es.onerror = () => { if (state.live === es) setLive(es.readyState === EventSource.OPEN); };
  es.addEventListener("events", (m) => {
    if (gen !== state.generation) return;
    const msg = JSON.parse(m.data);
    prependLive(msg.events || []);
    statsSoon(gen);
    stateSoon(); // the chain box's count and the budgets follow the calls
  });
}

// load shows the selection in the address: rows first (they must not
// wait for the counts over everything), then counts, state and live.
async function load() {
  const gen = ++state.generation;
  const f = filtersFromURL();
  fillForm(f);
  showError("");
  let page;
  try {
    page = await getJSON("/api/events" + query(f));
  } catch (e) {
    if (gen !== state.generation) return;
    showError(e.message);
    emptyRow($("#events tbody"), 9, "could not load events");
    page = null;
  }
  if (gen !== state.generation) return;
  if (page) {
    state.next = page.next || "";
    paintEvents(page.events || [], false);
  }
  if (!state.firstPaint) {
    state.firstPaint = true;
    performance.mark("capkit-first-rows");
    document.body.dataset.ready = "1";
  }
  if (page) openLive(f, page.position, gen);
  refreshStats(gen);
  refreshState();
}

async function older() {
  if (!state.next) return;
  const gen = state.generation;
  try {
    const page = await getJSON("/api/events" + query(filtersFromURL(), { cursor: state.next }));
    if (gen !== state.generation) return;
    state.next = page.next || "";
    paintEvents(page.events || [], true);
  } catch (e) { showError(e.message); }
}

function navigate(f) {
  const url = location.pathname + query(f);
  if (url !== location.pathname + location.search) history.pushState(null, "", url);
  load();
}

document.addEventListener("DOMContentLoaded", () => {
  $("#filters").addEventListener("submit", (e) => { e.preventDefault(); navigate(formFilters()); });
  $("#clear").addEventListener("click", () => navigate({}));
  $("#older").addEventListener("click", older);
  window.addEventListener("popstate", load);
  setInterval(refreshState, 5000);
  load();
});
