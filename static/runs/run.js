/* The run page around the Gantt: progress bar, simulated time, ETA and status, updated from
 * the events static/runs/gantt.js announces while it streams the run (gridweb:progress,
 * gridweb:status). When the stream says the run has ended, the page reloads itself once, so the
 * metrics, plots and jobs table (rendered only for a finished run) appear without the user
 * reloading. A page that opens on a finished run never streams, so it never reloads again; the
 * tab's sessionStorage also remembers the reload, in case the fresh page still saw the run
 * unfinished: then the notice offers a manual reload instead of reloading in a loop. */
(function () {
  "use strict";

  const page = document.getElementById("run");
  const configElement = document.getElementById("gantt-config");
  if (!page || !configElement) return;
  const config = JSON.parse(configElement.textContent);
  const status = document.getElementById("run-status");
  const bar = document.getElementById("run-progress");
  const percent = document.getElementById("run-progress-text");
  const simTime = document.getElementById("run-sim-time");
  const eta = document.getElementById("run-eta");
  const ENDED = ["done", "failed", "cancelled"];
  const reloadedKey = `gridweb:reloaded-run-${page.dataset.run}`;
  const RELOADING = {
    done: "Run finished — loading results",
    failed: "Run failed — loading its error",
    cancelled: "Run cancelled — reloading",
  };
  // The time left as the worker estimates it from the pace of its progress (each progress chunk
  // carries it: gridweb.runs.execution.EtaEstimate); "estimating…" until that pace has settled.
  function etaText(fraction, left) {
    if (fraction >= 1) return "—";
    if (typeof left !== "number" || !Number.isFinite(left)) return "estimating…";
    return left >= 90 ? `${Math.round(left / 60)} min` : `${Math.max(1, Math.round(left))} s`;
  }

  // True once per run and tab: the first end seen reloads; a second (the fresh page still saw
  // the run unfinished) does not. Without sessionStorage: no automatic reload.
  function mayReload() {
    try {
      if (sessionStorage.getItem(reloadedKey)) return false;
      sessionStorage.setItem(reloadedKey, String(Date.now()));
      return true;
    } catch (err) {
      return false;
    }
  }
  if (ENDED.includes(page.dataset.status)) {
    try {
      sessionStorage.removeItem(reloadedKey); // the fresh page of the ended run: reloaded for good
    } catch (err) { /* no storage: nothing to forget */ }
  }

  // Cancelling throws the run's work away: asked once more, never on a stray click.
  const cancelButton = document.getElementById("cancel-run");
  if (cancelButton && cancelButton.form) {
    cancelButton.form.addEventListener("submit", (event) => {
      const sure = window.confirm("Cancel this run? The simulation stops and its results so far are not kept " +
        "as a finished run (the Gantt keeps what it drew).");
      if (!sure) event.preventDefault();
    });
  }

  function showStatus(value) {
    page.dataset.status = value;
    if (status) {
      status.textContent = value;
      status.className = `status status-${value}`;
    }
  }

  document.addEventListener("gridweb:progress", (event) => {
    const { fraction, simTime: t, etaSeconds } = event.detail;
    // Progress from the engine means a worker holds the run, whatever the page loaded with.
    if (page.dataset.status === "queued") showStatus("running");
    if (bar) bar.value = fraction;
    if (percent) percent.textContent = `${Math.round(fraction * 100)}%`;
    if (simTime && t) simTime.textContent = Math.round(t).toLocaleString();
    if (eta) eta.textContent = etaText(fraction, etaSeconds);
  });

  document.addEventListener("gridweb:status", (event) => {
    const { status: value, error } = event.detail;
    showStatus(value);
    if (!ENDED.includes(value)) return;
    const progress = document.getElementById("progress-section");
    if (progress) progress.hidden = true;
    const notice = document.getElementById("run-finished-notice");
    if (mayReload()) {
      if (notice) {
        notice.textContent = RELOADING[value];
        notice.hidden = false;
      }
      location.reload();
      return;
    }
    if (notice) {
      notice.hidden = false;
      if (error && !document.getElementById("run-error")) {
        const text = document.createElement("pre");
        text.id = "run-error";
        text.className = "run-error";
        text.textContent = error;
        notice.after(text);
      }
    }
  });
})();

/* The plots (utilisation over time, wait and slowdown distributions) are fetched once the
 * Gantt is drawn, so they do not compete with it; without a Gantt, when the page has loaded. */
(function () {
  "use strict";

  const grid = document.getElementById("plots");
  if (!grid || typeof Bokeh === "undefined") return;
  let asked = false;

  async function load() {
    if (asked) return;
    asked = true;
    try {
      const response = await fetch(grid.dataset.url, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const { plots } = await response.json();
      grid.innerHTML = "";
      for (const [name, item] of Object.entries(plots)) {
        const box = document.createElement("div");
        box.className = "plot";
        box.id = `plot-${name}`;
        grid.append(box);
        await Bokeh.embed.embed_item(item, box);
      }
      if (!Object.keys(plots).length) grid.innerHTML = '<p class="muted">No plots: the run measured no jobs.</p>';
      if (window.GridwebFigureExport) window.GridwebFigureExport.attachAll(grid);
      grid.dataset.ready = "true";
    } catch (err) {
      const message = document.createElement("p");  // (an error's text is text, never markup)
      message.className = "field-error";
      message.textContent = `Could not load the plots: ${err.message}`;
      grid.replaceChildren(message);
    }
  }
  document.addEventListener("gridweb:gantt-ready", load);
  window.addEventListener("load", () => {
    if (!document.getElementById("gantt")) load();
    else setTimeout(load, 5000); // in case the Gantt never says it is ready
  });
})();
