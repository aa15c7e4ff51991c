// The conclave status page: reads the node's HTTP API, follows /v1/watch,
// and moves to another member (learned from /v1/cluster) when its node dies.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const terminal = new Set(["processed", "error", "compensated", "cancelled"]);
  const state = {
    base: "",        // "" = the node the page was loaded from
    node: null,      // id of the node read from
    leader: 0,
    members: [],     // last /v1/cluster members
    lost: [],        // nodes this page lost, newest last
    source: null,    // the EventSource
    failing: false,
  };
  window.conclaveStatus = state; // for people and tests poking at the page

  async function getJSON(base, path, timeoutMs) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), timeoutMs || 2000);
    try {
      const r = await fetch(base + path, { signal: ctl.signal, cache: "no-store" });
      let body = null;
      try { body = await r.json(); } catch (e) { body = null; }
      return { status: r.status, body: body };
    } finally {
      clearTimeout(t);
    }
  }

  function cell(tr, value, cls) {
    const td = document.createElement("td");
    td.textContent = value === undefined || value === null ? "" : String(value);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function clear(tbody) {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
  }

  function showLeader(leader, epoch, termLeader, note) {
    const el = $("leader");
    state.leader = leader || 0;
    el.dataset.leader = String(state.leader);
    el.dataset.epoch = String(epoch || 0);
    el.textContent = leader
      ? "node " + leader + " leads, term " + epoch + "/" + termLeader + (note || "")
      : "no leader known";
    document.querySelectorAll("#members tbody tr").forEach((tr) => {
      tr.classList.toggle("leader", tr.dataset.id === String(state.leader));
      tr.children[1].textContent = tr.dataset.id === String(state.leader) ? "leader" : "member";
    });
  }

  function setConnection(text, live) {
    const c = $("connection");
    c.textContent = text;
    c.className = "conn " + (live ? "live" : "down");
  }

  function renderCluster(c) {
    state.node = c.id;
    state.members = c.members || [];
    $("cluster-name").textContent = c.cluster ? "· cluster " + c.cluster : "";
    const tbody = $("members").tBodies[0];
    clear(tbody);
    for (const m of state.members) {
      const tr = document.createElement("tr");
      tr.dataset.id = String(m.id);
      cell(tr, m.id + (m.self ? " (this page's node)" : ""));
      cell(tr, m.id === c.leader ? "leader" : "member");
      cell(tr, m.state, "state-" + m.state);
      const by = m.suspected_by || [];
      cell(tr, by.length ? "suspected by " + by.join(", ") : "nobody", by.length ? "state-suspected" : "");
      cell(tr, typeof m.last_heard_ms === "number" ? m.last_heard_ms.toFixed(1) + " ms ago" : "");
      cell(tr, m.linked ? "yes" : "no");
      cell(tr, m.address);
      cell(tr, m.http || "not configured");
      tbody.appendChild(tr);
    }
    const note = c.id === c.leader && !c.acting ? " (no majority lease yet)" : "";
    showLeader(c.leader, c.term && c.term.epoch, c.term && c.term.leader, note);
  }

  function leaderBase() {
    for (const m of state.members)
      if (m.id === state.leader && !m.self && m.http) return m.http;
    return state.base;
  }

  async function refreshReplicas() {
    let r;
    try {
      r = await getJSON(leaderBase(), "/v1/replicas", 1500);
    } catch (e) {
      r = await getJSON(state.base, "/v1/replicas", 1500);
    }
    const tbody = $("replicas").tBodies[0];
    clear(tbody);
    const rep = r.body && r.body.replica;
    if (r.status !== 200 || !rep) {
      $("replica-summary").textContent = "no replica on node " + (r.body ? r.body.id : "?");
      return;
    }
    $("replica-summary").textContent =
      "node " + r.body.id + " (" + rep.role + "): commit lsn " + rep.commit_lsn +
      ", applied lsn " + rep.applied_lsn + (rep.healing ? ", rebuilding its log" : "");
    for (const l of rep.lag || []) {
      const tr = document.createElement("tr");
      cell(tr, "node " + l.peer);
      cell(tr, l.records);
      cell(tr, l.bytes);
      cell(tr, typeof l.seconds === "number" ? l.seconds.toFixed(3) : l.seconds);
      tbody.appendChild(tr);
    }
    if (!(rep.lag || []).length && rep.role !== "primary") {
      const tr = document.createElement("tr");
      cell(tr, "lag is reported by the primary", "na");
      tbody.appendChild(tr);
    }
  }

  function reasonOf(explain) {
    if (!explain) return "";
    if (typeof explain === "string") return explain;
    for (const k of ["reason", "why", "summary", "explanation"])
      if (typeof explain[k] === "string") return explain[k];
    if (Array.isArray(explain.reasons)) return explain.reasons.join("; ");
    return JSON.stringify(explain).slice(0, 200);
  }

  async function refreshJobs() {
    const r = await getJSON(state.base, "/v1/jobs?limit=100", 2000);
    const tbody = $("jobs").tBodies[0];
    const chips = $("jobs-by-state");
    clear(tbody);
    chips.textContent = "";
    if (r.status === 404) {
      $("jobs-status").textContent = "not available on this node";
      $("jobs-status").className = "na";
      return;
    }
    if (r.status !== 200 || !r.body || !Array.isArray(r.body.jobs)) {
      $("jobs-status").textContent = "unavailable (HTTP " + r.status + ")";
      $("jobs-status").className = "na";
      return;
    }
    $("jobs-status").textContent = r.body.jobs.length + " jobs" + (r.body.next ? " (more exist)" : "");
    $("jobs-status").className = "";
    const counts = {};
    for (const j of r.body.jobs) counts[j.state] = (counts[j.state] || 0) + 1;
    for (const s of Object.keys(counts).sort()) {
      const span = document.createElement("span");
      span.className = "chip";
      span.textContent = s + ": " + counts[s];
      chips.appendChild(span);
    }
    let explained = 0;
    for (const j of r.body.jobs) {
      const tr = document.createElement("tr");
      tr.dataset.jobId = String(j.id);
      tr.dataset.state = String(j.state);
      cell(tr, j.id);
      cell(tr, j.state);
      cell(tr, (j.steps || []).map((s) => (s.kind || "") + (s.state ? ":" + s.state : "")).join(", "));
      const why = cell(tr, "");
      tbody.appendChild(tr);
      if (!terminal.has(j.state) && explained < 10) {
        explained++;
        getJSON(state.base, "/v1/jobs/" + encodeURIComponent(j.id) + "/explain", 2000)
          .then((e) => { why.textContent = e.status === 200 ? reasonOf(e.body) : ""; })
          .catch(() => {});
      }
    }
  }

  async function refreshLeases() {
    const r = await getJSON(state.base, "/v1/leases", 2000);
    const tbody = $("leases").tBodies[0];
    clear(tbody);
    if (r.status === 404) {
      $("leases-status").textContent = "not available on this node";
      $("leases-status").className = "na";
      return;
    }
    const list = r.body && r.body.leases;
    if (r.status !== 200 || !Array.isArray(list)) {
      $("leases-status").textContent = "unavailable (HTTP " + r.status + ")";
      $("leases-status").className = "na";
      return;
    }
    $("leases-status").textContent = list.length + " leases held";
    $("leases-status").className = "";
    // One row per holder (a lease of several slots has several).
    for (const l of list) {
      for (const h of l.holders || []) {
        const tr = document.createElement("tr");
        cell(tr, l.name);
        cell(tr, h.label ? h.holder + " (" + h.label + ")" : h.holder);
        cell(tr, h.token);
        cell(tr, h.ttl_ms + " ms");
        cell(tr, (l.waiters || []).map((w) => w.place + ". " + (w.label ? w.holder + " (" + w.label + ")" : w.holder)).join(", "));
        tbody.appendChild(tr);
      }
    }
  }

  async function refreshAll() {
    try {
      const c = await getJSON(state.base, "/v1/cluster", 1500);
      if (c.status === 200 && c.body) renderCluster(c.body);
    } catch (e) {
      return; // the stream's error handler moves to another member
    }
    for (const f of [refreshReplicas, refreshJobs, refreshLeases]) f().catch(() => {});
  }

  let refreshPending = null;
  function refreshSoon() {
    if (refreshPending) return;
    refreshPending = setTimeout(() => { refreshPending = null; refreshAll(); }, 100);
  }

  // Job and lease events come in bursts (a job moves several times a
  // second): each table is read again at most every 250 ms.
  const tableTimers = {};
  function refreshTableSoon(f) {
    if (tableTimers[f.name]) return;
    tableTimers[f.name] = setTimeout(() => { tableTimers[f.name] = null; f().catch(() => {}); }, 250);
  }

  function logEvent(type, d) {
    const li = document.createElement("li");
    const t = new Date(d.at_us ? d.at_us / 1000 : Date.now()).toISOString().slice(11, 23);
    let what = type;
    if (type === "leader") what = "node " + d.node + " sees leader " + d.leader + " (term " + d.term.epoch + "/" + d.term.leader + (d.acting ? ", acting" : "") + ")";
    if (type === "member") what = "node " + d.node + " sees member " + d.id + " " + d.state + (d.linked ? "" : ", not linked");
    if (type === "running") what = "node " + d.node + " is stopping";
    if (type === "job") what = "job " + d.id + " " + (d.previous ? d.previous + " -> " : "") + d.state + " (step " + d.step + ", attempt " + d.attempt + ")";
    if (type === "lease") what = "lease " + d.name + " " + d.event + " (holder " + d.holder + ", token " + d.token + ")";
    li.textContent = t + " " + what;
    const ol = $("events");
    ol.insertBefore(li, ol.firstChild);
    while (ol.children.length > 200) ol.removeChild(ol.lastChild);
  }

  function watch() {
    if (state.source) state.source.close();
    const s = new EventSource(state.base + "/v1/watch");
    state.source = s;
    s.addEventListener("hello", (e) => {
      const d = JSON.parse(e.data);
      setConnection("live from node " + d.node + (state.base ? " (" + state.base + ")" : ""), true);
      refreshAll();
    });
    s.addEventListener("reset", () => refreshAll());
    s.addEventListener("leader", (e) => {
      const d = JSON.parse(e.data);
      logEvent("leader", d);
      showLeader(d.leader, d.term.epoch, d.term.leader,
                 d.node === d.leader && !d.acting ? " (no majority lease yet)" : "");
      refreshSoon();
    });
    s.addEventListener("member", (e) => {
      logEvent("member", JSON.parse(e.data));
      refreshSoon();
    });
    s.addEventListener("job", (e) => {
      logEvent("job", JSON.parse(e.data));
      refreshTableSoon(refreshJobs);
    });
    s.addEventListener("lease", (e) => {
      logEvent("lease", JSON.parse(e.data));
      refreshTableSoon(refreshLeases);
    });
    s.addEventListener("running", (e) => {
      logEvent("running", JSON.parse(e.data));
      failover();
    });
    s.onerror = () => {
      if (s === state.source) failover();
    };
  }

  function baseOf(m) {
    return m.self && !state.base ? "" : m.http;
  }

  // The stream broke: the node may be gone. Try it once more, then every
  // other member that has an HTTP address, until one answers.
  async function failover() {
    if (state.failing) return;
    state.failing = true;
    if (state.source) state.source.close();
    state.source = null;
    const lostId = state.node;
    const lostBase = state.base || location.origin;
    setConnection("lost node " + lostId + ", reconnecting…", false);
    for (;;) {
      const candidates = [{ id: lostId, base: state.base }];
      for (const m of state.members)
        if (m.id !== lostId && baseOf(m) !== undefined && baseOf(m) !== null)
          candidates.push({ id: m.id, base: baseOf(m) });
      for (const c of candidates) {
        try {
          const r = await getJSON(c.base, "/v1/cluster?scope=local", c.id === lostId ? 300 : 800);
          if (r.status !== 200 || !r.body) continue;
          if (c.id !== lostId) {
            state.lost.push(lostId);
            const lost = $("lost");
            lost.hidden = false;
            lost.textContent = "lost node " + lostId + " (" + lostBase + "); reading from node " + c.id;
            lost.dataset.lost = String(lostId);
          }
          state.base = c.base;
          renderCluster(r.body);
          state.failing = false;
          watch();
          return;
        } catch (e) {
          // next member
        }
      }
      await new Promise((res) => setTimeout(res, 300));
    }
  }

  setInterval(() => {
    if (!state.failing) for (const f of [refreshReplicas, refreshJobs, refreshLeases]) f().catch(() => {});
  }, 1000);
  refreshAll();
  watch();
})();
