/* "Save as SVG / PNG" for every chart: the Gantt (with its strip), the run's plots, sweeps,
 * compare and the reproduction figures. BokehJS draws the figure again into an SVG or a PNG
 * (view.export(type).to_blob()); the file is downloaded with the chart's name.
 *
 * GridwebFigureExport.attach(element, getView, name) puts the two buttons above a chart;
 * GridwebFigureExport.attachAll(root) does it for every element with class "plot" under root
 * once Bokeh has drawn it (the view is the Bokeh root view drawn inside the element).
 */
(function () {
  "use strict";

  function viewIn(element) {
    if (typeof Bokeh === "undefined" || !Bokeh.index) return null;
    for (const view of Bokeh.index.roots || []) {
      if (view.el && element.contains(view.el)) return view;
    }
    return null;
  }

  async function download(view, type, name) {
    const blob = await view.export(type).to_blob();
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = `${name}.${type}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    return blob;
  }

  function attach(element, getView, name) {
    if (!element || element.dataset.exportable) return;
    element.dataset.exportable = "true";
    const bar = document.createElement("div");
    bar.className = "figure-export";
    bar.dataset.for = name;
    for (const type of ["svg", "png"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "figure-export-button";
      button.dataset.export = type;
      button.textContent = `Save ${type.toUpperCase()}`;
      button.title = `Download this chart as ${type.toUpperCase()}`;
      button.addEventListener("click", async () => {
        const view = getView();
        if (!view) return;
        button.disabled = true;
        try {
          await download(view, type, name);
        } finally {
          button.disabled = false;
        }
      });
      bar.append(button);
    }
    if (element.classList.contains("plot")) element.prepend(bar);
    else element.before(bar);
  }

  function attachAll(root = document) {
    for (const element of root.querySelectorAll(".plot")) {
      const name = (element.id || "figure").replace(/^plot-/, "");
      attach(element, () => viewIn(element), name);
    }
  }

  window.GridwebFigureExport = { attach, attachAll, download, viewIn };
  // Charts embedded by the server (sweep, compare, reproductions) are there once the page has loaded.
  window.addEventListener("load", () => setTimeout(() => attachAll(), 0));
})();
