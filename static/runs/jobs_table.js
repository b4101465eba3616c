/* The run page's jobs table: pages of runs/<pk>/jobs.json (rows a–b of N, prev/next; "no jobs
 * match" when a filter matches nothing), filtered by status, stream and replication, sorted by a
 * clicked column header (again: descending).
 * Clicking a job of replication 0 highlights its segments on the Gantt chart (static/runs/gantt.js,
 * window.gridwebGantt.highlightJob) and scrolls to it.
 * Test hooks: data-ready, data-total and data-offset on #jobs-table; window.gridwebJobs. */
(function () {
  "use strict";

  const section = document.getElementById("jobs-table-section");
  const table = document.getElementById("jobs-table");
  if (!section || !table) return;
  const head = table.querySelector("thead tr");
  const body = table.querySelector("tbody");
  const statusSelect = document.getElementById("jobs-status");
  const streamSelect = document.getElementById("jobs-stream");
  const replicationSelect = document.getElementById("jobs-replication");
  const prev = document.getElementById("jobs-prev");
  const next = document.getElementById("jobs-next");
  const range = document.getElementById("jobs-range");
  const LIMIT = 100;
  const TEXT_COLUMNS = new Set(["cluster", "status"]);
  const state = { offset: 0, status: "", stream: "", replication: 0, sort: "", total: 0, columns: [] };
  let streamsShown = false;
  let asked = 0;

  // Numbers that name something, printed as they are; every other number, whole or not, with
  // thousands separators (a column read "7200" beside "7,238.5").
  const ID_COLUMNS = new Set(["job_id", "replication", "stream", "reservation", "workflow", "task", "component"]);

  function cellText(value, column) {
    if (value === null || value === undefined) return "";
    if (typeof value === "boolean") return value ? "yes" : "";
    if (typeof value === "number" && !ID_COLUMNS.has(column)) return value.toLocaleString(undefined, { maximumFractionDigits: 3 });
    return String(value);
  }

  function drawHead(data) {
    head.innerHTML = "";
    const model = new Set(data.model_columns || []);
    const sortedBy = state.sort.replace(/^-/, "");
    for (const name of data.columns) {
      const th = document.createElement("th");
      th.textContent = name;
      th.dataset.column = name;
      th.title = data.descriptions[name] || "";
      if (model.has(name)) th.className = "model-specific";
      if (name === sortedBy) th.dataset.sorted = state.sort.startsWith("-") ? "desc" : "asc";
      th.addEventListener("click", () => sortBy(name));
      head.append(th);
    }
  }

  function drawRows(data) {
    body.innerHTML = "";
    const at = Object.fromEntries(data.columns.map((c, i) => [c, i]));
    for (const row of data.rows) {
      const tr = document.createElement("tr");
      tr.dataset.job = row[at.job_id];
      tr.dataset.stream = row[at.stream];
      row.forEach((value, i) => {
        const td = document.createElement("td");
        td.textContent = cellText(value, data.columns[i]);
        if (TEXT_COLUMNS.has(data.columns[i])) td.className = "text";
        tr.append(td);
      });
      tr.addEventListener("click", () => highlight(tr, row, at));
      body.append(tr);
    }
  }

  function fillFilters(data) {
    if (streamsShown) return;
    streamsShown = true;
    for (const s of data.streams) {
      const option = document.createElement("option");
      option.value = String(s.index);
      option.textContent = s.name === String(s.index) ? s.name : `${s.index}: ${s.name}`;
      streamSelect.append(option);
    }
    if (data.replications.length > 1) {
      for (const r of data.replications) {
        const option = document.createElement("option");
        option.value = String(r);
        option.textContent = String(r);
        replicationSelect.append(option);
      }
      document.getElementById("jobs-replication-label").hidden = false;
    }
  }

  async function load() {
    const ticket = ++asked;
    table.dataset.ready = "false";
    const params = new URLSearchParams({ offset: state.offset, limit: LIMIT, replication: state.replication });
    if (state.status) params.set("status", state.status);
    if (state.stream !== "") params.set("stream", state.stream);
    if (state.sort) params.set("sort", state.sort);
    try {
      const response = await fetch(`${section.dataset.url}?${params}`, { credentials: "same-origin" });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
      if (ticket !== asked) return; // a newer request is on its way
      state.total = data.total;
      state.columns = data.columns;
      fillFilters(data);
      drawHead(data);
      drawRows(data);
      const last = data.offset + data.rows.length;
      // "rows 0–0 of 0" read like a bug: say that the filter matched nothing.
      range.textContent = data.total
        ? `rows ${(data.offset + 1).toLocaleString()}–${last.toLocaleString()} of ${data.total.toLocaleString()}`
        : state.status || state.stream !== "" ? "no jobs match" : "no jobs";
      prev.disabled = data.offset <= 0;
      next.disabled = last >= data.total;
      table.dataset.total = String(data.total);
      table.dataset.offset = String(data.offset);
      table.dataset.ready = "true";
    } catch (err) {
      range.textContent = `could not load the jobs: ${err.message}`;
      table.dataset.error = err.message;
    }
  }

  function sortBy(name) {
    state.sort = state.sort === name ? `-${name}` : name;
    state.offset = 0;
    load();
  }

  function highlight(tr, row, at) {
    const gantt = window.gridwebGantt;
    for (const other of body.querySelectorAll("tr.highlighted")) other.classList.remove("highlighted");
    tr.classList.add("highlighted");
    if (!gantt || state.replication !== 0) return; // the Gantt shows replication 0
    const count = gantt.highlightJob(`${row[at.stream]}:${row[at.job_id]}`);
    if (!count) return;
    // Zoom to the job (with its length again either side), where single jobs are drawn.
    const start = row[at.start] ?? row[at.submit];
    const end = row[at.end] ?? start + (row[at.runtime] || 0);
    const pad = Math.max(end - start, 60);
    gantt.zoomTo(start - pad, end + pad);
    document.getElementById("gantt").scrollIntoView({ behavior: "smooth", block: "center" });
  }

  prev.addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - LIMIT);
    load();
  });
  next.addEventListener("click", () => {
    if (state.offset + LIMIT < state.total) state.offset += LIMIT;
    load();
  });
  statusSelect.addEventListener("change", () => {
    state.status = statusSelect.value;
    state.offset = 0;
    load();
  });
  streamSelect.addEventListener("change", () => {
    state.stream = streamSelect.value;
    state.offset = 0;
    load();
  });
  replicationSelect.addEventListener("change", () => {
    state.replication = Number(replicationSelect.value);
    state.offset = 0;
    load();
  });

  window.gridwebJobs = { state, load };
  // The first rows once the Gantt is drawn (a big run's rows keep the server busy for a moment,
  // and the chart comes first); at once on a page without a Gantt, after 5 s at the latest.
  const gantt = document.getElementById("gantt");
  if (gantt && gantt.dataset.ready !== "true") {
    let started = false;
    const first = () => {
      if (started) return;
      started = true;
      load();
    };
    document.addEventListener("gridweb:gantt-ready", first, { once: true });
    setTimeout(first, 5000);
  } else load();
})();
