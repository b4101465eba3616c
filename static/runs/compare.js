/* Compare page: the run picker sends /compare/?runs=1,2,... and the metrics table marks the
 * lowest mean of each row (lower is better for waits, responses and slowdowns). The runs' Gantt
 * charts are stacked on one time axis (one Bokeh range shared by all: zooming or panning one moves
 * the others), fitted to the union of the runs once each has drawn its first tile. */
(function () {
  "use strict";

  const pick = document.getElementById("compare-pick");
  if (pick) {
    pick.addEventListener("submit", (event) => {
      event.preventDefault();
      const ids = Array.from(pick.querySelectorAll('input[name="runs"]:checked')).map((box) => box.value);
      location.assign(`${pick.action}?runs=${ids.join(",")}`);
    });
  }

  const LOWER_IS_BETTER = /^(mean_wait|p95_wait|mean_response|max_response|mean_slowdown|mean_bounded_slowdown|makespan)$/;
  for (const row of document.querySelectorAll("#compare-metrics tbody tr[data-metric]")) {
    if (!LOWER_IS_BETTER.test(row.dataset.metric)) continue;
    const cells = Array.from(row.querySelectorAll(".mean"));
    const values = cells.map((cell) => Number(cell.textContent.replace(/,/g, "")));
    const finite = values.filter(Number.isFinite);
    if (finite.length < 2) continue;
    const best = Math.min(...finite);
    cells.forEach((cell, i) => {
      if (values[i] === best) cell.classList.add("best");
    });
  }

  // --- The Gantt charts, on one time axis ------------------------------------------------------
  const configElement = document.getElementById("compare-gantt-configs");
  if (!configElement || typeof Bokeh === "undefined" || !window.GridwebGantt) return;
  const configs = JSON.parse(configElement.textContent);
  const MS = 1000;
  const xRange = new Bokeh.Range1d({ start: 0, end: 1 });
  const charts = configs.map((config) => new window.GridwebGantt(document.getElementById(`gantt-${config.run}`),
    config, { xRange, title: config.title, height: 300 }));
  window.gridwebCompare = {
    charts: charts.map((chart) => chart.hooks()),
    xRange: () => [xRange.start / MS, xRange.end / MS],
    zoomTo(start, end) { xRange.setv({ start: start * MS, end: end * MS }); },
    ready: false,
  };
  // one Bokeh document for all (a shared range belongs to one document)
  const firsts = charts.map((chart) => chart.prefetch());
  const holder = document.getElementById("compare-gantts");
  const shown = Bokeh.Plotting.show(new Bokeh.Column({ children: charts.map((chart) => chart.layoutModel),
    sizing_mode: "stretch_width" }), holder).then((views) => {
    const root = Array.isArray(views) ? views[0] : views;
    charts.forEach((chart, i) => chart.adopt(root.child_views[i]));
    return Promise.all(charts.map((chart, i) => chart.begin(firsts[i])));
  });
  shown.then(() => {
    // every run from its first start to its last end
    const spans = charts.map((chart) => chart.span());
    const start = Math.min(...spans.map((s) => s[0]));
    const end = Math.max(...spans.map((s) => s[1]));
    const pad = (end - start) * 0.01 || 1;
    xRange.setv({ start: (start - pad) * MS, end: (end + pad) * MS, reset_start: (start - pad) * MS,
      reset_end: (end + pad) * MS });
    if (window.GridwebFigureExport) {
      window.GridwebFigureExport.attach(holder, () => Bokeh.index.roots.find((v) => holder.contains(v.el)),
        "gantt-compare");
    }
    window.gridwebCompare.ready = true;
    document.getElementById("compare-gantts").dataset.ready = "true";
  });
})();
