/* The sweep page follows a sweep whose points are still running: it polls the sweep's
 * status.json every few seconds, updates each point's status badge in place, and reloads the
 * page (so the table and the aggregated plot are drawn again by the server) whenever another
 * point has ended, and a last time when the sweep itself has finished. Test hooks on
 * #sweep-page: data-finished (1 once finished), data-polls (answers received).
 */
"use strict";

(function () {
  const page = document.getElementById("sweep-page");
  if (!page || page.dataset.finished === "1") return;
  const POLL_MS = 2000;
  const shownFinished = Number(page.dataset.finishedPoints);
  let polls = 0;

  function showStatuses(data) {
    for (const point of data.points) {
      const badge = page.querySelector(`tr[data-run="${point.run}"] [data-run-status]`);
      if (!badge) continue;
      const label = point.status === "running" ? `running ${Math.round(point.progress * 100)}%` : point.status;
      badge.className = `status status-${point.status}`;
      badge.textContent = label;
    }
    const status = document.getElementById("sweep-status");
    status.className = `status status-${data.status}`;
    status.textContent = data.status;
  }

  async function poll() {
    let data;
    try {
      const response = await fetch(page.dataset.statusUrl, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      data = await response.json();
    } catch (error) {
      setTimeout(poll, POLL_MS * 2); // the server may be restarting: try again a little later
      return;
    }
    page.dataset.polls = String(++polls);
    showStatuses(data);
    if (data.finished || data.finished_points !== shownFinished) {
      window.location.reload();
      return;
    }
    setTimeout(poll, POLL_MS);
  }

  setTimeout(poll, POLL_MS);
})();
