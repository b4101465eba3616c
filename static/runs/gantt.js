/* GridWeb's Gantt chart of a run, drawn with BokehJS (static/bokeh/).
 *
 * One row per processor, clusters stacked in bands (MODELS.md §8 segments: cluster, first
 * processor, processor count, t0, t1, job, component, kind). Each segment is a quad spanning
 * its block of processors from t0 to t1.
 *
 * Where the segments come from:
 *   - a finished run: all at once from /runs/<id>/segments.json (compact columns);
 *   - a queued or running run: the websocket /ws/runs/<id>/?after=N (docs/web.md). Each
 *     "segments" chunk is appended with source.stream(); the highest seq held is kept and a
 *     closed socket reconnects with ?after=<that seq>, so nothing is missed or repeated.
 *
 * Zoomed far out (more than AGGREGATE_ABOVE segments in view) the rectangles are replaced by
 * each cluster's utilisation over time, recomputed for the visible range in one linear pass,
 * so runs of 100,000+ jobs stay fluid. Finished runs can be replayed: play/pause, speed and
 * a time scrubber; a curtain hides what has not happened yet.
 *
 * Test hooks: window.gridwebGantt and data-* attributes on #gantt (segments-count, ready,
 * mode, last-seq, highlighted, revealed).
 */
(function () {
  "use strict";

  const AGGREGATE_ABOVE = 20000;
  const KIND_COLOURS = {
    run: "#3b75af", claimed: "#f0b429", reservation: "#8e6cbf", suspended: "#9aa5b1",
    killed: "#d64545", stretched: "#2f9e8f", transfer: "#e07b39",
  };
  const SEGMENT_ALPHA = 0.9;
  const RESERVATION_ALPHA = 0.45;
  const BAND_COLOURS = ["#eef3fa", "#faf6ee"];
  const AGGREGATE_COLOURS = ["#3b75af", "#e07b39", "#2f9e8f", "#8e6cbf", "#d64545", "#7f7f7f", "#bcbd22", "#17becf"];
  const RECONNECT_MAX_MS = 10000;
  // Times are seconds everywhere except on the x axis, which is a timedelta axis in
  // milliseconds (so a year-long trace reads "120d 06:00", not "1.04e+7").
  const MS = 1000;

  const container = document.getElementById("gantt");
  const configElement = document.getElementById("gantt-config");
  if (!container || !configElement || typeof Bokeh === "undefined") return;
  const config = JSON.parse(configElement.textContent);
  const timings = { script: performance.now() }; // milliseconds since navigation, for benchmarks

  // A finished run's segments: asked for at once, while BokehJS lays the figure out.
  const segmentsRequest = config.finished
    ? fetch(config.segmentsUrl, { credentials: "same-origin" }).then((response) => {
      if (!response.ok) throw new Error(`segments: HTTP ${response.status}`);
      return response.json();
    })
    : null;
  if (segmentsRequest) segmentsRequest.catch(() => {}); // reported when awaited below

  const aggregateAbove = Number(container.dataset.aggregateAbove || AGGREGATE_ABOVE);

  // --- Layout: one row per processor, clusters stacked with a gap ------------------------------
  function layoutOf(clusters) {
    const total = clusters.reduce((sum, c) => sum + c.processors, 0) || 1;
    const gap = Math.max(1, Math.round(total * 0.03));
    const offsets = [];
    let y = 0;
    for (const c of clusters) {
      offsets.push(y);
      y += c.processors + gap;
    }
    return { clusters, offsets, gap, top: Math.max(1, y - gap) };
  }
  const layout = layoutOf(config.clusters || []);

  // A stable colour per job: the same job gets the same colour on every page and in every replay.
  function jobColour(key) {
    let h = 2166136261;
    const text = String(key);
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    h >>>= 0;
    const hue = h % 360;
    const saturation = 45 + (h >>> 9) % 30;
    const lightness = 42 + (h >>> 17) % 20;
    return `hsl(${hue},${saturation}%,${lightness}%)`;
  }

  // --- All segments, kept columnar on the JS side too (for counting, aggregating, highlighting)
  const store = { t0: [], t1: [], cluster: [], procs: [], key: [], busy: [], count: 0, tMin: Infinity, tMax: -Infinity };
  // Kinds that lie over other segments, left out of the utilisation view: a reservation's window
  // (its job runs inside it) and a suspended job's gap (its preemptor runs there).
  const NOT_BUSY = new Set(["reservation", "suspended"]);
  let kinds = config.kinds || Object.keys(KIND_COLOURS);
  const presentKinds = new Set(); // the kinds the run's segments hold so far: the legend lists these
  let newKinds = false;
  let colourField = "colour_job"; // what the "colour" column holds: colour_job or colour_kind
  let lastSeq = -1;
  const streamNames = config.streams || [];

  // Convert engine columns (cluster and kind as codes, job as row of replication 0) to the
  // columns the glyphs and the tooltip read.
  function toSourceColumns(compact) {
    const n = (compact.t0 || []).length;
    const columns = {};
    for (const [name, values] of Object.entries(compact)) {
      // {"repeat": v}: every row holds v (see gridweb/runs/gantt_data.py)
      columns[name] = Array.isArray(values) ? values : new Array(n).fill(values.repeat);
    }
    const out = {
      left: new Array(n), right: new Array(n), bottom: new Array(n), top: new Array(n),
      t0: new Array(n), t1: new Array(n), job: new Array(n), component: new Array(n), cluster: new Array(n), processors: new Array(n),
      kind: new Array(n), colour: new Array(n), colour_job: new Array(n), colour_kind: new Array(n), stream: new Array(n),
      alpha: new Array(n),
    };
    const jobIds = columns.job_id || null;
    const streams = columns.stream || null;
    for (let i = 0; i < n; i++) {
      const c = columns.cluster[i];
      const cluster = layout.clusters[c] || { name: String(c), processors: 0 };
      const first = columns.first_processor[i];
      const count = columns.processors[i];
      const t0 = columns.t0[i];
      const t1 = columns.t1[i];
      const kind = typeof columns.kind[i] === "number" ? (kinds[columns.kind[i]] || String(columns.kind[i])) : columns.kind[i];
      // A job is its job id within its stream when known, else its row in replication 0.
      const key = jobIds ? (streams ? `${streams[i]}:${jobIds[i]}` : String(jobIds[i])) : `row${columns.job[i]}`;
      // A reservation's row is named by the reservation (its job id is its index + 1).
      const isReservation = streams && config.reservations && streams[i] === config.reservationStream;
      const label = isReservation ? (config.reservations[jobIds[i] - 1] || String(jobIds[i]))
        : jobIds ? String(jobIds[i]) : `#${columns.job[i]}`;
      const offset = layout.offsets[c] || 0;
      out.left[i] = t0 * MS;
      out.right[i] = t1 * MS;
      out.t0[i] = t0;
      out.t1[i] = t1;
      out.bottom[i] = offset + first;
      out.top[i] = offset + first + count;
      out.job[i] = label;
      out.component[i] = columns.component ? columns.component[i] : 0;
      out.cluster[i] = cluster.name;
      out.processors[i] = count === 1 ? `${first}` : `${first}–${first + count - 1}`;
      out.kind[i] = kind;
      if (!presentKinds.has(kind)) {
        presentKinds.add(kind);
        newKinds = true;
      }
      // A reservation window is drawn lighter: the job using it (drawn on top) stands out.
      out.alpha[i] = kind === "reservation" ? RESERVATION_ALPHA : SEGMENT_ALPHA;
      out.stream[i] = streams ? streamNames[streams[i]] ?? String(streams[i]) : "";
      out.colour_job[i] = jobColour(key);
      out.colour_kind[i] = KIND_COLOURS[kind] || "#555";
      out.colour[i] = colourField === "colour_kind" ? out.colour_kind[i] : out.colour_job[i];
      store.t0.push(t0);
      store.t1.push(t1);
      store.cluster.push(c);
      store.procs.push(count);
      store.busy.push(!NOT_BUSY.has(kind));
      store.key.push(key);
      if (t0 < store.tMin) store.tMin = t0;
      if (t1 > store.tMax) store.tMax = t1;
    }
    store.count += n;
    return out;
  }

  // --- The figure --------------------------------------------------------------------------------
  // WebGL where it helps: a hardware renderer. A software one (SwiftShader, llvmpipe: headless
  // browsers, machines without a GPU) draws rectangles slower than the 2D canvas does.
  // ?backend=webgl|canvas on the page's URL overrides the choice.
  function outputBackend() {
    const asked = new URLSearchParams(location.search).get("backend");
    if (asked === "webgl" || asked === "canvas") return asked;
    try {
      const gl = document.createElement("canvas").getContext("webgl");
      if (!gl) return "canvas";
      const info = gl.getExtension("WEBGL_debug_renderer_info");
      const renderer = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : "";
      return /swiftshader|llvmpipe|softpipe|software/i.test(renderer) ? "canvas" : "webgl";
    } catch (err) {
      return "canvas";
    }
  }
  const emptyColumns = () => ({
    left: [], right: [], bottom: [], top: [], t0: [], t1: [], job: [], component: [], cluster: [], processors: [], kind: [],
    colour: [], colour_job: [], colour_kind: [], stream: [], alpha: [],
  });
  const source = new Bokeh.ColumnDataSource({ data: emptyColumns() });
  const aggregateSource = new Bokeh.ColumnDataSource({
    data: { left: [], right: [], bottom: [], top: [], from: [], to: [], cluster: [], utilisation: [], colour: [] },
  });
  const xRange = new Bokeh.Range1d({ start: 0, end: 1 });
  const yRange = new Bokeh.Range1d({ start: -layout.gap / 2, end: layout.top + layout.gap / 2 });
  const figure = Bokeh.Plotting.figure({
    height: Math.max(320, Math.min(720, 160 + 40 * layout.clusters.length + layout.top * 2)),
    sizing_mode: "stretch_width",
    x_range: xRange,
    y_range: yRange,
    output_backend: outputBackend(),
    tools: "xpan,xwheel_zoom,box_zoom,reset,save",
    active_scroll: "xwheel_zoom",
    x_axis_type: "timedelta",
    x_axis_label: "simulated time",
    y_axis_label: "processors by cluster",
  });
  figure.toolbar.logo = null;
  figure.xgrid.visible = false;
  figure.ygrid.visible = false;
  figure.min_border_left = 80;

  // Cluster bands, labelled on the y axis at each band's middle.
  const ticks = [];
  const labels = new Map();
  layout.clusters.forEach((c, i) => {
    figure.add_layout(new Bokeh.BoxAnnotation({
      bottom: layout.offsets[i], top: layout.offsets[i] + c.processors, fill_color: BAND_COLOURS[i % 2],
      fill_alpha: 1, line_alpha: 0, level: "underlay",
    }));
    const middle = layout.offsets[i] + c.processors / 2;
    ticks.push(middle);
    labels.set(middle, `${c.name} (${c.processors})`);
  });
  figure.yaxis.ticker = new Bokeh.FixedTicker({ ticks });
  figure.yaxis.major_label_overrides = labels;
  figure.yaxis.major_label_orientation = "horizontal";

  const segmentRenderer = figure.quad({
    left: { field: "left" }, right: { field: "right" }, bottom: { field: "bottom" }, top: { field: "top" },
    source, fill_color: { field: "colour" }, line_color: null, fill_alpha: { field: "alpha" },
  });
  // A highlighted job: Bokeh's default selection look dims every other segment, and its own
  // segments get a dark outline drawn from a small source of their own (outlining through a
  // selection glyph would cost a second pass over every segment at each zoom).
  const highlightSource = new Bokeh.ColumnDataSource({ data: { left: [], right: [], bottom: [], top: [] } });
  const highlightRenderer = figure.quad({
    left: { field: "left" }, right: { field: "right" }, bottom: { field: "bottom" }, top: { field: "top" },
    source: highlightSource, fill_alpha: 0, line_color: "#111", line_width: 2,
  });

  const aggregateRenderer = figure.quad({
    left: { field: "left" }, right: { field: "right" }, bottom: { field: "bottom" }, top: { field: "top" },
    source: aggregateSource, fill_color: { field: "colour" }, line_color: { field: "colour" }, fill_alpha: 0.75,
    line_alpha: 0.75,
  });
  aggregateRenderer.visible = false;

  figure.add_tools(new Bokeh.HoverTool({
    renderers: [segmentRenderer],
    tooltips: [
      ["job", "@job"], ["stream", "@stream"], ["component", "@component"], ["cluster", "@cluster"], ["processors", "@processors"],
      ["t0", "@t0{0,0.[000]} s"], ["t1", "@t1{0,0.[000]} s"], ["kind", "@kind"],
    ],
  }));
  figure.add_tools(new Bokeh.HoverTool({
    renderers: [aggregateRenderer],
    tooltips: [["cluster", "@cluster"], ["utilisation", "@utilisation{0.0%}"], ["from", "@from{0,0} s"],
      ["to", "@to{0,0} s"]],
  }));
  figure.add_tools(new Bokeh.TapTool({ renderers: [segmentRenderer] }));

  // Replay: everything after the current time is under a curtain, with a line at "now".
  const curtain = new Bokeh.BoxAnnotation({ left: 0, fill_color: "#ffffff", fill_alpha: 0.94, line_alpha: 0,
    level: "overlay", visible: false });
  const nowLine = new Bokeh.Span({ location: 0, dimension: "height", line_color: "#d64545", line_width: 2,
    visible: false });
  figure.add_layout(curtain);
  figure.add_layout(nowLine);

  // --- Highlighting a job: every segment with the same key, in every cluster ---------------------
  let highlighting = false;
  let highlightedKey = null;
  function highlightJob(key) {
    const indices = [];
    if (key !== null) {
      for (let i = 0; i < store.count; i++) if (store.key[i] === key) indices.push(i);
    }
    highlighting = true;
    highlightedKey = indices.length ? key : null;
    source.selected.indices = indices;
    highlighting = false;
    const data = source.data;
    highlightSource.data = {
      left: indices.map((i) => data.left[i]), right: indices.map((i) => data.right[i]),
      bottom: indices.map((i) => data.bottom[i]), top: indices.map((i) => data.top[i]),
    };
    container.dataset.highlighted = String(indices.length);
    container.dataset.highlightedJob = highlightedKey === null ? "" : highlightedKey;
    return indices.length;
  }
  source.selected.properties.indices.change.connect(() => {
    if (highlighting) return;
    const picked = source.selected.indices;
    highlightJob(picked.length ? store.key[picked[0]] : null);
  });

  // --- Segments or aggregated utilisation, depending on what is in view --------------------------
  let viewChoice = "auto"; // "auto" | "segments" | "utilisation"
  let mode = "segments";
  const modeLabel = document.getElementById("gantt-mode");

  function visibleCount(a, b) {
    let n = 0;
    const t0 = store.t0;
    const t1 = store.t1;
    for (let i = 0; i < store.count; i++) if (t1[i] > a && t0[i] < b) n++;
    return n;
  }

  // Mean busy processors of each cluster in each of `bins` equal bins of [a, b], exactly:
  // the integral of a cluster's busy count up to an edge e is the sum over segments of
  // procs * (min(e, t1) - min(e, t0)), and sum(procs * min(e, t)) splits at the bin holding t
  // into a prefix of procs * t and a suffix of procs * e: one pass over the segments.
  function utilisation(a, b, bins) {
    const width = (b - a) / bins;
    const nClusters = layout.clusters.length;
    const weightBelow = []; // per cluster, per bucket: sum of procs * t (signed: +t1, -t0)
    const procsFrom = [];   // per cluster, per bucket: sum of procs (signed)
    for (let c = 0; c < nClusters; c++) {
      weightBelow.push(new Float64Array(bins + 2));
      procsFrom.push(new Float64Array(bins + 2));
    }
    const bucket = (t) => (t <= a ? 0 : t >= b ? bins + 1 : 1 + Math.min(bins - 1, Math.floor((t - a) / width)));
    for (let i = 0; i < store.count; i++) {
      const c = store.cluster[i];
      if (c < 0 || c >= nClusters || !store.busy[i]) continue;
      const p = store.procs[i];
      const j1 = bucket(store.t1[i]);
      const j0 = bucket(store.t0[i]);
      weightBelow[c][j1] += p * store.t1[i];
      procsFrom[c][j1] += p;
      weightBelow[c][j0] -= p * store.t0[i];
      procsFrom[c][j0] -= p;
    }
    const out = [];
    for (let c = 0; c < nClusters; c++) {
      // integral at edge k (k = 0..bins, edge e_k = a + k*width): values in buckets <= k
      // lie at or below e_k (bucket 0 is "at or before a").
      const integral = new Float64Array(bins + 1);
      let prefixWeight = 0;
      let suffixProcs = 0;
      for (let j = 0; j < bins + 2; j++) suffixProcs += procsFrom[c][j];
      for (let k = 0; k <= bins; k++) {
        prefixWeight += weightBelow[c][k];
        suffixProcs -= procsFrom[c][k];
        integral[k] = prefixWeight + (a + k * width) * suffixProcs;
      }
      const capacity = layout.clusters[c].processors || 1;
      const means = new Float64Array(bins);
      for (let k = 0; k < bins; k++) means[k] = Math.max(0, (integral[k + 1] - integral[k]) / width / capacity);
      out.push(means);
    }
    return out;
  }

  function drawAggregate(a, b) {
    const bins = Math.max(50, Math.min(1500, Math.round((figureWidth() || 800) / 2)));
    const width = (b - a) / bins;
    const means = utilisation(a, b, bins);
    const data = { left: [], right: [], bottom: [], top: [], from: [], to: [], cluster: [], utilisation: [], colour: [] };
    means.forEach((row, c) => {
      const cluster = layout.clusters[c];
      for (let k = 0; k < bins; k++) {
        if (row[k] <= 0) continue;
        data.from.push(a + k * width);
        data.to.push(a + (k + 1) * width);
        data.left.push((a + k * width) * MS);
        data.right.push((a + (k + 1) * width) * MS);
        data.bottom.push(layout.offsets[c]);
        data.top.push(layout.offsets[c] + Math.min(1, row[k]) * cluster.processors);
        data.cluster.push(cluster.name);
        data.utilisation.push(row[k]);
        data.colour.push(AGGREGATE_COLOURS[c % AGGREGATE_COLOURS.length]);
      }
    });
    aggregateSource.data = data;
  }

  let plotView = null;
  function figureWidth() {
    return plotView && plotView.frame ? plotView.frame.bbox.width : container.clientWidth;
  }

  let updateQueued = false;
  let renders = 0;
  function updateView() {
    updateQueued = false;
    const a = xRange.start / MS;
    const b = xRange.end / MS;
    const inView = visibleCount(a, b);
    const next = viewChoice === "auto" ? (inView > aggregateAbove ? "utilisation" : "segments") : viewChoice;
    if (next === "utilisation") drawAggregate(a, b);
    if (next !== mode) {
      mode = next;
      segmentRenderer.visible = mode === "segments";
      highlightRenderer.visible = mode === "segments";
      aggregateRenderer.visible = mode === "utilisation";
    }
    container.dataset.mode = mode;
    container.dataset.visible = String(inView);
    if (modeLabel) {
      modeLabel.textContent = mode === "segments"
        ? `${inView.toLocaleString()} of ${store.count.toLocaleString()} segments in view`
        : `utilisation per cluster (${inView.toLocaleString()} segments in view; zoom in for single jobs)`;
    }
    renders++;
  }
  function queueUpdate() {
    if (updateQueued) return;
    updateQueued = true;
    requestAnimationFrame(updateView);
  }
  xRange.properties.start.change.connect(queueUpdate);
  xRange.properties.end.change.connect(queueUpdate);

  // The x range follows the data until the user zooms or pans.
  let followData = true;
  let settingRange = false;
  function fitRange() {
    if (!followData || store.count === 0) return;
    const span = Math.max(store.tMax - store.tMin, 1);
    const pad = span * 0.01;
    settingRange = true;
    const start = (store.tMin - pad) * MS;
    const end = (store.tMax + pad) * MS;
    xRange.setv({ start, end, reset_start: start, reset_end: end });
    settingRange = false;
  }
  xRange.properties.start.change.connect(() => { if (!settingRange) followData = false; });

  function append(columns) {
    const n = (columns.t0 || []).length;
    if (!n) return;
    const data = toSourceColumns(columns);
    source.stream(data);
    fitRange();
    container.dataset.segmentsCount = String(store.count);
    if (highlightedKey !== null) highlightJob(highlightedKey);
    if (newKinds) drawLegend(); // a kind's first segment: it joins the legend
    queueUpdate();
  }

  // --- Colour toggle and legend -------------------------------------------------------------------
  const colourSelect = document.getElementById("gantt-colour");
  const legend = document.getElementById("gantt-legend");
  function setColouring(by) {
    const field = by === "kind" ? "colour_kind" : "colour_job";
    if (field !== colourField) {
      // A column switch, not a glyph property change: Bokeh derives its selection and
      // non-selection looks from the glyph once, but they read the same column. (A copy:
      // stream() appends to every column, and two names for one array would get rows twice.)
      colourField = field;
      source.data = { ...source.data, colour: source.data[field].slice() };
    }
    container.dataset.colour = by;
    if (colourSelect && colourSelect.value !== by) colourSelect.value = by;
    drawLegend();
  }
  // Coloured by kind, one item per kind the run has (in the engine's order, KIND_NAMES): listing
  // all seven for a run of plain jobs suggested kills and reservations that never happened.
  function drawLegend() {
    newKinds = false;
    if (!legend) return;
    legend.innerHTML = "";
    if (colourField !== "colour_kind") return;
    const shown = [...kinds.filter((kind) => presentKinds.has(kind)),
      ...[...presentKinds].filter((kind) => !kinds.includes(kind))];
    for (const kind of shown) {
      const item = document.createElement("span");
      item.className = "legend-item";
      item.dataset.kind = kind;
      item.innerHTML = `<i style="background:${KIND_COLOURS[kind] || "#555"}"></i>`;
      item.append(kind);
      legend.append(item);
    }
  }
  if (colourSelect) colourSelect.addEventListener("change", () => setColouring(colourSelect.value));

  // --- Replay of a finished run ----------------------------------------------------------------
  const scrubber = document.getElementById("gantt-scrubber");
  const playButton = document.getElementById("gantt-play");
  const speedSelect = document.getElementById("gantt-speed");
  const timeLabel = document.getElementById("gantt-time");
  let replayTime = null; // null: everything shown
  let playing = false;
  let lastFrame = null;

  function revealedCount() {
    if (replayTime === null) return store.count;
    let n = 0;
    for (let i = 0; i < store.count; i++) if (store.t0[i] <= replayTime) n++;
    return n;
  }
  function setTime(t) {
    const end = store.tMax;
    if (t === null || t >= end) {
      replayTime = null;
      curtain.visible = false;
      nowLine.visible = false;
    } else {
      replayTime = Math.max(store.tMin, t);
      curtain.left = replayTime * MS;
      nowLine.location = replayTime * MS;
      curtain.visible = true;
      nowLine.visible = true;
    }
    const fraction = replayTime === null ? 1 : (replayTime - store.tMin) / Math.max(end - store.tMin, 1e-9);
    if (scrubber) scrubber.value = String(Math.round(fraction * Number(scrubber.max)));
    if (timeLabel) timeLabel.textContent = replayTime === null ? "end" : `${Math.round(replayTime).toLocaleString()} s`;
    container.dataset.revealed = String(revealedCount());
    container.dataset.replayTime = replayTime === null ? "" : String(replayTime);
  }
  function frame(now) {
    if (!playing) return;
    const dt = lastFrame === null ? 0 : (now - lastFrame) / 1000;
    lastFrame = now;
    const seconds = Number(speedSelect ? speedSelect.value : 30);
    const next = (replayTime === null ? store.tMin : replayTime) + (store.tMax - store.tMin) * dt / seconds;
    setTime(next);
    if (replayTime === null) pause();
    else requestAnimationFrame(frame);
  }
  function play() {
    if (store.count === 0) return;
    if (replayTime === null) setTime(store.tMin);
    playing = true;
    lastFrame = null;
    if (playButton) playButton.textContent = "Pause";
    requestAnimationFrame(frame);
  }
  function pause() {
    playing = false;
    if (playButton) playButton.textContent = "Play";
  }
  if (playButton) playButton.addEventListener("click", () => (playing ? pause() : play()));
  if (scrubber) {
    scrubber.addEventListener("input", () => {
      pause();
      const fraction = Number(scrubber.value) / Number(scrubber.max);
      setTime(store.tMin + fraction * (store.tMax - store.tMin));
    });
  }

  // --- Loading: one request for a finished run, the websocket for a live one -------------------
  // Progress and status go to the page (static/runs/run.js) as DOM events.
  let finished = config.finished;
  let socket = null;
  let retryMs = 500;
  let connections = 0; // websocket connections opened (reconnects included)
  let ignored = 0; // chunks received again after a reconnect (seq already held) and dropped

  function markReady() {
    hooks.ready = true;
    container.dataset.ready = "true";
    container.dataset.lastSeq = String(lastSeq);
  }
  function announce(name, detail) {
    document.dispatchEvent(new CustomEvent(`gridweb:${name}`, { detail }));
  }

  function onChunk(chunk) {
    if (chunk.kind === "status") {
      finished = ["done", "failed", "cancelled"].includes(chunk.status);
      announce("status", { status: chunk.status, error: chunk.error || "" });
      return;
    }
    if (typeof chunk.seq !== "number" || chunk.seq <= lastSeq) {
      ignored++; // seen already: no duplicates
      return;
    }
    if (chunk.seq !== lastSeq + 1) {
      // a gap: ask again from the last chunk we hold
      if (socket) socket.close();
      return;
    }
    lastSeq = chunk.seq;
    container.dataset.lastSeq = String(lastSeq);
    if (chunk.kind === "segments") append(chunk.segments || {});
    else if (chunk.kind === "progress") announce("progress", { fraction: chunk.fraction || 0, simTime: chunk.sim_time || 0 });
    else if (chunk.kind === "metrics") announce("progress", { fraction: 1, simTime: 0 });
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}${config.wsPath}?after=${lastSeq}`);
    socket = ws;
    connections++;
    container.dataset.connections = String(connections);
    ws.addEventListener("open", () => {
      retryMs = 500;
      markReady();
    });
    ws.addEventListener("message", (event) => {
      if (ws !== socket) return; // a connection we have given up on
      try {
        onChunk(JSON.parse(event.data));
      } catch (err) {
        console.error("gantt: bad message", err);
      }
      if (finished) ws.close(); // the status came: nothing more will
    });
    ws.addEventListener("close", (event) => {
      if (ws !== socket) return;
      socket = null;
      if (finished) return;
      if (event.code === 4403 || event.code === 4404 || event.code === 4400) {
        if (modeLabel) modeLabel.textContent = `the stream refused this page (code ${event.code})`;
        return;
      }
      setTimeout(connect, retryMs); // reconnect and replay what we missed (?after=lastSeq)
      retryMs = Math.min(RECONNECT_MAX_MS, retryMs * 2);
    });
  }

  async function loadAll() {
    const payload = await segmentsRequest;
    timings.fetched = performance.now();
    kinds = payload.kinds || kinds;
    lastSeq = payload.last_seq;
    append(payload.columns || {});
    timings.appended = performance.now();
    setTime(null);
  }

  const hooks = {
    source,
    aggregateSource,
    figure,
    segmentRenderer,
    aggregateRenderer,
    ready: false,
    timings,
    segmentsCount: () => store.count,
    lastSeq: () => lastSeq,
    mode: () => mode,
    renders: () => renders,
    xRange: () => [xRange.start / MS, xRange.end / MS],
    zoomTo(start, end) {
      xRange.setv({ start: start * MS, end: end * MS });
    },
    setView(choice) {
      viewChoice = choice;
      queueUpdate();
    },
    highlightJob,
    highlightedKey: () => highlightedKey,
    highlightedCount: () => source.selected.indices.length,
    setColouring,
    setTime,
    revealedCount,
    play,
    pause,
    finished: () => finished,
    connections: () => connections,
    ignoredChunks: () => ignored,
    // Drop the websocket as a network failure would: the page reconnects with ?after=lastSeq.
    dropConnection() {
      if (socket) socket.close();
    },
    visibleCount,
    utilisation,
    keyOf: (i) => store.key[i],
    // How many rectangles Bokeh's glyph holds for drawing (what the segments renderer draws).
    drawnCount() {
      const view = plotView && plotView.renderer_views.get(segmentRenderer);
      return view && segmentRenderer.visible ? view.glyph.data_size : 0;
    },
    // The centre of segment i in the page's (client) coordinates, for pointer tests.
    screenPoint(i) {
      const frame = plotView.frame;
      const box = plotView.el.getBoundingClientRect();
      const data = source.data;
      const x = frame.x_scale.compute((data.left[i] + data.right[i]) / 2);
      const y = frame.y_scale.compute((data.bottom[i] + data.top[i]) / 2);
      return { x: box.left + x, y: box.top + y };
    },
    segment: (i) => ({ t0: store.t0[i], t1: store.t1[i], cluster: store.cluster[i], key: store.key[i] }),
  };
  window.gridwebGantt = hooks;

  const viewSelect = document.getElementById("gantt-view");
  if (viewSelect) viewSelect.addEventListener("change", () => hooks.setView(viewSelect.value));

  Bokeh.Plotting.show(figure, container).then((view) => {
    plotView = view;
    timings.shown = performance.now();
    setColouring(colourSelect ? colourSelect.value : "job");
    if (finished) {
      loadAll().then(() => {
        updateView();
        markReady();
        timings.ready = performance.now();
        announce("gantt-ready", { count: store.count });
      }).catch((err) => {
        if (modeLabel) modeLabel.textContent = `could not load the segments: ${err.message}`;
        container.dataset.error = err.message;
        announce("gantt-ready", { error: err.message });
      });
    } else {
      connect();
    }
  });
})();
