// muster dashboard: plain JavaScript, no build step. State lives in the URL hash
// (#queue=…&status=…&q=…&job=…) so every view can be linked and reloaded.
"use strict";

const REFRESH_MS = 2000;
// History moves in minutes: it is read far less often than the rest.
const HISTORY_MS = 30000;
const HISTORY_HOURS = 3;
const STATUSES = ["running", "pending", "preempted", "completed", "failed"];
// Colour-blind-friendly hues, assigned to queues in tree order so every panel agrees.
const PALETTE = ["#3056d3", "#1f9d74", "#d97706", "#b4457f", "#7c4dcc", "#0e8fb0", "#c2410c", "#5b7f1f", "#8a5a44", "#4b5b8c"];

// What each kind of why-timeline entry (muster.store.timeline) is called on the page.
const KIND_LABEL = {
  created: "submitted", waiting: "waiting", bind_requested: "placed", bound: "started", bind_failed: "bind failed",
  eviction_requested: "eviction", made_room: "made room", evicted: "evicted", completed: "completed", failed: "failed",
  deleted: "deleted",
};
const state = { queue: "", status: "", q: "", job: "" };
const data = { overview: null, queues: [], jobs: { total: 0, jobs: [] }, nodes: [], activity: [], job: null, history: null };
const queueColour = new Map();
let newestSeen = 0;
let historyAt = 0;
let firstLoad = true;

const $ = (id) => document.getElementById(id);
// Re-render a region only when its markup changed, so an idle page keeps its DOM (hover, focus, clicks).
const shown = new Map();
function setHtml(id, html) {
  if (shown.get(id) === html) return;
  shown.set(id, html);
  $(id).innerHTML = html;
  applyStyles($(id));
}
// The page runs under a Content-Security-Policy without 'unsafe-inline', which drops style attributes
// written in markup: templates write data-style instead, applied here through the CSSOM, which it allows.
function applyStyles(root) {
  for (const el of root.querySelectorAll("[data-style]")) {
    for (const declaration of el.dataset.style.split(";")) {
      const colon = declaration.indexOf(":");
      if (colon > 0) el.style.setProperty(declaration.slice(0, colon).trim(), declaration.slice(colon + 1).trim());
    }
  }
}
const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ESC[c]);

// ---- formatting --------------------------------------------------------------

function num(v, digits = 2) {
  if (v === null || v === undefined) return "–";
  const r = Math.round(v * 10 ** digits) / 10 ** digits;
  return r.toLocaleString("en-US", { maximumFractionDigits: digits });
}
function bytes(v) {
  if (!v) return "0";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${num(v, v >= 100 ? 0 : 1)} ${units[i]}`;
}
function amount(res, v) {
  if (res === "memory") return bytes(v);
  return num(v);
}
function clock(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}
function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 5) return "just now";
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(iso).toLocaleDateString();
}
function fraction(share) {
  const known = { 0.25: "¼", 0.5: "½", 0.75: "¾" };
  return known[share] || num(share, 2);
}
const badge = (status) => `<span class="badge s-${esc(status)}">${esc(status)}</span>`;
const colourOf = (queue) => queueColour.get(queue) || "#8a96a8";
const qtag = (queue) => `<span class="qtag"><i data-style="background:${colourOf(queue)}"></i>${esc(queue)}</span>`;

// ---- state in the URL ----------------------------------------------------------

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  for (const k of Object.keys(state)) state[k] = p.get(k) || "";
}
function writeHash() {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v) p.set(k, v);
  const h = p.toString();
  if (location.hash.slice(1) !== h) history.replaceState(null, "", h ? `#${h}` : location.pathname);
}
function setState(patch) {
  Object.assign(state, patch);
  writeHash();
  renderFilters();
  refresh();
}

// ---- fetching ----------------------------------------------------------------

// Listening beyond loopback, the API takes a bearer token. `muster up` prints the page's address with it in
// the fragment (#token=…), which no request, log or Referer carries: the tab keeps it, the address bar drops it.
const TOKEN_KEY = "muster-dashboard-token";
function takeToken() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (!p.has("token")) return;
  sessionStorage.setItem(TOKEN_KEY, p.get("token"));
  p.delete("token");
  const h = p.toString();
  history.replaceState(null, "", h ? `#${h}` : location.pathname);
}

async function api(path) {
  const headers = { accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers });
  const body = await res.json();
  if (!res.ok) throw Object.assign(new Error(body.error || res.statusText), { status: res.status, field: body.field });
  return body;
}

let inFlight = null;
let again = false;
async function refresh() {
  // One refresh at a time; a request made meanwhile runs once when it ends, with the newest state.
  if (inFlight) { again = true; return inFlight; }
  const jobQuery = new URLSearchParams();
  if (state.queue) jobQuery.set("queue", state.queue);
  if (state.status) jobQuery.set("status", state.status);
  if (state.q) jobQuery.set("q", state.q);
  inFlight = (async () => {
    try {
      const [overview, queues, jobs, nodes, activity] = await Promise.all([
        api("/api/overview"),
        api("/api/queues"),
        api(`/api/jobs?${jobQuery}`).catch((e) => (e.status === 404 ? { total: 0, jobs: [], missing: e.message } : Promise.reject(e))),
        api("/api/nodes"),
        api("/api/activity?limit=60"),
      ]);
      Object.assign(data, { overview, queues: queues.queues, jobs, nodes: nodes.nodes, nodesTotal: nodes.total, activity: activity.decisions });
      data.job = state.job ? await api(`/api/jobs/${encodeURIComponent(state.job)}`).catch((e) => ({ missing: e.message })) : null;
      if (Date.now() - historyAt > HISTORY_MS) {
        data.history = await api(`/api/history?hours=${HISTORY_HOURS}`);
        historyAt = Date.now();
      }
      assignColours();
      render();
      setLive(true);
    } catch (e) {
      setLive(false, e.message);
    } finally {
      inFlight = null;
      if (again) { again = false; refresh(); }
    }
  })();
  return inFlight;
}

function setLive(ok, message) {
  $("live").className = `live ${ok ? "ok" : "down"}`;
  const ov = data.overview;
  $("live-text").textContent = ok ? `live · event ${num(ov ? ov.last_seq : 0, 0)}` : "disconnected";
  const banner = $("banner");
  banner.hidden = ok;
  if (!ok) banner.textContent = `Cannot reach the muster API (${message}). Retrying every ${REFRESH_MS / 1000} s…`;
}

function walk(nodes, fn, depth = 0) {
  for (const n of nodes) { fn(n, depth); walk(n.children, fn, depth + 1); }
}
function assignColours() {
  let i = queueColour.size;
  walk(data.queues, (q) => {
    if (!q.children.length && !queueColour.has(q.name)) queueColour.set(q.name, PALETTE[i++ % PALETTE.length]);
  });
}

// ---- rendering ------------------------------------------------------------------

function render() {
  renderSummary();
  renderQueues();
  renderJobs();
  renderActivity();
  renderHistory();
  renderNodes();
  renderJob();
  firstLoad = false;
}

function renderSummary() {
  const ov = data.overview;
  const gpuPct = ov.gpu.total ? (100 * ov.gpu.used) / ov.gpu.total : 0;
  const stats = [
    `<div class="stat"><b>${num(ov.gpu.used)}</b><span>/ ${num(ov.gpu.total)} GPUs in use</span><span class="meter"><i data-style="width:${gpuPct.toFixed(1)}%"></i></span></div>`,
    ...STATUSES.map((s) => `<div class="stat"><b>${ov.jobs[s] || 0}</b><span>${s}</span></div>`),
    `<div class="stat"><b>${ov.nodes}</b><span>nodes</span></div>`,
    `<div class="stat"><b>${ov.queues}</b><span>queues</span></div>`,
  ];
  if (ov.dead_letters) stats.push(`<div class="stat" title="messages a service could not read"><b data-style="color:var(--red)">${ov.dead_letters}</b><span>dead letters</span></div>`);
  setHtml("summary", stats.join(""));
  const c = ov.last_cycle;
  $("cycle").textContent = c ? `cycle ${c.cycle} · ${c.binds} binds, ${c.evictions} evictions` : "no cycle yet";
}

// The largest figure any queue shows for a resource: every queue's bar is drawn on that one axis, so
// bars compare across queues (a queue with 2 GPUs draws a fifth as long as one with 10).
function axes(queues) {
  const top = {};
  walk(queues, (q) => {
    for (const [res, r] of Object.entries(q.resources)) {
      const marks = [r.quota, r.limit].filter((v) => v > 0);
      top[res] = Math.max(top[res] || 0, r.fair_share, r.allocated, r.requested, ...marks);
    }
  });
  return top;
}

function bar(res, r, axis) {
  const max = Math.max(axis, 1e-9) * 1.04;
  const pct = (v) => `${Math.min(100, (100 * v) / max).toFixed(2)}%`;
  const over = r.quota >= 0 && r.allocated > r.quota + 1e-9;
  const title = `${res}: allocated ${amount(res, r.allocated)}, fair share ${amount(res, r.fair_share)}, ` +
    `quota ${r.quota < 0 ? "unlimited" : amount(res, r.quota)}, limit ${r.limit < 0 ? "none" : amount(res, r.limit)}, ` +
    `requested ${amount(res, r.requested)}, over-quota weight ${num(r.over_quota_weight)}`;
  return `<div class="bar-row" title="${esc(title)}">
    <span class="res">${res === "memory" ? "mem" : res}</span>
    <div class="track">
      <div class="fair" data-style="width:${pct(r.fair_share)}"></div>
      <div class="alloc${over ? " over" : ""}" data-style="width:${pct(r.allocated)}"></div>
      ${r.quota > 0 ? `<div class="mark" data-style="left:${pct(r.quota)}"></div>` : ""}
      ${r.limit > 0 ? `<div class="mark limit" data-style="left:${pct(r.limit)}"></div>` : ""}
    </div>
    <span class="fig"><b>${amount(res, r.allocated)}</b> / ${amount(res, r.fair_share)}${r.quota >= 0 && res === "gpu" ? ` <span title="quota">(q ${amount(res, r.quota)})</span>` : ""}</span>
  </div>`;
}

function queueHtml(q, scale) {
  // Show gpu always; cpu and memory only where the queue asks for or holds any.
  const rows = q.missing
    ? `<div class="missing-note">no such queue: its jobs wait until it is created (<code>muster queues apply</code>)</div>`
    : Object.entries(q.resources)
      .filter(([res, r]) => res === "gpu" || r.requested > 0 || r.allocated > 0 || r.fair_share > 0 && r.quota > 0)
      .map(([res, r]) => bar(res, r, scale[res])).join("");
  const counts = STATUSES.filter((s) => q.jobs[s]).map((s) => `<span class="count s-${s}" title="${q.jobs[s]} ${s}">${q.jobs[s]} ${s === "completed" ? "done" : s}</span>`).join("");
  const dot = q.children.length ? "" : `<span class="qdot" data-style="background:${colourOf(q.name)}"></span>`;
  const kicker = q.missing ? `<span class="tag missing">missing</span>` : `<span class="muted small">prio ${q.priority}</span>`;
  return `<div class="q${state.queue === q.name ? " selected" : ""}${q.missing ? " missing" : ""}" data-queue="${esc(q.name)}" role="button" tabindex="0">
      <div class="q-head">${dot}<span class="q-name">${esc(q.name)}</span>${kicker}<span class="counts">${counts}</span></div>
      ${rows}
    </div>
    ${q.children.length ? `<div class="q-children">${q.children.map((c) => queueHtml(c, scale)).join("")}</div>` : ""}`;
}

function renderQueues() {
  const scale = axes(data.queues);
  setHtml("queue-tree", data.queues.length
    ? data.queues.map((q) => queueHtml(q, scale)).join("")
    : `<div class="empty">No queues yet. Create some with <code>muster queues apply -f FILE</code> or <code>muster apply -f SCENARIO</code>.</div>`);
}

function renderFilters() {
  // Chip counts follow the queue filter: a queue's own counts cover its whole subtree.
  let counts = data.overview ? data.overview.jobs : {};
  if (state.queue) walk(data.queues, (q) => { if (q.name === state.queue) counts = q.jobs; });
  setHtml("status-filter", [["", "all"], ...STATUSES.map((s) => [s, s])]
    .map(([v, label]) => `<button class="chip${state.status === v ? " on" : ""}" data-status="${v}">${label}${v && counts[v] !== undefined ? `<span class="n">${counts[v]}</span>` : ""}</button>`)
    .join(""));
  const qf = $("queue-filter");
  qf.hidden = !state.queue;
  qf.innerHTML = `queue: ${esc(state.queue)} ×`;
  qf.title = "show every queue";
  if ($("search").value !== state.q && document.activeElement !== $("search")) $("search").value = state.q;
}

function whereOrWhy(j) {
  if (j.status === "running" || j.status === "completed") return "";
  return j.reason ? esc(j.reason) : "";
}

function renderJobs() {
  renderFilters();
  const { jobs, total, missing } = data.jobs;
  $("jobs-count").textContent = missing ? "" : jobs.length < total ? `showing ${jobs.length} of ${total}` : `${total} job${total === 1 ? "" : "s"}`;
  if (!jobs.length) {
    const msg = missing ? esc(missing) : state.q || state.status || state.queue ? "No job matches these filters." :
      "No jobs yet. Submit one with <code>muster submit -f FILE</code>.";
    setHtml("job-rows", `<tr><td colspan="6"><div class="empty">${msg}</div></td></tr>`);
    return;
  }
  setHtml("job-rows", jobs.map((j) => `
    <tr data-job="${esc(j.name)}" class="${state.job === j.name ? "selected" : ""}">
      <td><div class="job-name">${esc(j.name)}</div><div class="job-kind">${esc(j.kind)} · prio ${j.priority}${j.preemptible ? "" : " · non-preemptible"}</div></td>
      <td>${qtag(j.queue)}</td>
      <td>${badge(j.status)}</td>
      <td class="num">${j.pods_running}/${j.pods_total}</td>
      <td class="num">${num(j.gpu)}</td>
      <td class="why">${whereOrWhy(j)}</td>
    </tr>`).join(""));
}

function decisionText(d) {
  const pods = `${d.pods} pod${d.pods === 1 ? "" : "s"}`;
  const job = `<a href="#" data-open-job="${esc(d.job)}">${esc(d.job)}</a>`;
  if (d.kind === "bind") {
    return `${job}: ${pods} placed on ${esc(d.nodes.join(", "))}${d.reason === "pipelined" ? " (pipelined)" : ""}`;
  }
  const forJob = d.for_job ? ` for <a href="#" data-open-job="${esc(d.for_job)}">${esc(d.for_job)}</a>` : "";
  return `${esc(d.action || "evict")}: ${job} loses ${pods} on ${esc(d.nodes.join(", "))}${forJob}`;
}

function renderActivity() {
  const items = data.activity;
  if (!items.length) {
    setHtml("activity", `<li class="empty" data-style="display:block">No decisions yet: the allocator has placed nothing.</li>`);
    return;
  }
  const before = newestSeen;
  setHtml("activity", items.map((d) => `
    <li class="${!firstLoad && d.seq > before ? "fresh" : ""}">
      <span class="ico ${d.kind}">${d.kind === "bind" ? "+" : "−"}</span>
      <div>
        <div class="line1">${decisionText(d)}</div>
        <div class="line2">${d.queue ? `${qtag(d.queue)} · ` : ""}cycle ${d.cycle}${d.reason && d.reason !== "pipelined" ? ` · ${esc(d.reason)}` : ""} · <span title="${esc(d.at)}">${ago(d.at)}</span></div>
      </div>
    </li>`).join(""));
  newestSeen = Math.max(before, ...items.map((d) => d.seq));
}

// A series as a stepped SVG path: a figure holds until the next one (statuses are said on change).
function stepPath(values, max, w, h) {
  if (!values.length) return "";
  const dx = w / values.length;
  const y = (v) => (h - (h * Math.min(v, max)) / max).toFixed(1);
  let d = `M0 ${y(values[0])}`;
  values.forEach((v, i) => { d += ` V${y(v)} H${((i + 1) * dx).toFixed(1)}`; });
  return d;
}

function chart(series, max, w, h) {
  return `<svg class="chart" viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" role="img">${series.map(([values, cls, colour]) => {
    const d = stepPath(values, max, w, h);
    const fill = cls === "used" ? `<path class="area" d="${d} V${h} H0 Z"></path>` : "";
    return `${fill}<path class="${cls}" d="${d}"${colour ? ` stroke="${colour}"` : ""}></path>`;
  }).join("")}</svg>`;
}

function renderHistory() {
  const hist = data.history;
  if (!hist) return;
  $("history-span").textContent = `· last ${hist.hours} h, ${num(hist.step / 60, 1)}-minute steps`;
  const leaves = [];
  walk(data.queues, (q) => { if (!q.children.length && !q.missing && hist.queues[q.name]) leaves.push(q.name); });
  // One axis for every queue, as in the queue bars: heights compare across the small charts.
  const top = Math.max(1e-9, ...leaves.flatMap((n) => [...hist.queues[n].allocated, ...hist.queues[n].fair_share]));
  const last = (a) => (a.length ? a[a.length - 1] : 0);
  const total = Math.max(hist.gpu_total, ...hist.used, 1e-9);
  const peak = Math.max(0, ...hist.used);
  const cluster = `<div class="hist-main">
      <div class="hist-head"><b>GPUs in use</b><span class="muted small">now ${num(last(hist.used))} of ${num(hist.gpu_total)} · peak ${num(peak)}</span></div>
      ${chart([[hist.used, "used"]], total, 600, 90)}
      <div class="hist-axis muted small"><span>${hist.hours} h ago</span><span>now</span></div>
    </div>`;
  const small = leaves.map((name) => {
    const q = hist.queues[name];
    return `<div class="hist-q" data-history-queue="${esc(name)}">
      <div class="hist-head">${qtag(name)}<span class="muted small"><b>${num(last(q.allocated))}</b> / ${num(last(q.fair_share))} fair</span></div>
      ${chart([[q.fair_share, "fair"], [q.allocated, "alloc", colourOf(name)]], top, 300, 54)}
    </div>`;
  }).join("");
  setHtml("history", `${cluster}<div class="hist-queues">${small || `<div class="empty">No queue has said anything yet.</div>`}</div>`);
}

function deviceHtml(node, dev) {
  const segs = dev.holders.map((h) => {
    const heightPct = Math.max(4, h.share * 100);
    const label = h.share >= 0.2 ? `<span class="frac">${h.share >= 1 ? "" : fraction(h.share)}</span><span class="who">${esc(h.job)}</span>` : "";
    return `<div class="seg ${esc(h.status)}" data-job="${esc(h.job)}" data-style="height:${heightPct}%;background:${colourOf(h.queue)}" title="${esc(`${h.job} pod ${h.pod} · ${h.share >= 1 ? "whole device" : `${num(h.share)} of the device`} · ${h.status} · queue ${h.queue}`)}">${label}</div>`;
  }).join("");
  const hl = state.job && dev.holders.some((h) => h.job === state.job) ? " hl" : "";
  const free = dev.holders.length ? "" : " free";
  return `<div class="device" title="${esc(node.name)} gpu ${dev.index}: ${num(dev.used * 100, 0)}% held">
    <div class="cell${free}${hl}">${segs}</div>
    <div class="idx">gpu ${dev.index}${dev.used > 0 && dev.used < 1 ? ` · ${num(dev.used)}` : ""}</div>
  </div>`;
}

function renderNodes() {
  const legend = [...queueColour.entries()].map(([q, c]) => `<span><i class="sw dotq" data-style="background:${c}"></i>${esc(q)}</span>`);
  if (data.nodesTotal > data.nodes.length) legend.unshift(`<span>showing the first ${data.nodes.length} of ${data.nodesTotal} nodes</span>`);
  setHtml("queue-legend", legend.join(""));
  if (!data.nodes.length) {
    setHtml("nodes", `<div class="empty">No nodes registered.</div>`);
    return;
  }
  setHtml("nodes", data.nodes.map((n) => {
    const cpuPct = n.total.cpu ? (100 * n.used.cpu) / n.total.cpu : 0;
    const memPct = n.total.memory ? (100 * n.used.memory) / n.total.memory : 0;
    const tags = [n.pool !== "default" ? `pool ${n.pool}` : "", n.gpu_model || "", n.unschedulable ? "cordoned" : ""].filter(Boolean);
    const labels = Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(" · ");
    return `<div class="node${n.unschedulable ? " cordoned" : ""}" data-node="${esc(n.name)}">
      <div class="node-head"><span class="node-name">${esc(n.name)}</span>${tags.map((t) => `<span class="tag">${esc(t)}</span>`).join("")}
        <span class="use"><b>${num(n.used.gpu)}</b> / ${num(n.total.gpu)} GPUs</span></div>
      <div class="node-meta">${n.pods} pod${n.pods === 1 ? "" : "s"}${n.gpu_memory ? ` · ${bytes(n.gpu_memory)} per GPU` : ""}${labels ? ` · ${esc(labels)}` : ""}</div>
      ${n.devices.length ? `<div class="devices">${n.devices.map((d) => deviceHtml(n, d)).join("")}</div>` : `<div class="muted small">no GPUs</div>`}
      <div class="cpu-line"><span class="res">cpu</span><div class="mini"><i data-style="width:${cpuPct.toFixed(1)}%"></i></div><span class="fig">${num(n.used.cpu)} / ${num(n.total.cpu)} cores</span></div>
      <div class="cpu-line"><span class="res">mem</span><div class="mini"><i data-style="width:${memPct.toFixed(1)}%"></i></div><span class="fig">${bytes(n.used.memory)} / ${bytes(n.total.memory)}</span></div>
    </div>`;
  }).join(""));
}

// How a failed pod ended, beside its badge: the exit code, the node's words on hover.
function podEnd(p) {
  if (p.status !== "failed") return "";
  const code = p.exit_code === null || p.exit_code === undefined ? "no exit code" : `exit ${p.exit_code}`;
  return ` <span class="exit" title="${esc(p.failure_reason || "")}">${esc(code)}</span>`;
}

function renderJob() {
  const drawer = $("job-detail");
  drawer.hidden = !state.job;
  if (!state.job || !data.job) return;
  const j = data.job;
  if (j.missing) {
    $("job-kicker").textContent = "";
    $("job-title").textContent = state.job;
    setHtml("job-body", `<div class="empty">${esc(j.missing)}</div>`);
    return;
  }
  setHtml("job-kicker", `${esc(j.kind)} in ${qtag(j.queue)}`);
  setHtml("job-title", `${esc(j.name)} ${badge(j.status)}`);
  const facts = [
    ["pods running", `${j.pods_running} / ${j.pods_total}`],
    ["gang (min)", j.min_available],
    ["priority", `${j.priority}${j.preemptible ? "" : " ·np"}`],
    ["gpu asked", num(j.gpu)],
  ].map(([k, v]) => `<div class="fact"><div class="k">${k}</div><div class="v">${esc(v)}</div></div>`).join("");
  const reason = !j.reason || j.status === "running" || j.status === "completed" ? ""
    : j.status === "failed" ? `<div class="reason-box failed" id="job-reason"><b>Why it failed</b>${esc(j.reason)}</div>`
    : `<div class="reason-box" id="job-reason"><b>Why it waits</b>${esc(j.reason)}</div>`;
  const pods = j.pods.map((p) => `<tr><td>${p.idx}</td><td>${badge(p.status === "bound" ? "running" : p.status)}${podEnd(p)}</td><td>${esc(p.node || "–")}</td>
      <td>${p.gpus.length ? (p.gpu_share ? `${fraction(p.gpu_share)} of gpu ${p.gpus[0]}` : `gpu ${p.gpus.join(", ")}`) : "–"}</td>
      <td class="num">${num(p.request.gpu)}</td><td class="num">${num(p.request.cpu)}</td><td class="num">${bytes(p.request.memory)}</td></tr>`).join("");
  const entries = j.timeline.slice().reverse().map((e) => `
    <li class="entry k-${esc(e.kind)}">
      <span class="pin"></span>
      <div>
        <div class="t-kind">${esc(KIND_LABEL[e.kind] || e.kind.replace(/_/g, " "))}</div>
        <div class="t-text">${esc(e.text)}</div>
        <div class="t-when"><span title="${esc(e.at)}">${clock(e.at)}</span>${e.cycle !== null && e.cycle !== undefined ? ` · cycle ${e.cycle}` : ""} · event ${e.seq}</div>
      </div>
    </li>`).join("");
  setHtml("job-body", `
    <div class="facts">${facts}</div>
    ${reason}
    <h3>Why — newest first</h3>
    <ol class="timeline" id="why">${entries || `<li class="empty">Nothing recorded yet.</li>`}</ol>
    <h3>Pods</h3>
    <table class="pods"><thead><tr><th>#</th><th>status</th><th>node</th><th>devices</th><th class="num">gpu</th><th class="num">cpu</th><th class="num">mem</th></tr></thead><tbody>${pods}</tbody></table>`);
}

// ---- events ------------------------------------------------------------------

document.addEventListener("click", (ev) => {
  const t = ev.target;
  const open = t.closest("[data-open-job]");
  if (open) { ev.preventDefault(); setState({ job: open.dataset.openJob }); return; }
  const q = t.closest("[data-queue]");
  if (q) { setState({ queue: state.queue === q.dataset.queue ? "" : q.dataset.queue }); return; }
  const row = t.closest("tr[data-job]");
  if (row) { setState({ job: row.dataset.job }); return; }
  const seg = t.closest(".seg[data-job]");
  if (seg) { setState({ job: seg.dataset.job }); return; }
  const chip = t.closest("[data-status]");
  if (chip) { setState({ status: chip.dataset.status }); return; }
  if (t.closest("#queue-filter")) { setState({ queue: "" }); return; }
  if (t.closest("#close-job")) { setState({ job: "" }); }
});
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && state.job) setState({ job: "" });
  if (ev.key === "Enter" && ev.target.matches("[data-queue]")) ev.target.click();
});
let searchTimer = null;
$("search").addEventListener("input", (ev) => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => setState({ q: ev.target.value.trim() }), 200);
});
window.addEventListener("hashchange", () => { takeToken(); readHash(); renderFilters(); refresh(); });

takeToken();
readHash();
renderFilters();
refresh();
setInterval(refresh, REFRESH_MS);
