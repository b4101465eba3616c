// The reproduction page follows a queued or running reproduction: stage, progress and log every
// second; once it is done, the page reloads to show the claims and figures. Each figure (a
// standalone Bokeh page in a frame) gets Save SVG / Save PNG buttons (static/runs/figure_export.js).
(function () {
  "use strict";
  const page = document.getElementById("reproduction-page");
  if (!page || !window.GridwebFigureExport) return;
  for (const figure of page.querySelectorAll(".reproduction-figure[data-file]")) {
    const iframe = figure.querySelector("iframe");
    const name = `${page.dataset.recipe || "reproduction"}-${figure.dataset.file.replace(/\.html$/, "")}`;
    if (iframe) window.GridwebFigureExport.attachFrame(iframe, name);
  }
})();

(function () {
  "use strict";
  const page = document.getElementById("reproduction-page");
  if (!page || page.dataset.finished === "1") return;
  const bar = document.getElementById("rep-bar");
  const stage = document.getElementById("rep-stage");
  const status = document.getElementById("rep-status");
  const log = document.getElementById("rep-log");
  const error = document.getElementById("rep-error");
  async function poll() {
    let state;
    try {
      const response = await fetch(page.dataset.statusUrl, {headers: {Accept: "application/json"}});
      if (!response.ok) throw new Error(String(response.status));
      state = await response.json();
    } catch (e) {
      setTimeout(poll, 3000);  // the server is restarting or the network is away: try again
      return;
    }
    bar.value = state.progress;
    stage.textContent = state.stage || "waiting for a worker";
    status.textContent = state.status;
    status.className = "status status-" + state.status;
    log.textContent = state.log;
    if (state.error) { error.textContent = state.error; error.hidden = false; }
    if (state.finished) { window.location.reload(); return; }
    setTimeout(poll, 1000);
  }
  poll();
})();
