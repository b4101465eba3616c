/* "Save as SVG / PNG" for every chart: the Gantt (with its strip), the run's plots, sweeps,
 * compare and the reproduction figures. BokehJS draws the figure again into an SVG or a PNG
 * (view.export(type).to_blob()); the file is downloaded with the chart's name.
 *
 * GridwebFigureExport.attach(element, getView, name) puts the two buttons above a chart (getView
 * may return the view or a promise of it);
 * GridwebFigureExport.attachAll(root) does it for every element with class "plot" under root
 * (the view is the Bokeh root view drawn inside the element, waited for if Bokeh has not drawn
 * it yet);
 * GridwebFigureExport.attachFrame(iframe, name) does it for a same-origin frame holding a
 * standalone Bokeh page (a reproduction figure): the view is that page's root view, drawn by the
 * frame's own BokehJS (the frame is loaded at once if it was lazy). A frame whose page draws no
 * plot (a table alone) hides its buttons once it has loaded: its data is in the CSV.
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

  const WAIT_MS = 15000;

  /* The first non-null find() within WAIT_MS (polled), else null. */
  async function waitFor(find) {
    const until = Date.now() + WAIT_MS;
    for (;;) {
      const found = find();
      if (found || Date.now() > until) return found || null;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /* The root view drawn in a same-origin frame by the frame's BokehJS (null if none). */
  function viewInFrame(iframe) {
    let win;
    try {
      win = iframe.contentWindow;
      if (!win || !win.Bokeh || !win.Bokeh.index) return null;
    } catch (e) {
      return null;  // not same-origin: nothing to reach
    }
    // the page's one root, once BokehJS has laid it out and drawn it
    return (win.Bokeh.index.roots || []).find((view) => !view.has_finished || view.has_finished()) || null;
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
        button.disabled = true;
        try {
          const view = await getView();
          if (view) await download(view, type, name);
        } finally {
          button.disabled = false;
        }
      });
      bar.append(button);
    }
    if (element.classList.contains("plot")) element.prepend(bar);
    else element.before(bar);
    return bar;
  }

  function attachAll(root = document) {
    for (const element of root.querySelectorAll(".plot")) {
      const name = (element.id || "figure").replace(/^plot-/, "");
      attach(element, () => waitFor(() => viewIn(element)), name);
    }
  }

  /* Whether a frame's Bokeh page draws a plot (a page of a table alone does not: there is nothing to save). */
  function framePlots(iframe, view) {
    const Plot = iframe.contentWindow.Bokeh.Models && iframe.contentWindow.Bokeh.Models.get("Plot");
    return !Plot || [...view.model.document.all_models].some((model) => model instanceof Plot);
  }

  function attachFrame(iframe, name) {
    const bar = attach(iframe, () => {
      if (iframe.loading === "lazy") iframe.loading = "eager";  // load it now if it was not yet
      return waitFor(() => viewInFrame(iframe));
    }, name);
    if (!bar) return;
    const check = async () => {
      const view = await waitFor(() => viewInFrame(iframe));
      if (view) bar.hidden = !framePlots(iframe, view);
    };
    iframe.addEventListener("load", check);
    check();  // (in case the frame had loaded already)
  }

  window.GridwebFigureExport = { attach, attachAll, attachFrame, download, viewIn, viewInFrame };
  // Charts embedded by the server (a run's plots, sweep, compare) are there once the page has loaded;
  // the reproduction page attaches its figures' frames itself (static/reproductions/reproduction.js).
  window.addEventListener("load", () => setTimeout(() => attachAll(), 0));
})();
