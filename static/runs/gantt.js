/* GridWeb's Gantt chart of a run, drawn with BokehJS (static/bokeh/), at any scale.
 *
 * One row per processor, clusters stacked in bands (MODELS.md §8 segments: cluster, first
 * processor, processor count, t0, t1, job, component, kind). Under it, a strip with the same time
 * axis: busy processors and queue length per cluster and in total.
 *
 * Where the rectangles come from (docs/web.md, "The live Gantt"):
 *   - the websocket /ws/runs/<id>/?after=N while the run goes: binary frames of typed columns
 *     (static/runs/frames.js) appended as they come, the rows closed in each chunk's window of
 *     simulated time plus the segments in progress (drawn up to the time reached, hatched). The
 *     highest seq held is kept; a closed socket reconnects with ?after=<that seq>.
 *   - tiles, /runs/<id>/gantt/tile?t0&t1&width&height: the server decides the level of detail.
 *     Few segments in the window: they come as rows; many: an occupancy raster per kind (one
 *     column per pixel, one processor band per pixel row), drawn as one image per cluster. A
 *     finished run is drawn from tiles only; a live run once it has streamed more rows than a
 *     page holds (the server then sends rowless summary frames), or when its rows in view are
 *     too many to draw.
 * The page never holds more than one tile and the streamed rows (at most 100,000).
 *
 * Hover a rectangle (or a raster pixel) for what it is; click it to highlight every segment of
 * its job at any zoom (asked of the server: /runs/<id>/gantt/job, /gantt/at). Finished runs can
 * be replayed under a curtain. Every chart exports as SVG or PNG (static/runs/figure_export.js).
 *
 * A page may hold several charts (the compare page, sharing one time axis): new GridwebGantt(
 * container, config, {xRange}). The run page's chart is window.gridwebGantt (test hooks, below),
 * with data-* attributes on its container (ready, mode, segments-count, visible, last-seq,
 * highlighted, colour, revealed, replay-time, frontier).
 */
(function () {
  "use strict";

  const MS = 1000; // the x axis is a timedelta axis in milliseconds; times are seconds elsewhere
  // the server's (simengine.gantt.KIND_NAMES, gridweb/runs/gantt_tiles.py KIND_COLOURS), through the chart's config
  let KIND_NAMES = ["run", "claimed", "reservation", "suspended", "killed", "stretched", "transfer", "down"];
  let KIND_COLOURS = ["#3b75af", "#f0b429", "#8e6cbf", "#9aa5b1", "#d64545", "#2f9e8f", "#e07b39", "#3a3a3a"];
  const KIND_RESERVATION = 2;
  const KIND_CLAIMED = 1;
  // Kinds that lie over others or are short and must be seen at any zoom: drawn again as outlines.
  const OUTLINED = new Set([KIND_CLAIMED, KIND_RESERVATION]);
  const BAND_COLOURS = ["#eef3fa", "#faf6ee"];
  const STRIP_COLOURS = ["#3b75af", "#e07b39", "#2f9e8f", "#8e6cbf", "#d64545", "#7f7f7f", "#bcbd22", "#17becf"];
  const EXACT_IN_VIEW = 12000; // streamed rows drawn as rectangles at most (more: a raster tile)
  const STREAM_LIMIT = 100000; // the server's LIVE_ROWS_LIMIT: rows a page holds from the stream
  const TILE_DEBOUNCE_MS = 80;
  const STREAM_REDRAW_MS = 250;
  const LIVE_TILE_EVERY_MS = 500;
  const RECONNECT_MAX_MS = 10000;

  // 256 job colours around the hue circle (golden angle), as hex for Bokeh's palette.
  function hsl(h, s, l) {
    const a = s * Math.min(l, 1 - l);
    const f = (n) => {
      const k = (n + h / 30) % 12;
      const c = l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
      return Math.round(c * 255).toString(16).padStart(2, "0");
    };
    return `#${f(0)}${f(8)}${f(4)}`;
  }
  const JOB_PALETTE = Array.from({ length: 256 }, (_, i) => hsl((i * 137.508) % 360, 0.45 + (i % 3) * 0.1,
    0.42 + ((i >> 2) % 3) * 0.08));

  let ndarray = null;
  function toNdarray(values, shape) {
    if (ndarray === null) ndarray = Bokeh.require("core/util/ndarray").ndarray;
    return ndarray(values, { dtype: "uint32", shape });
  }

  // --- Growable typed columns ------------------------------------------------------------------
  class Columns {
    constructor(types) {
      this.types = types;
      this.n = 0;
      this.cap = 0;
      this.data = {};
      for (const [name, Type] of Object.entries(types)) this.data[name] = new Type(0);
    }
    reserve(m) {
      if (this.n + m <= this.cap) return;
      const cap = Math.max(1024, this.cap * 2, this.n + m);
      for (const [name, Type] of Object.entries(this.types)) {
        const grown = new Type(cap);
        grown.set(this.data[name].subarray(0, this.n));
        this.data[name] = grown;
      }
      this.cap = cap;
    }
    view() {
      const out = {};
      for (const name of Object.keys(this.types)) out[name] = this.data[name].subarray(0, this.n);
      return out;
    }
  }

  const ROW_TYPES = {
    left: Float64Array, right: Float64Array, bottom: Float64Array, top: Float64Array, t0: Float64Array,
    t1: Float64Array, kind: Int8Array, hue: Uint8Array, cluster: Int16Array, first: Int32Array, last: Int32Array,
    procs: Int32Array, job_id: Float64Array, stream: Int32Array, open: Uint8Array,
  };

  // The glyph columns of segment rows (one typed loop per batch; no objects per row).
  function appendRows(target, rows, layout, open, clipAt) {
    const m = rows.t0.length;
    if (!m) return;
    target.reserve(m);
    const d = target.data;
    const at = target.n;
    d.t0.set(rows.t0, at);
    d.kind.set(rows.kind, at);
    d.cluster.set(rows.cluster, at);
    d.first.set(rows.first_processor, at);
    d.procs.set(rows.processors, at);
    d.job_id.set(rows.job_id, at);
    d.stream.set(rows.stream, at);
    const offsets = layout.offsets;
    for (let i = 0; i < m; i++) {
      const k = at + i;
      let t1 = rows.t1[i];
      if (open && (clipAt !== null && (t1 > clipAt || t1 !== t1))) t1 = clipAt; // in progress: up to now
      d.t1[k] = t1;
      d.left[k] = rows.t0[i] * MS;
      d.right[k] = t1 * MS;
      const y = (offsets[rows.cluster[i]] || 0) + rows.first_processor[i];
      d.bottom[k] = y;
      d.top[k] = y + rows.processors[i];
      d.last[k] = rows.first_processor[i] + rows.processors[i] - 1;
      // a stable colour per job: the same job has the same colour on every page
      const h = Math.imul((rows.job_id[i] | 0) ^ Math.imul(rows.stream[i] + 1, 0x9e3779b1), 0x85ebca6b);
      d.hue[k] = (h ^ (h >>> 13)) & 255;
      d.open[k] = open ? 1 : 0;
    }
    target.n += m;
  }

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

  function fmtTime(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
    return `${Number(seconds).toLocaleString(undefined, { maximumFractionDigits: 3 })} s`;
  }

  class GridwebGantt {
    constructor(container, config, options = {}) {
      this.container = container;
      this.config = config;
      this.options = options;
      this.layout = layoutOf(config.clusters || []);
      if (config.kindColours) KIND_COLOURS = config.kindColours;
      if (config.kinds) KIND_NAMES = config.kinds;
      this.streamNames = config.streams || [];
      this.finished = Boolean(config.finished);
      this.timings = { script: performance.now() };
      this.ready = false;
      this.lastSeq = -1;
      this.connectionsOpened = 0;
      this.ignored = 0;
      this.socket = null;
      this.retryMs = 500;
      // rows streamed from the websocket (live), the open rows of the last chunk, the last tile
      this.streamed = new Columns(ROW_TYPES);
      this.openRows = new Columns(ROW_TYPES);
      this.openRaw = null;
      this.frontier = null;
      this.omitted = false; // the stream stopped sending rows: the page draws from tiles
      this.totalCount = Number(config.segmentsCount || 0);
      this.tile = null;
      this.tileRows = new Columns(ROW_TYPES);
      this.tileInFlight = null;
      this.tileWanted = false;
      this.tileStale = false;
      this.lastTileAt = -Infinity;
      this.kindsPresent = new Set();
      this.colourBy = "job";
      this.userColour = false;
      this.viewChoice = "auto";
      this.mode = "rows";
      this.shownRows = null; // "stream" | "tile": which rows the rectangles show
      this.lastStreamDraw = -Infinity;
      this.highlighted = null; // {key, count}
      this.replayTime = null;
      this.playing = false;
      this.frameTimes = [];
      this.ingested = 0;
      this.ingestMs = 0;
      this.queueSamples = []; // live: [time, queued per cluster]
      this.replication = 0; // the replication drawn (a done run's other ones are simulated again)
      container.dataset.colour = this.colourBy;
      this.build();
    }

    // --- The figures ---------------------------------------------------------------------------
    build() {
      const layout = this.layout;
      // an hour until the first segments set the range (an empty axis of 1 ms read "000us")
      const xRange = this.options.xRange || new Bokeh.Range1d({ start: 0, end: 3600 * MS });
      this.xRange = xRange;
      this.ownsRange = !this.options.xRange;
      const yRange = new Bokeh.Range1d({ start: -layout.gap / 2, end: layout.top + layout.gap / 2 });
      const figure = Bokeh.Plotting.figure({
        height: this.options.height || Math.max(320, Math.min(720, 160 + 40 * layout.clusters.length + layout.top * 2)),
        sizing_mode: "stretch_width",
        x_range: xRange, y_range: yRange,
        output_backend: "canvas",
        tools: "xpan,xwheel_zoom,box_zoom,reset",
        active_scroll: "xwheel_zoom",
        x_axis_type: "timedelta",
        x_axis_label: this.options.title ? null : "simulated time",
        y_axis_label: "processors by cluster",
        title: this.options.title || null,
      });
      figure.toolbar.logo = null;
      figure.xgrid.visible = false;
      figure.ygrid.visible = false;
      figure.min_border_left = 90;
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

      const empty = () => new Columns(ROW_TYPES).view();
      this.rowsSource = new Bokeh.ColumnDataSource({ data: empty() });
      this.openSource = new Bokeh.ColumnDataSource({ data: empty() });
      this.outlineSource = new Bokeh.ColumnDataSource({ data: empty() });
      this.rasterSource = new Bokeh.ColumnDataSource({ data: { image: [], x: [], y: [], dw: [], dh: [] } });
      this.highlightSource = new Bokeh.ColumnDataSource({ data: { left: [], right: [], bottom: [], top: [] } });

      const kindMapper = new Bokeh.LinearColorMapper({ palette: KIND_COLOURS, low: -0.5, high: KIND_COLOURS.length - 0.5 });
      const jobMapper = new Bokeh.LinearColorMapper({ palette: JOB_PALETTE, low: -0.5, high: 255.5 });
      const quad = (source, fill, extra = {}) => figure.quad({
        left: { field: "left" }, right: { field: "right" }, bottom: { field: "bottom" }, top: { field: "top" },
        source, fill_color: fill, line_color: null, fill_alpha: 0.9, ...extra,
      });
      this.rasterRenderer = figure.image_rgba({
        image: { field: "image" }, x: { field: "x" }, y: { field: "y" }, dw: { field: "dw" }, dh: { field: "dh" },
        source: this.rasterSource,
      });
      // one renderer for the rows (each data change costs Bokeh a pass per renderer); colouring by
      // job or by kind swaps its fill, a colour mapper over the hue or kind column
      this.colourSpecs = { job: { field: "hue", transform: jobMapper }, kind: { field: "kind", transform: kindMapper } };
      this.rowsRenderer = quad(this.rowsSource, this.colourSpecs.job);
      // reservation windows and claims: outlined on top, so they show over what runs inside them
      this.outlines = quad(this.outlineSource, null, {
        fill_alpha: 0, line_color: { field: "kind", transform: kindMapper }, line_width: 2, hatch_pattern: "/",
        hatch_color: { field: "kind", transform: kindMapper }, hatch_alpha: 0.5, hatch_scale: 8,
      });
      // segments in progress (live): hatched, up to the simulated time reached
      this.openRenderer = quad(this.openSource, { field: "kind", transform: kindMapper }, {
        fill_alpha: 0.55, hatch_pattern: "\\", hatch_color: "#ffffff", hatch_alpha: 0.6, hatch_scale: 6,
      });
      this.highlightRenderer = figure.quad({
        left: { field: "left" }, right: { field: "right" }, bottom: { field: "bottom" }, top: { field: "top" },
        source: this.highlightSource, fill_alpha: 0, line_color: "#111", line_width: 2,
      });
      const names = (list) => new Bokeh.CustomJSHover({ code: `return (${JSON.stringify(list)})[value] ?? String(value)` });
      // a reservation's row is named by the reservation (its job id is its index + 1)
      const jobName = new Bokeh.CustomJSHover({
        args: { reservations: this.config.reservations || [], reservationStream: this.config.reservationStream ?? -1 },
        code: "try { const ds = special_vars.glyph_view.parent.model.data_source; " +
          "if (ds.data.stream[special_vars.index] === reservationStream) return reservations[value - 1] ?? String(value); " +
          "} catch (err) { /* a plain job id */ } return String(value)",
      });
      this.hover = new Bokeh.HoverTool({
        renderers: [this.rowsRenderer, this.openRenderer, this.outlines],
        tooltips: [
          ["job", "@job_id{custom}"], ["stream", "@stream{custom}"], ["cluster", "@cluster{custom}"],
          ["processors", "@first–@last"], ["t0", "@t0{0,0.[000]} s"], ["t1", "@t1{0,0.[000]} s"],
          ["kind", "@kind{custom}"],
        ],
        formatters: {
          "@job_id": jobName,
          "@stream": names(this.streamNames), "@cluster": names(layout.clusters.map((c) => c.name)),
          "@kind": names(KIND_NAMES),
        },
      });
      figure.add_tools(this.hover);
      figure.add_tools(new Bokeh.TapTool({ renderers: [this.rowsRenderer, this.openRenderer] }));
      for (const source of [this.rowsSource, this.openSource]) {
        source.selected.properties.indices.change.connect(() => this.onTap(source));
      }

      this.curtain = new Bokeh.BoxAnnotation({ left: 0, fill_color: "#ffffff", fill_alpha: 0.94, line_alpha: 0,
        level: "overlay", visible: false });
      this.nowLine = new Bokeh.Span({ location: 0, dimension: "height", line_color: "#d64545", line_width: 2,
        visible: false });
      this.frontierLine = new Bokeh.Span({ location: 0, dimension: "height", line_color: "#2f9e8f", line_width: 1,
        line_dash: "dashed", visible: false });
      figure.add_layout(this.curtain);
      figure.add_layout(this.nowLine);
      figure.add_layout(this.frontierLine);
      this.figure = figure;

      // The strip: busy processors and queue length over the same time axis.
      const stripColumns = { x: new Float64Array(0) };
      for (let i = 0; i <= layout.clusters.length; i++) {
        stripColumns[`busy_${i}`] = new Float64Array(0);
        stripColumns[`queue_${i}`] = new Float64Array(0);
      }
      this.stripSource = new Bokeh.ColumnDataSource({ data: stripColumns });
      // one figure (one canvas to paint at each frame): busy % on the left axis (solid lines),
      // queued jobs on the right one (dashed)
      const stripFigure = Bokeh.Plotting.figure({
        height: 150, sizing_mode: "stretch_width", x_range: xRange, x_axis_type: "timedelta",
        y_range: new Bokeh.Range1d({ start: 0, end: 105 }), tools: "xpan,xwheel_zoom,reset",
        active_scroll: "xwheel_zoom", y_axis_label: "busy % (solid)", x_axis_label: "simulated time",
        output_backend: "canvas",
      });
      stripFigure.toolbar.logo = null;
      stripFigure.min_border_left = 90;
      stripFigure.extra_y_ranges = { queue: new Bokeh.Range1d({ start: 0, end: 1 }) };
      stripFigure.add_layout(new Bokeh.LinearAxis({ y_range_name: "queue", axis_label: "queued jobs (dashed)" }),
        "right");
      const series = ["total", ...layout.clusters.map((c) => c.name)];
      series.forEach((name, i) => {
        const colour = i === 0 ? "#222" : STRIP_COLOURS[(i - 1) % STRIP_COLOURS.length];
        const width = i === 0 ? 2 : 1.2;
        stripFigure.line({ x: { field: "x" }, y: { field: `busy_${i}` }, source: this.stripSource,
          line_color: colour, line_width: width, legend_label: name });
        stripFigure.line({ x: { field: "x" }, y: { field: `queue_${i}` }, source: this.stripSource,
          line_color: colour, line_width: width, line_dash: [4, 3], y_range_name: "queue", legend_label: name });
      });
      stripFigure.legend.location = "top_left";
      stripFigure.legend.orientation = "horizontal";
      stripFigure.legend.label_text_font_size = "8pt";
      stripFigure.legend.background_fill_alpha = 0.6;
      stripFigure.legend.click_policy = "hide";
      this.stripFigure = stripFigure;
      this.layoutModel = new Bokeh.Column({ children: [figure, this.stripFigure],
        sizing_mode: "stretch_width" });

      xRange.properties.start.change.connect(() => this.viewChanged());
      xRange.properties.end.change.connect(() => this.viewChanged());
      this.followData = this.ownsRange;
      xRange.properties.start.change.connect(() => { if (!this.settingRange) this.followData = false; });
    }

    async show() {
      const views = await Bokeh.Plotting.show(this.layoutModel, this.container);
      this.adopt(Array.isArray(views) ? views[0] : views);
      return this;
    }

    // The view Bokeh made of this chart's layout (alone, or as part of a page's bigger layout).
    adopt(root) {
      this.rootView = root;
      this.plotView = root.child_views ? root.child_views[0] : root;
      this.timings.shown = performance.now();
      this.installRasterPointer();
      this.measureFrames();
    }

    plotWidth() {
      return this.plotView && this.plotView.frame ? Math.max(50, Math.round(this.plotView.frame.bbox.width))
        : Math.max(50, this.container.clientWidth - 100);
    }
    plotHeight() {
      return this.plotView && this.plotView.frame ? Math.max(50, Math.round(this.plotView.frame.bbox.height))
        : Math.max(50, this.figure.height - 60);
    }
    viewRange() {
      return [this.xRange.start / MS, this.xRange.end / MS];
    }

    // --- Following the data and the view -------------------------------------------------------
    fitRange(a, b) {
      if (!this.followData || !(b > a)) return;
      const pad = (b - a) * 0.01;
      this.settingRange = true;
      const start = (a - pad) * MS;
      const end = (b + pad) * MS;
      this.xRange.setv({ start, end, reset_start: start, reset_end: end });
      this.settingRange = false;
    }

    viewChanged() {
      if (this.updateQueued) return;
      this.updateQueued = true;
      requestAnimationFrame(() => {
        this.updateQueued = false;
        this.refresh();
      });
    }

    // How many of the rows held are in view (typed loop over at most STREAM_LIMIT rows).
    static inView(columns, a, b) {
      const d = columns.data;
      let n = 0;
      for (let i = 0; i < columns.n; i++) if (d.t0[i] < b && d.t1[i] >= a) n++;
      return n;
    }
    streamedInView(a, b) {
      return GridwebGantt.inView(this.streamed, a, b) + this.openRows.n;
    }

    // Decide what to draw for the current view: the streamed rows, the tile's rows or its raster.
    refresh() {
      const [a, b] = this.viewRange();
      const live = !this.finished && !this.omitted;
      let inView;
      if (live) {
        inView = this.streamedInView(a, b);
        const wantRaster = this.viewChoice === "raster" || (this.viewChoice === "auto" && inView > EXACT_IN_VIEW);
        if (!wantRaster) {
          this.showStreamRows();
          this.setMode("rows", inView);
          if (Date.now() - this.lastTileAt > 1000 || this.tileStale) this.requestTile(false); // the strip
          return;
        }
      }
      const t = this.tile;
      const covers = t && t.window[0] <= a && t.window[1] >= b;
      const span = b - a;
      const tileSpan = t ? t.window[1] - t.window[0] : 0;
      // a raster is good while its columns stay about a pixel wide; rows while they cover the view
      // (a raster a little coarser or finer than the screen is redrawn by Bokeh for free: only a
      // zoom that makes its columns over two pixels wide, or a fifth of one, asks for another)
      const fine = t && (t.mode === "rows" ? true : tileSpan / t.bins <= 2 * span / this.plotWidth()
        && tileSpan / t.bins >= 0.2 * span / this.plotWidth());
      if (!covers || !fine || (t && t.mode === "rows" && this.viewChoice === "raster")) this.requestTile(true);
      else if (this.tileStale) {
        // chunks came since the tile: ask again, at most every LIVE_TILE_EVERY_MS -- and, when that
        // is too soon, once it is not (the last chunks must reach the view even if nothing follows)
        const wait = this.lastTileAt + LIVE_TILE_EVERY_MS - Date.now();
        if (wait < 0) this.requestTile(false);
        else if (!this.staleTimer) {
          this.staleTimer = setTimeout(() => {
            this.staleTimer = null;
            this.viewChanged();
          }, wait + 1);
        }
      }
      if (t) this.showTile();
    }

    setMode(mode, inView) {
      const ds = this.container.dataset;
      const key = `${mode}:${this.colourBy}`;
      if (key !== this.modeKey) { // property changes make Bokeh lay out and paint again: only on change
        this.modeKey = key;
        this.mode = mode;
        const rows = mode === "rows";
        this.rowsRenderer.visible = rows;
        this.rowsRenderer.glyph.fill_color = this.colourSpecs[this.colourBy];
        this.outlines.visible = rows;
        this.openRenderer.visible = rows;
        this.rasterRenderer.visible = !rows;
        ds.mode = rows ? "segments" : "raster";
        this.drawLegend();
      }
      if (inView !== undefined) ds.visible = String(inView);
      ds.segmentsCount = String(this.segmentsCount());
      this.updateLabel();
    }

    // The "n segments in view" line: at most every 200 ms (a text of another width moves the page's
    // layout, which Bokeh then measures again).
    updateLabel() {
      const label = this.options.modeLabel;
      if (!label || this.labelTimer) return;
      this.labelTimer = setTimeout(() => {
        this.labelTimer = null;
        const visible = Number(this.container.dataset.visible || 0).toLocaleString();
        const text = this.mode === "rows"
          ? `${visible} of ${this.segmentsCount().toLocaleString()} segments in view`
          : `occupancy per cluster and kind (${visible} segments in view; zoom in for single jobs)`;
        if (label.textContent !== text) label.textContent = text;
      }, 200);
    }

    // The streamed rows, drawn again at most every STREAM_REDRAW_MS while chunks come (each
    // redraw hands Bokeh every row held; chunks that arrive together are drawn together).
    showStreamRows() {
      if (this.shownRows === "stream" && !this.streamDirty) return;
      const wait = this.lastStreamDraw + STREAM_REDRAW_MS - performance.now();
      if (this.shownRows === "stream" && wait > 0 && !this.streamComplete) {
        if (!this.streamTimer) {
          this.streamTimer = setTimeout(() => {
            this.streamTimer = null;
            this.viewChanged();
          }, wait);
        }
        return;
      }
      this.streamDirty = false;
      this.shownRows = "stream";
      this.lastStreamDraw = performance.now();
      this.setRows(this.streamed.view(), this.openRows.view());
    }

    setRows(rows, open) {
      this.rowsSource.data = rows;
      this.openSource.data = open;
      // outlines: the claims and reservation windows among the rows
      const outline = new Columns(ROW_TYPES);
      const keep = [];
      for (let i = 0; i < rows.kind.length; i++) if (OUTLINED.has(rows.kind[i])) keep.push(i);
      outline.reserve(keep.length);
      for (const name of Object.keys(ROW_TYPES)) {
        const src = rows[name];
        const dst = outline.data[name];
        for (let j = 0; j < keep.length; j++) dst[j] = src[keep[j]];
      }
      outline.n = keep.length;
      this.outlineSource.data = outline.view();
      for (let i = 0; i < rows.kind.length; i++) this.kindsPresent.add(rows.kind[i]);
      for (let i = 0; i < open.kind.length; i++) this.kindsPresent.add(open.kind[i]);
      this.kindsChanged();
    }

    // --- Tiles ---------------------------------------------------------------------------------
    requestTile(debounce) {
      this.tileWanted = true;
      if (this.tileTimer || this.tileInFlight) return;
      this.tileTimer = setTimeout(() => {
        this.tileTimer = null;
        this.fetchTile();
      }, debounce ? TILE_DEBOUNCE_MS : 0);
    }

    async fetchTile(early = null) {
      if (!this.tileWanted) return;
      this.tileWanted = false;
      this.tileStale = false;
      const [a, b] = this.viewRange();
      const params = new URLSearchParams({ width: this.plotWidth(), height: this.plotHeight() });
      if (this.replication) params.set("replication", this.replication);
      if (this.ready && b > a && !this.followData) {
        params.set("t0", a);
        params.set("t1", b);
      }
      const started = performance.now();
      const replication = this.replication;
      this.lastTileAt = Date.now();
      try {
        const ask = () => fetch(`${this.config.tileUrl}?${params}`, { credentials: "same-origin" });
        this.tileInFlight = early ? early.then((r) => (r.ok ? r : ask()), ask) : ask();
        const response = await this.tileInFlight;
        if (response.status === 409) throw new Error(await response.text()); // says why
        if (!response.ok) throw new Error(`tile: HTTP ${response.status}`);
        const { header, arrays } = GridwebFrames.decode(await response.arrayBuffer());
        this.timings.lastTile = performance.now() - started;
        if (replication !== this.replication) this.tileWanted = true; // asked before the switch
        else this.acceptTile(header, arrays);
      } catch (err) {
        this.container.dataset.error = err.message;
        if (this.options.modeLabel) this.options.modeLabel.textContent = `could not load the chart: ${err.message}`;
      } finally {
        this.tileInFlight = null;
        if (this.tileWanted) this.requestTile(false);
      }
    }

    acceptTile(header, arrays) {
      this.tile = header;
      this.tileArrays = arrays;
      this.tile.bins = header.bins || 1;
      this.totalCount = Math.max(this.totalCount, header.count);
      if (this.finished) this.totalCount = header.count;
      for (const k of header.kind_codes || []) this.kindsPresent.add(k);
      if (header.frontier !== null && header.frontier !== undefined) this.setFrontier(header.frontier);
      if (this.followData && header.span) this.fitRange(header.span[0], Math.max(header.span[1], this.frontier || 0));
      if (header.mode === "rows") {
        this.tileRows.n = 0;
        appendRows(this.tileRows, GridwebFrames.rows(arrays, "s"), this.layout, false, null);
        this.tileOpen = new Columns(ROW_TYPES);
        appendRows(this.tileOpen, GridwebFrames.rows(arrays, "o"), this.layout, true, null);
      } else {
        this.drawRaster(header, arrays.rgba);
      }
      this.drawStrip(header, arrays);
      this.tileShownAs = null;
      this.showTile();
      this.kindsChanged();
      if (!this.ready && this.plotView) this.markReady();
      this.container.dataset.tiles = String(Number(this.container.dataset.tiles || 0) + 1);
      this.container.dataset.tileSeq = String(header.seq);
    }

    showTile() {
      const t = this.tile;
      if (!t) return;
      const live = !this.finished && !this.omitted;
      if (t.mode === "rows") {
        if (live) return; // the streamed rows are fresher
        if (this.shownRows !== "tile" || this.tileShownAs !== t) {
          this.setRows(this.tileRows.view(), this.tileOpen.view());
          this.shownRows = "tile";
          this.tileShownAs = t;
        }
        const [a, b] = this.viewRange();
        this.setMode("rows", GridwebGantt.inView(this.tileRows, a, b) + GridwebGantt.inView(this.tileOpen, a, b));
      } else {
        this.shownRows = null;
        this.setMode("raster", t.visible);
      }
      if (this.replayTime !== null) this.setTime(this.replayTime);
    }

    // One RGBA image per cluster, composed by the server (gridweb/runs/gantt_tiles.py): its rows
    // of the tile's pixels are a view of the received buffer, not a copy.
    drawRaster(header, rgba) {
      const bins = header.bins;
      const data = { image: [], x: [], y: [], dw: [], dh: [] };
      let band = 0;
      header.bands.forEach((bands, c) => {
        data.image.push(toNdarray(rgba.subarray(band * bins, (band + bands) * bins), [bands, bins]));
        data.x.push(header.window[0] * MS);
        data.y.push(this.layout.offsets[c]);
        data.dw.push((header.window[1] - header.window[0]) * MS);
        data.dh.push(this.layout.clusters[c].processors);
        band += bands;
      });
      this.rasterSource.data = data;
    }

    drawStrip(header, arrays) {
      const busy = arrays["series.busy"];
      const queue = arrays["series.queue"];
      if (!busy) return;
      const [C, bins] = busy.shape;
      const [a, b] = header.window;
      const width = (b - a) / bins;
      const x = new Float64Array(bins);
      for (let i = 0; i < bins; i++) x[i] = (a + (i + 0.5) * width) * MS;
      const data = { x };
      const totalBusy = new Float64Array(bins);
      const totalQueue = new Float64Array(bins);
      const capacity = this.layout.clusters.reduce((s, c) => s + c.processors, 0) || 1;
      const frontier = this.finished ? Infinity : (this.frontier ?? Infinity);
      for (let c = 0; c < C; c++) {
        const p = this.layout.clusters[c] ? this.layout.clusters[c].processors : 1;
        const bc = new Float64Array(bins);
        const qc = new Float64Array(bins);
        for (let i = 0; i < bins; i++) {
          const after = a + i * width >= frontier;
          bc[i] = after ? NaN : 100 * busy[c * bins + i] / p;
          qc[i] = queue[c * bins + i];
          totalBusy[i] += after ? NaN : busy[c * bins + i];
          totalQueue[i] += queue[c * bins + i];
        }
        data[`busy_${c + 1}`] = bc;
        data[`queue_${c + 1}`] = qc;
      }
      for (let i = 0; i < bins; i++) totalBusy[i] = 100 * totalBusy[i] / capacity;
      data.busy_0 = totalBusy;
      data.queue_0 = totalQueue;
      this.stripSource.data = data;
      let most = 1;
      for (let i = 0; i < bins; i++) if (totalQueue[i] > most) most = totalQueue[i];
      this.stripFigure.extra_y_ranges.queue.end = most * 1.08;
    }

    // --- The live stream ---------------------------------------------------------------------------
    connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      // the attempt whose chunks the page holds, when it knows it (a page opened on a queued run
      // gets the first attempt's; the stream says "restart" when a later one begins)
      const attempt = this.config.attempt > 0 ? `&attempt=${this.config.attempt}` : "";
      const ws = new WebSocket(`${scheme}://${location.host}${this.config.wsPath}?after=${this.lastSeq}${attempt}`);
      ws.binaryType = "arraybuffer";
      this.socket = ws;
      this.connectionsOpened++;
      this.container.dataset.connections = String(this.connectionsOpened);
      ws.addEventListener("open", () => {
        this.retryMs = 500;
        if (!this.ready) this.markReady();
      });
      ws.addEventListener("message", (event) => {
        if (ws !== this.socket) return; // a connection given up on
        try {
          if (typeof event.data === "string") this.onChunk(JSON.parse(event.data), null);
          else {
            const started = performance.now();
            const { header, arrays } = GridwebFrames.decode(event.data);
            this.onChunk(header, arrays);
            this.ingestMs += performance.now() - started;
          }
        } catch (err) {
          console.error("gantt: bad message", err);
        }
        if (this.finished) ws.close(); // the status came: nothing more will
      });
      ws.addEventListener("close", (event) => {
        if (ws !== this.socket) return;
        this.socket = null;
        if (this.finished) return;
        if ([4400, 4404].includes(event.code)) {
          if (this.options.modeLabel) this.options.modeLabel.textContent = `the stream refused this page (code ${event.code})`;
          return;
        }
        setTimeout(() => this.connect(), this.retryMs); // reconnect and replay what was missed
        this.retryMs = Math.min(RECONNECT_MAX_MS, this.retryMs * 2);
      });
    }

    announce(name, detail) {
      document.dispatchEvent(new CustomEvent(`gridweb:${name}`, { detail }));
    }

    onChunk(chunk, arrays) {
      if (chunk.kind === "restart") {
        // the run's worker died and another started it again: its stream begins anew, and so
        // does the page (what it drew was the earlier attempt's)
        this.container.dataset.restarted = String(chunk.attempt);
        this.finished = true; // no reconnect
        if (this.socket) this.socket.close();
        this.announce("restart", { attempt: chunk.attempt });
        location.reload();
        return;
      }
      if (chunk.kind === "status") {
        this.finished = ["done", "failed", "cancelled"].includes(chunk.status);
        this.announce("status", { status: chunk.status, error: chunk.error || "" });
        if (this.finished) {
          this.frontierLine.visible = false;
          this.tileStale = true;
          this.requestTile(false); // the whole run, from what is stored
        }
        return;
      }
      if (typeof chunk.seq !== "number" || chunk.seq <= this.lastSeq) {
        this.ignored++; // seen already: no duplicates
        return;
      }
      if (chunk.seq !== this.lastSeq + 1) {
        if (this.socket) this.socket.close(); // a gap: ask again from the last chunk held
        return;
      }
      this.lastSeq = chunk.seq;
      this.container.dataset.lastSeq = String(this.lastSeq);
      if (chunk.kind === "segments") this.onSegments(chunk, arrays);
      else if (chunk.kind === "progress") this.announce("progress", { fraction: chunk.fraction || 0, simTime: chunk.sim_time || 0, etaSeconds: chunk.eta_seconds });
      else if (chunk.kind === "metrics") this.announce("progress", { fraction: 1, simTime: this.frontier || 0 });
    }

    onSegments(chunk, arrays) {
      if (chunk.omitted !== undefined || this.omitted) {
        if (!this.omitted) {
          this.omitted = true; // from now on: tiles
          this.shownRows = null;
          this.lastTileAt = 0; // the tile that shows every row, at once (no throttle, no debounce)
          this.tileStale = true;
          this.requestTile(false);
        }
        this.totalCount += chunk.omitted || 0;
      } else {
        const closed = GridwebFrames.rows(arrays, "s");
        const opened = GridwebFrames.rows(arrays, "o");
        appendRows(this.streamed, closed, this.layout, false, null);
        // the legend learns a kind as its first segment arrives, before the (throttled) redraw
        for (const rows of [closed, opened]) {
          for (let i = 0; i < rows.kind.length; i++) this.kindsPresent.add(rows.kind[i]);
        }
        this.kindsChanged();
        this.ingested += closed.t0.length;
        this.totalCount = this.streamed.n;
        if (!chunk.keep_open) this.openRaw = opened;
        this.streamDirty = true;
        // the replication's last rows are drawn at once: nothing follows them to wait for
        this.streamComplete = Boolean(chunk.final);
      }
      if (chunk.window) this.setFrontier(chunk.window[1]);
      if (!chunk.keep_open && this.openRaw && !this.omitted) {
        this.openRows.n = 0;
        appendRows(this.openRows, this.openRaw, this.layout, true, this.frontier);
      }
      if (chunk.queued) this.queueSamples.push([this.frontier, chunk.queued]);
      this.tileStale = true;
      if (chunk.final) {
        this.finalSeq = chunk.seq; // the stream's last rows: nothing of this replication follows
        this.lastTileAt = 0; // the tile that shows them, at once
      }
      const begin = this.streamed.n ? this.streamed.data.t0[0] : (chunk.window ? chunk.window[0] : 0);
      if (this.followData) this.fitRange(Math.min(begin, chunk.window ? chunk.window[0] : begin), this.frontier);
      this.container.dataset.segmentsCount = String(this.segmentsCount());
      this.container.dataset.rightmost = String(this.frontier);
      if (chunk.fraction !== undefined) this.announce("progress", { fraction: chunk.fraction, simTime: chunk.sim_time || this.frontier || 0, etaSeconds: chunk.eta_seconds });
      this.viewChanged();
    }

    setFrontier(t) {
      if (t === null || t === undefined || !Number.isFinite(t)) return;
      this.frontier = this.frontier === null ? t : Math.max(this.frontier, t);
      this.container.dataset.frontier = String(this.frontier);
      if (!this.finished) {
        this.frontierLine.location = this.frontier * MS;
        this.frontierLine.visible = true;
      }
    }

    segmentsCount() {
      if (!this.finished && !this.omitted) return this.streamed.n + this.openRows.n;
      return this.totalCount;
    }

    // --- Highlighting a job ---------------------------------------------------------------------
    onTap(source) {
      if (this.tapping) return;
      const picked = source.selected.indices;
      if (!picked.length) return;
      const d = source.data;
      const key = `${d.stream[picked[0]]}:${d.job_id[picked[0]]}`;
      this.tapping = true;
      source.selected.indices = [];
      this.tapping = false;
      this.highlightJob(key);
    }

    // Every segment of the job (key "stream:job_id"), from the server (at any zoom, whatever the
    // page holds); resolves to how many there are.
    async highlightJob(key) {
      if (key === null) {
        this.setHighlight(null, null);
        return 0;
      }
      const [stream, jobId] = String(key).split(":");
      const response = await fetch(`${this.config.jobUrl}?stream=${stream}&job_id=${jobId}` +
        `&replication=${this.replication}`, { credentials: "same-origin" });
      if (!response.ok) return 0;
      const { arrays } = GridwebFrames.decode(await response.arrayBuffer());
      const rows = new Columns(ROW_TYPES);
      appendRows(rows, GridwebFrames.rows(arrays, "s"), this.layout, false, null);
      appendRows(rows, GridwebFrames.rows(arrays, "o"), this.layout, true, this.frontier);
      return this.setHighlight(rows.n ? key : null, rows);
    }

    setHighlight(key, rows) {
      const v = rows ? rows.view() : { left: [], right: [], bottom: [], top: [] };
      this.highlightSource.data = { left: v.left, right: v.right, bottom: v.bottom, top: v.top };
      this.highlighted = key === null ? null : { key, count: rows.n };
      const dim = key === null ? 0.9 : 0.35;
      this.rowsRenderer.glyph.fill_alpha = dim;
      this.rasterRenderer.glyph.global_alpha = key === null ? 1 : 0.45;
      this.container.dataset.highlighted = String(key === null ? 0 : rows.n);
      this.container.dataset.highlightedJob = key === null ? "" : key;
      return key === null ? 0 : rows.n;
    }

    // A click on a raster: ask which segment lies under it, and highlight its job.
    installRasterPointer() {
      const el = this.plotView ? this.plotView.el : this.container;
      const tip = document.createElement("div");
      tip.className = "gantt-raster-tip";
      tip.hidden = true;
      document.body.append(tip);
      this.rasterTip = tip;
      const locate = (event) => {
        if (this.mode !== "raster" || !this.plotView) return null;
        const frame = this.plotView.frame;
        const box = this.plotView.el.getBoundingClientRect();
        const sx = event.clientX - box.left;
        const sy = event.clientY - box.top;
        if (sx < frame.bbox.left || sx > frame.bbox.right || sy < frame.bbox.top || sy > frame.bbox.bottom) return null;
        const t = frame.x_scale.invert(sx) / MS;
        const y = frame.y_scale.invert(sy);
        const c = this.layout.offsets.findIndex((o, i) => y >= o && y < o + this.layout.clusters[i].processors);
        if (c < 0) return null;
        return { t, cluster: c, processor: Math.floor(y - this.layout.offsets[c]), sx, sy };
      };
      el.addEventListener("mousemove", (event) => {
        const at = locate(event);
        if (!at || !this.tile || this.tile.mode !== "raster") {
          tip.hidden = true;
          return;
        }
        tip.hidden = false;
        tip.style.left = `${event.clientX + 14}px`;
        tip.style.top = `${event.clientY + 14}px`;
        tip.textContent = this.rasterText(at);
      });
      el.addEventListener("mouseleave", () => { tip.hidden = true; });
      el.addEventListener("click", async (event) => {
        const at = locate(event);
        if (!at) return;
        const response = await fetch(`${this.config.atUrl}?cluster=${at.cluster}&processor=${at.processor}&t=${at.t}` +
          `&replication=${this.replication}`, { credentials: "same-origin" });
        if (!response.ok) return;
        const { arrays } = GridwebFrames.decode(await response.arrayBuffer());
        let rows = GridwebFrames.rows(arrays, "s");
        if (!rows.t0.length) rows = GridwebFrames.rows(arrays, "o");
        if (rows.t0.length) this.highlightJob(`${rows.stream[0]}:${rows.job_id[0]}`);
        else this.highlightJob(null);
      });
    }

    // What a raster pixel holds: the cluster, its time span and each kind's share of it.
    rasterText(at) {
      const t = this.tile;
      const raster = this.tileArrays.raster;
      const [, nb, bins] = raster.shape;
      const x = Math.floor((at.t - t.window[0]) / (t.window[1] - t.window[0]) * bins);
      if (x < 0 || x >= bins) return "";
      const bands = t.bands[at.cluster];
      const band = t.bands.slice(0, at.cluster).reduce((s, v) => s + v, 0)
        + Math.min(bands - 1, Math.floor(at.processor / this.layout.clusters[at.cluster].processors * bands));
      const width = (t.window[1] - t.window[0]) / bins;
      const parts = [];
      t.kind_codes.forEach((code, s) => {
        const v = raster[(s * nb + band) * bins + x];
        if (v) parts.push(`${KIND_NAMES[code]} ${Math.round(v / 2.55)}%`);
      });
      const c = this.layout.clusters[at.cluster];
      return `${c.name} · ${fmtTime(t.window[0] + x * width)} – ${fmtTime(t.window[0] + (x + 1) * width)} · ` +
        (parts.length ? parts.join(", ") : "idle");
    }

    // Draw another replication of a done run (its Gantt is simulated again by the server once).
    setReplication(r) {
      const replication = Math.max(0, Number(r) || 0);
      if (replication === this.replication) return;
      this.replication = replication;
      this.tile = null;
      this.shownRows = null;
      this.setHighlight(null, null);
      this.container.dataset.replication = String(replication);
      this.container.dataset.error = "";
      if (this.options.modeLabel) this.options.modeLabel.textContent = `replication ${replication}: loading…`;
      this.tileWanted = true;
      if (!this.tileInFlight) this.fetchTile();
    }

    // --- Colour and legend ----------------------------------------------------------------------
    setColouring(by, chosen = true) {
      this.colourBy = by === "kind" ? "kind" : "job";
      if (chosen) this.userColour = true;
      this.container.dataset.colour = this.colourBy;
      if (this.options.colourSelect && this.options.colourSelect.value !== this.colourBy) {
        this.options.colourSelect.value = this.colourBy;
      }
      this.setMode(this.mode);
    }

    // Colour by kind by default as soon as the run has segments of another kind than "run".
    kindsChanged() {
      const special = [...this.kindsPresent].some((k) => k !== 0);
      if (special && !this.userColour && this.colourBy !== "kind") this.setColouring("kind", false);
      const key = [...this.kindsPresent].sort().join(",");
      if (key !== this.legendKey) {
        this.legendKey = key;
        this.drawLegend();
      }
    }

    drawLegend() {
      const legend = this.options.legend;
      if (!legend) return;
      legend.innerHTML = "";
      if (this.colourBy !== "kind" && this.mode === "rows") return;
      for (let k = 0; k < KIND_NAMES.length; k++) {
        if (!this.kindsPresent.has(k)) continue;
        const item = document.createElement("span");
        item.className = "legend-item";
        item.dataset.kind = KIND_NAMES[k];
        item.innerHTML = `<i style="background:${KIND_COLOURS[k]}"></i>`;
        item.append(KIND_NAMES[k]);
        legend.append(item);
      }
    }

    // --- Replay of a finished run (a curtain over what has not happened yet) ---------------------
    heldT0() {
      const src = this.rowsSource.data;
      return src.t0 || [];
    }
    revealedCount() {
      const t0 = this.heldT0();
      if (this.replayTime === null) return t0.length;
      let n = 0;
      for (let i = 0; i < t0.length; i++) if (t0[i] <= this.replayTime) n++;
      return n;
    }
    span() {
      if (this.tile && this.tile.span) return this.tile.span;
      const t0 = this.heldT0();
      return t0.length ? [t0[0], this.frontier || t0[t0.length - 1]] : [0, 1];
    }
    setTime(t) {
      const [begin, end] = this.span();
      if (t === null || t >= end) {
        this.replayTime = null;
        this.curtain.visible = false;
        this.nowLine.visible = false;
      } else {
        this.replayTime = Math.max(begin, t);
        this.curtain.left = this.replayTime * MS;
        this.nowLine.location = this.replayTime * MS;
        this.curtain.visible = true;
        this.nowLine.visible = true;
      }
      const fraction = this.replayTime === null ? 1 : (this.replayTime - begin) / Math.max(end - begin, 1e-9);
      const scrubber = this.options.scrubber;
      if (scrubber) scrubber.value = String(Math.round(fraction * Number(scrubber.max)));
      if (this.options.timeLabel) {
        this.options.timeLabel.textContent = this.replayTime === null ? "end" : `${Math.round(this.replayTime).toLocaleString()} s`;
      }
      this.container.dataset.revealed = String(this.revealedCount());
      this.container.dataset.replayTime = this.replayTime === null ? "" : String(this.replayTime);
    }
    play() {
      const [begin, end] = this.span();
      if (!(end > begin)) return;
      if (this.replayTime === null) this.setTime(begin);
      this.playing = true;
      let last = null;
      if (this.options.playButton) this.options.playButton.textContent = "Pause";
      const frame = (now) => {
        if (!this.playing) return;
        const dt = last === null ? 0 : (now - last) / 1000;
        last = now;
        const seconds = Number(this.options.speedSelect ? this.options.speedSelect.value : 30);
        this.setTime((this.replayTime === null ? begin : this.replayTime) + (end - begin) * dt / seconds);
        if (this.replayTime === null) this.pause();
        else requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
    }
    pause() {
      this.playing = false;
      if (this.options.playButton) this.options.playButton.textContent = "Play";
    }

    // --- Frame times (what a zoom or pan costs), for benchmarks ----------------------------------
    measureFrames() {
      let last = null;
      const tick = (now) => {
        if (last !== null) {
          this.frameTimes.push(now - last);
          if (this.frameTimes.length > 2000) this.frameTimes.splice(0, 1000);
        }
        last = now;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }

    markReady() {
      this.ready = true;
      this.container.dataset.ready = "true";
      this.container.dataset.lastSeq = String(this.lastSeq);
      this.timings.ready = performance.now();
      this.announce("gantt-ready", { count: this.segmentsCount() });
    }

    // A finished run's first tile is asked for at once, while BokehJS lays the figures out.
    prefetch() {
      if (!this.finished) return null;
      // the tile the page asked for before BokehJS loaded (templates/runs/run_detail.html), if any
      const early = this.replication === 0 ? window.gridwebEarlyTile : null;
      window.gridwebEarlyTile = null;
      this.tileWanted = true;
      return this.fetchTile(early);
    }

    async begin(first) {
      if (first) await first;
      if (this.tile && !this.ready) this.markReady();
      if (!this.finished) this.connect();
      this.viewChanged();
      return this;
    }

    start() {
      const first = this.prefetch();
      return this.show().then(() => this.begin(first));
    }

    // --- Figures --------------------------------------------------------------------------------
    async exportBlob(type) {
      const view = this.rootView;
      return view.export(type === "svg" ? "svg" : "png").to_blob();
    }

    hooks() {
      const g = this;
      return {
        gantt: g,
        get ready() { return g.ready; },
        timings: g.timings,
        get source() { return g.rowsSource; },
        figure: g.figure,
        segmentsCount: () => g.segmentsCount(),
        heldCount: () => g.rowsSource.get_length() + g.openSource.get_length(),
        finalSeq: () => (g.finalSeq === undefined ? null : g.finalSeq),
        lastSeq: () => g.lastSeq,
        mode: () => (g.mode === "rows" ? "segments" : "raster"),
        xRange: () => g.viewRange(),
        zoomTo(start, end) {
          g.followData = false;
          g.xRange.setv({ start: start * MS, end: end * MS });
        },
        setView(choice) {
          g.viewChoice = choice === "utilisation" || choice === "raster" ? "raster" : choice === "segments" ? "segments" : "auto";
          g.viewChanged();
        },
        highlightJob: (key) => g.highlightJob(key),
        highlightedKey: () => (g.highlighted ? g.highlighted.key : null),
        highlightedCount: () => (g.highlighted ? g.highlighted.count : 0),
        setColouring: (by) => g.setColouring(by),
        colourField: () => g.rowsRenderer.glyph.fill_color.field,
        setReplication: (r) => g.setReplication(r),
        replication: () => g.replication,
        setTime: (t) => g.setTime(t),
        revealedCount: () => g.revealedCount(),
        play: () => g.play(),
        pause: () => g.pause(),
        finished: () => g.finished,
        connections: () => (g.socket ? g.connectionsOpened : g.finished && g.connectionsOpened === 0 ? 0 : g.connectionsOpened),
        ignoredChunks: () => g.ignored,
        dropConnection() {
          if (g.socket) g.socket.close();
        },
        keyOf: (i) => `${g.rowsSource.data.stream[i]}:${g.rowsSource.data.job_id[i]}`,
        segment: (i) => {
          const d = g.rowsSource.data;
          return { t0: d.t0[i], t1: d.t1[i], cluster: d.cluster[i], key: `${d.stream[i]}:${d.job_id[i]}` };
        },
        drawnCount() {
          const view = g.plotView && g.plotView.renderer_views.get(g.rowsRenderer);
          return view && g.mode === "rows" ? view.glyph.data_size : 0;
        },
        screenPoint(i) {
          const frame = g.plotView.frame;
          const box = g.plotView.el.getBoundingClientRect();
          const d = g.rowsSource.data;
          return { x: box.left + frame.x_scale.compute((d.left[i] + d.right[i]) / 2),
            y: box.top + frame.y_scale.compute((d.bottom[i] + d.top[i]) / 2) };
        },
        // a point inside cluster c at processor p and time t, in page coordinates
        screenPointAt(c, p, t) {
          const frame = g.plotView.frame;
          const box = g.plotView.el.getBoundingClientRect();
          return { x: box.left + frame.x_scale.compute(t * MS),
            y: box.top + frame.y_scale.compute(g.layout.offsets[c] + p + 0.5) };
        },
        tile: () => g.tile,
        frontier: () => g.frontier,
        rightmost: () => g.frontier,
        frameTimes: () => g.frameTimes.slice(),
        resetFrameTimes() { g.frameTimes.length = 0; },
        ingestStats: () => ({ rows: g.ingested, ms: g.ingestMs }),
        exportBlob: (type) => g.exportBlob(type),
      };
    }
  }

  window.GridwebGantt = GridwebGantt;

  // --- The run page's chart -------------------------------------------------------------------
  const container = document.getElementById("gantt");
  const configElement = document.getElementById("gantt-config");
  if (!container || !configElement || typeof Bokeh === "undefined") return;
  const config = JSON.parse(configElement.textContent);
  const options = {
    modeLabel: document.getElementById("gantt-mode"),
    legend: document.getElementById("gantt-legend"),
    colourSelect: document.getElementById("gantt-colour"),
    scrubber: document.getElementById("gantt-scrubber"),
    playButton: document.getElementById("gantt-play"),
    speedSelect: document.getElementById("gantt-speed"),
    timeLabel: document.getElementById("gantt-time"),
  };
  const gantt = new GridwebGantt(container, config, options);
  window.gridwebGantt = gantt.hooks();
  if (options.colourSelect) options.colourSelect.addEventListener("change", () => gantt.setColouring(options.colourSelect.value));
  const replicationSelect = document.getElementById("gantt-replication");
  if (replicationSelect) replicationSelect.addEventListener("change", () => gantt.setReplication(replicationSelect.value));
  const viewSelect = document.getElementById("gantt-view");
  if (viewSelect) viewSelect.addEventListener("change", () => window.gridwebGantt.setView(viewSelect.value));
  if (options.playButton) options.playButton.addEventListener("click", () => (gantt.playing ? gantt.pause() : gantt.play()));
  if (options.scrubber) {
    options.scrubber.addEventListener("input", () => {
      gantt.pause();
      const [begin, end] = gantt.span();
      gantt.setTime(begin + Number(options.scrubber.value) / Number(options.scrubber.max) * (end - begin));
    });
  }
  gantt.start().then(() => {
    if (window.GridwebFigureExport) window.GridwebFigureExport.attach(container, () => gantt.rootView, "gantt");
  });
})();
