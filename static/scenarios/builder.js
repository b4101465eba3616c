/* GridWeb scenario builder (plain JavaScript, no build step).
 *
 * The page holds one scenario document (the engine's JSON, see docs/scenario.md) in
 * `state.doc` and draws a form for it. Forms are generated from what the engine publishes
 * (config.catalog): policy parameter forms from each policy's JSON schema, distribution forms
 * from each distribution's schema, the run section and the stream kinds from the scenario's
 * own schema. So a policy or distribution the engine registers appears here with no change.
 *
 * Every input carries `data-path` (and `name`) = the dotted path of its field in the
 * document, e.g. `platform.clusters.1.processors`; the server's validation errors use the
 * same paths, so each message is put in the `[data-error-for="<path>"]` element beside its
 * field. Messages whose path has no such element go to the summary list (#error-summary).
 * Conventions and test hooks: docs/builder.md.
 */
"use strict";

(function () {
  const root = document.getElementById("builder");
  if (!root) return;

  const config = JSON.parse(document.getElementById("builder-config").textContent);
  const catalog = config.catalog;
  const defs = catalog.scenario_schema.$defs || {};
  const csrfToken = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  const distributions = new Map(catalog.distributions.map((d) => [d.kind, d]));
  const CHECK_DELAY_MS = 350;

  const state = {
    doc: config.document,
    meta: config.meta,
    scenario: config.scenario,
    forkedFrom: config.forked_from,
    errors: config.errors || {},
    metaErrors: {},
    uploadErrors: {},
    traces: config.traces.slice(),
    dirty: false,
  };
  ensureShape(state.doc);

  // --- small helpers ----------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (value === true) el.setAttribute(key, "");
      else el.setAttribute(key, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) el.setAttribute(key, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child !== null && child !== undefined) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  /** The element id of a field: `f-` + its path with dots as dashes (stable across redraws). */
  function fieldId(path) {
    return "f-" + path.replace(/[^A-Za-z0-9_-]/g, "-");
  }

  function q(selector) {
    return root.querySelector(selector);
  }

  function attr(value) {
    return CSS.escape(value);
  }

  function fmt(value) {
    if (typeof value !== "number") return String(value);
    if (value === 0) return "0";
    const abs = Math.abs(value);
    if (abs >= 1e5 || abs < 1e-3) return value.toExponential(2);
    return Number(value.toPrecision(4)).toLocaleString("en");
  }

  function formatBytes(n) {
    if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(0)} MB`;
    if (n >= 1024) return `${(n / 1024).toFixed(0)} kB`;
    return `${n} bytes`;
  }

  // --- the document -----------------------------------------------------------------------------

  function ensureShape(doc) {
    if (typeof doc.platform !== "object" || doc.platform === null) doc.platform = {};
    if (!Array.isArray(doc.platform.clusters)) doc.platform.clusters = [];
    if (typeof doc.workload !== "object" || doc.workload === null) doc.workload = {};
    if (!Array.isArray(doc.workload.streams)) doc.workload.streams = [];
  }

  function getPath(obj, path) {
    let current = obj;
    for (const part of path ? path.split(".") : []) {
      if (current === null || typeof current !== "object") return undefined;
      current = current[part];
    }
    return current;
  }

  function setPath(obj, path, value) {
    const parts = path.split(".");
    let current = obj;
    for (let i = 0; i < parts.length - 1; i++) {
      const part = parts[i];
      if (current[part] === null || typeof current[part] !== "object") {
        current[part] = /^\d+$/.test(parts[i + 1]) ? [] : {};
      }
      current = current[part];
    }
    const last = parts[parts.length - 1];
    if (value === undefined && !Array.isArray(current)) delete current[last];
    else current[last] = value;
  }

  function clusterNames() {
    return state.doc.platform.clusters.map((c) => (c && typeof c.name === "string" ? c.name : "")).filter(Boolean);
  }

  function fileSiteNames() {
    const sites = Array.isArray(state.doc.platform.file_sites) ? state.doc.platform.file_sites : [];
    return sites.map((s) => (s && typeof s.name === "string" ? s.name : "")).filter(Boolean);
  }

  function uniqueName(prefix, taken) {
    for (let i = 1; ; i++) if (!taken.includes(`${prefix}${i}`)) return `${prefix}${i}`;
  }

  // --- reading inputs ---------------------------------------------------------------------------

  /** The document value of an input, by its data-type. Text that does not parse is sent as
   *  text, so the server names the field and says why. Empty optional inputs are omitted. */
  function readValue(el) {
    const type = el.dataset.type || "text";
    if (type === "bool") return el.checked;
    const raw = el.value;
    const text = raw.trim();
    switch (type) {
      case "int":
      case "number":
      case "bandwidth": {
        if (text === "") return undefined;
        const n = Number(text);
        return Number.isFinite(n) ? n : text;
      }
      case "numbers": {
        if (text === "") return undefined;
        const items = text.split(/[\s,;]+/).filter(Boolean);
        const numbers = items.map(Number);
        return numbers.every(Number.isFinite) ? numbers : items;
      }
      case "json": {
        if (text === "") return undefined;
        try {
          return JSON.parse(text);
        } catch {
          return text;
        }
      }
      case "map": {
        if (text === "") return undefined;
        const out = {};
        for (const pair of text.split(/[,;\n]+/)) {
          const [key, ...rest] = pair.split("=");
          if (key.trim()) out[key.trim()] = rest.join("=").trim();
        }
        return out;
      }
      case "tags":
        return text ? text.split(",").map((t) => t.trim()).filter(Boolean) : [];
      case "group":
        return text === "" ? null : Number(text);
      case "optional-text":
      case "enum":
        return text === "" ? undefined : raw;
      case "tribool": // an optional yes/no: empty leaves the field out (its default applies)
        return text === "" ? undefined : text === "true";
      default:
        return raw;
    }
  }

  // --- widgets ----------------------------------------------------------------------------------

  function errorSlot(path) {
    return h("div", { class: "field-error", "data-error-for": path, role: "alert", hidden: true });
  }

  function bind(el, path, type) {
    el.dataset.path = path;
    el.dataset.type = type;
    el.name = path;
    el.id = fieldId(path);
    return el;
  }

  function input(path, type, value, attrs) {
    let el;
    if (type === "bool") {
      el = h("input", { type: "checkbox", ...attrs });
      el.checked = Boolean(value);
    } else if (type === "int" || type === "number" || type === "bandwidth") {
      el = h("input", { type: "number", step: type === "int" ? "1" : "any", ...attrs });
      el.value = value === undefined || value === null ? "" : String(value);
    } else if (type === "json" || type === "textarea") {
      el = h("textarea", { rows: type === "json" ? 3 : 2, ...attrs });
      el.value = type === "json" ? (value === undefined ? "" : JSON.stringify(value)) : value ?? "";
      if (type === "textarea") type = "text";
    } else {
      el = h("input", { type: "text", ...attrs });
      if (type === "numbers") el.value = Array.isArray(value) ? value.join(", ") : value ?? "";
      else if (type === "map") {
        el.value = value && typeof value === "object" ? Object.entries(value).map(([k, v]) => `${k}=${v}`).join(", ") : "";
      } else if (type === "tags") el.value = Array.isArray(value) ? value.join(", ") : "";
      else el.value = value ?? "";
    }
    return bind(el, path, type);
  }

  /** A select over `options` ([value, label, title?]); a value not among them is kept and shown as unknown. */
  function select(path, type, options, value, attrs) {
    const el = h("select", attrs || {});
    const current = value === undefined || value === null ? "" : String(value);
    let found = false;
    for (const [optionValue, label, title] of options) {
      el.append(h("option", { value: optionValue, title: title || null }, label));
      if (String(optionValue) === current) found = true;
    }
    if (!found && current !== "") el.append(h("option", { value: current }, `${current} (unknown)`));
    el.value = current;
    return bind(el, path, type);
  }

  function field(label, control, path, options) {
    const { help, cls } = options || {};
    const labelEl = h("label", { for: control.id }, label);
    const parts = control.type === "checkbox" ? [control, labelEl] : [labelEl, control];
    return h("div", { class: `field ${cls || ""}`.trim(), "data-field": path },
      ...parts, help ? h("small", { class: "help" }, help) : null, errorSlot(path));
  }

  function fieldset(title, path, children, cls) {
    return h("fieldset", { class: `group ${cls || ""}`.trim(), "data-group": path },
      h("legend", {}, title), errorSlot(path), ...children);
  }

  function actionButton(action, label, attrs) {
    return h("button", { type: "button", class: "small", "data-action": action, ...attrs }, label);
  }

  // --- forms generated from JSON schemas --------------------------------------------------------

  function resolve(schema, localDefs) {
    let s = schema;
    for (let guard = 0; s && s.$ref && guard < 20; guard++) {
      const name = s.$ref.split("/").pop();
      s = (localDefs && localDefs[name]) || defs[name];
    }
    return s || {};
  }

  function refName(schema) {
    return schema && schema.$ref ? schema.$ref.split("/").pop() : null;
  }

  /** `X | null` -> X (with the outer title, default and description). */
  function unwrapOptional(schema) {
    if (schema && Array.isArray(schema.anyOf)) {
      const rest = schema.anyOf.filter((s) => s.type !== "null");
      if (rest.length === 1 && rest.length < schema.anyOf.length) {
        return { ...rest[0], title: schema.title, default: schema.default, description: schema.description };
      }
    }
    return schema || {};
  }

  function titleOf(name, schema) {
    return (schema && schema.title) || name.replace(/_/g, " ");
  }

  function placeholderOf(schema, required) {
    if (schema.default !== undefined && schema.default !== null) return `default ${schema.default}`;
    return required ? "required" : "optional";
  }

  function schemaFields(schema, localDefs, basePath, value, skip) {
    const s = resolve(schema, localDefs);
    const required = s.required || [];
    const out = [];
    for (const [name, raw] of Object.entries(s.properties || {})) {
      if (skip && skip.includes(name)) continue;
      const path = basePath ? `${basePath}.${name}` : name;
      const current = value && typeof value === "object" ? value[name] : undefined;
      const el = schemaField(name, raw, localDefs, path, current, required.includes(name));
      if (el) out.push(el);
    }
    return out;
  }

  function schemaField(name, raw, localDefs, path, value, required) {
    const special = specialWidget(name, raw, path, value, localDefs);
    if (special !== undefined) return special;
    const outer = unwrapOptional(raw);
    const p = resolve(outer, localDefs);
    if (p.const !== undefined) return null; // fixed tags such as `kind` or `process`
    const title = titleOf(name, outer.title ? outer : p);
    const leafHelp = outer.description && !outer.$ref ? outer.description : null;
    const placeholder = placeholderOf(outer, required);
    if (p.discriminator && p.oneOf) return unionWidget(title, p, localDefs, path, value, false, required);
    if (Array.isArray(p.enum)) {
      const blank = required ? "choose…" : `default (${outer.default ?? "not set"})`;
      const options = [["", blank], ...p.enum.map((v) => [v, String(v)])];
      return field(title, select(path, "enum", options, value), path, { help: leafHelp });
    }
    switch (p.type) {
      case "boolean":
        if (outer !== raw) { // `bool | null`: a default that is neither yes nor no (said in its help)
          const options = [["", "default"], ["true", "yes"], ["false", "no"]];
          return field(title, select(path, "tribool", options, value), path, { help: leafHelp });
        }
        return field(title, input(path, "bool", value ?? outer.default ?? false), path, { help: leafHelp, cls: "check" });
      case "integer":
        return field(title, input(path, "int", value, { placeholder }), path, { help: leafHelp });
      case "number":
        return field(title, input(path, "number", value, { placeholder }), path, { help: leafHelp });
      case "string":
        return field(title, input(path, required ? "text" : "optional-text", value, { placeholder }), path, { help: leafHelp });
      case "array": {
        const items = resolve(p.items || {}, localDefs);
        if (items.type === "number" || items.type === "integer") {
          const el = input(path, "numbers", value, { placeholder: "numbers, comma-separated" });
          el.dataset.errorPrefix = "1";
          return field(title, el, path, { help: leafHelp });
        }
        break;
      }
      case "object":
        if (p.properties) return fieldset(title, path, schemaFields(p, localDefs, path, value));
        if (p.additionalProperties && ["string", "number"].includes(p.additionalProperties.type)) {
          const el = input(path, "map", value, { placeholder: "key=value, key=value" });
          el.dataset.errorPrefix = "1";
          return field(title, el, path, { help: leafHelp });
        }
        break;
      default:
        break;
    }
    const el = input(path, "json", value, { placeholder: "JSON" });
    el.dataset.errorPrefix = "1";
    return field(`${title} (JSON)`, el, path, { help: leafHelp });
  }

  /** Fields whose widget is not a plain input: policies, arrivals, targets, traces, names. */
  function specialWidget(name, raw, path, value, localDefs) {
    const ref = refName(unwrapOptional(raw));
    // A field naming a policy: the catalog marks it with its registry ("x-registry"), in the
    // scenario's schema and in policies' parameters alike (rars-heft's admission, KOALA's preemption).
    if (ref === "PolicyRef" || raw["x-registry"] !== undefined) {
      const onCluster = /^platform\.clusters\.\d+\.([^.]+)$/.exec(path);
      const known = onCluster ? (catalog.cluster_policies || []).find((p) => p.field === onCluster[1])
        : catalog.grid_policies.find((g) => `grid.${g.field}` === path);
      const inner = resolve(unwrapOptional(raw), localDefs);
      const nameSchema = (inner.properties && inner.properties.name) || {};
      const fallback = raw.default && typeof raw.default === "object" ? raw.default.name : nameSchema.default;
      const title = known ? known.title : titleOf(name, raw).replace(/^./, (c) => c.toUpperCase());
      return policyWidget(title, path, known ? known.registry : raw["x-registry"],
        value, known ? known.default : fallback, nameSchema.enum);
    }
    if (ref === "Arrival") return arrivalWidget(path, value);
    if (/^workload\.streams\.\d+\.target$/.test(path)) {
      return field("Target", targetSelect(path, value), path,
        { help: "a cluster, or grid: the grid's site-allocation policy picks each job's cluster" });
    }
    // a file of the server: the site refuses it (its intervals go in down), so the form does not offer it
    if (/^platform\.clusters\.\d+\.failures\.down_file$/.test(path)) return h("span", { hidden: true });
    const trace = /^workload\.streams\.(\d+)\.path$/.exec(path);
    if (trace) return tracePicker(Number(trace[1]), path, value);
    if (/^platform\.file_sites\.\d+\.cluster$/.test(path)) {
      const el = select(path, "optional-text", [["", "(no cluster)"], ...clusterNames().map((n) => [n, n])], value);
      el.dataset.options = "clusters";
      return field("At cluster", el, path);
    }
    if (/^reservations\.\d+\.cluster$/.test(path)) {
      const el = select(path, "optional-text", reservationClusterOptions(), value);
      el.dataset.options = "reservation-clusters";
      return field("Cluster", el, path, { help: "the cluster whose processors are reserved" });
    }
    if (/^reservations\.\d+\.[^.]+$/.test(path) || /^platform\.clusters\.\d+\.failures$/.test(path)) {
      const outer = unwrapOptional(raw);
      const inner = resolve(outer);
      if (outer !== raw && inner.type === "object" && inner.properties) return optionalGroup(name, outer, inner, path, value);
    }
    const rename = /^platform\.(clusters|file_sites)\.\d+\.name$/.exec(path);
    if (rename) {
      const el = input(path, "text", value, { placeholder: "required" });
      el.dataset.rename = rename[1];
      el.dataset.committed = value ?? "";
      return field("Name", el, path);
    }
    return undefined;
  }

  /** A discriminated union (distribution, estimate, stream kind): a kind select, then that kind's fields. */
  function unionWidget(title, union, localDefs, path, value, bare, required) {
    const prop = union.discriminator.propertyName;
    const mapping = union.discriminator.mapping;
    const tags = Object.keys(mapping);
    const current = value && typeof value === "object" ? value[prop] : undefined;
    const isDistribution = tags.every((t) => distributions.has(t));
    const options = [
      ...(current === undefined ? [["", required === false ? "default" : "choose…"]] : []),
      ...tags.map((t) => [t, t.replace(/_/g, " "), isDistribution ? distributions.get(t).summary : null]),
    ];
    const kindSelect = select(`${path}.${prop}`, "text", options, current);
    kindSelect.dataset.action = "union-kind";
    kindSelect.dataset.union = path;
    kindSelect._union = { prop, mapping, localDefs, isDistribution };
    const chosen = current !== undefined && mapping[current] ? resolve({ $ref: mapping[current] }, localDefs) : null;
    const summary = chosen
      ? (isDistribution ? distributions.get(current).summary : (chosen.description || "").split("\n")[0])
      : "";
    const body = chosen ? schemaFields(chosen, localDefs, path, value, [prop]) : [];
    const parts = [
      field(isDistribution ? "Distribution" : "Kind", kindSelect, `${path}.${prop}`, { cls: "kind" }),
      summary ? h("p", { class: "summary" }, summary) : null,
      h("div", { class: "union-body" }, ...body),
    ];
    if (bare) return h("div", { class: "union", "data-group": path }, errorSlot(path), ...parts);
    return fieldset(title, path, parts, isDistribution ? "union distribution" : "union");
  }

  /** A policy picker: the policies of a registry (those of `allowed` only, when given: a field may
   *  offer part of one) and the chosen one's parameters, drawn from its parameter schema. */
  function policyWidget(title, path, registryKey, value, defaultName, allowed) {
    const registry = registryKey ? catalog.registries[registryKey] : null;
    const ref = value && typeof value === "object" ? value : {};
    if (!registry) {
      // A policy field the catalog cannot match to a registry: its name and JSON parameters.
      return fieldset(title, path, [
        field("Policy", input(`${path}.name`, "text", ref.name, { placeholder: defaultName || "required" }), `${path}.name`),
        field("Parameters (JSON)", input(`${path}.params`, "json", ref.params), `${path}.params`),
      ], "policy");
    }
    const name = ref.name || defaultName;
    const offered = allowed ? registry.policies.filter((p) => allowed.includes(p.name)) : registry.policies;
    const options = offered.map((p) => [p.name, p.name, p.summary]);
    // An optional policy (no default: the grid's placement, deadline policy) can be taken out again.
    if (!defaultName) options.unshift(["", "not set", ""]);
    const nameSelect = select(`${path}.name`, "text", options, name);
    nameSelect.dataset.action = "policy";
    const policy = registry.policies.find((p) => p.name === name);
    const params = policy
      ? schemaFields(policy.params_schema, policy.params_schema.$defs || {}, `${path}.params`, ref.params || {})
      : [];
    return fieldset(title, path, [
      field(registry.kind.charAt(0).toUpperCase() + registry.kind.slice(1), nameSelect, `${path}.name`),
      policy ? h("p", { class: "summary" }, policy.summary) : null,
      errorSlot(`${path}.params`),
      params.length ? h("div", { class: "params" }, ...params) : h("p", { class: "muted" }, "No parameters."),
    ], "policy");
  }

  /** An optional object (a reservation's relaxed frame or job, a cluster's failures): an "Add" button while it is not
   *  given, else its fields and a "Remove" button. */
  function optionalGroup(name, outer, inner, path, value) {
    const title = OPTIONAL_TITLES[name] || titleOf(name, outer);
    const id = path.replace(/[^A-Za-z0-9_-]/g, "-"); // #btn-add-reservations-0-relaxed, #btn-remove-…
    const help = outer.description ? h("small", { class: "help" }, outer.description) : null;
    if (!value || typeof value !== "object") {
      return h("div", { class: "field optional-group", "data-field": path },
        h("button", { type: "button", class: "small", "data-action": "add-optional", "data-target": path, id: `btn-add-${id}` },
          `Add ${title.toLowerCase()}`), help, errorSlot(path));
    }
    return fieldset(title, path, [
      ...schemaFields(inner, defs, path, value),
      h("p", {}, h("button", { type: "button", class: "small", "data-action": "remove-optional", "data-target": path,
        id: `btn-remove-${id}` }, `Remove ${title.toLowerCase()}`)),
    ], "optional");
  }

  const OPTIONAL_TITLES = { relaxed: "Relaxed frame", job: "Job", failures: "Failures" };

  /** What an optional object of a reservation starts as: a frame twice the window's length
   *  around it, a job filling the window; a cluster's failures: each processor failing about
   *  weekly and repaired in an hour (docs/failures.md). */
  function optionalDefault(path) {
    if (/^platform\.clusters\.\d+\.failures$/.test(path)) {
      return { mtbf: { kind: "exponential", mean: 604800 }, mttr: { kind: "exponential", mean: 3600 } };
    }
    const match = /^reservations\.(\d+)\.(relaxed|job)$/.exec(path);
    if (!match) return {};
    const r = state.doc.reservations[Number(match[1])] || {};
    const start = typeof r.start === "number" ? r.start : 0;
    const end = typeof r.end === "number" && r.end > start ? r.end : start + 600;
    if (match[2] === "job") return { runtime: end - start };
    return { earliest_start: start, latest_finish: end + (end - start) };
  }

  function reservationClusterOptions() {
    return [["", "choose a cluster…"], ...clusterNames().map((n) => [n, n])];
  }

  function arrivalModes() {
    const arrival = resolve({ $ref: "#/$defs/Arrival" });
    return Object.entries(arrival.properties || {})
      .filter(([, s]) => resolve(unwrapOptional(s)).const === undefined)
      .map(([key, s]) => [key, titleOf(key, unwrapOptional(s))]);
  }

  function arrivalWidget(path, value) {
    const modes = arrivalModes();
    const given = modes.find(([key]) => value && value[key] !== undefined && value[key] !== null);
    const mode = given ? given[0] : (modes.find(([k]) => k === "target_load") || modes[0])[0];
    const modeSelect = h("select", { id: `${fieldId(path)}-mode`, "data-action": "arrival-mode", "data-arrival": path },
      ...modes.map(([key, label]) => h("option", { value: key }, label)));
    modeSelect.value = mode;
    const valueInput = input(`${path}.${mode}`, "number", value ? value[mode] : undefined, { placeholder: "required" });
    const help = {
      rate: "jobs per second",
      mean_interarrival: "seconds between arrivals, on average",
      target_load: "offered load of the target, in (0, 1.5]; the arrival rate follows",
    }[mode];
    return fieldset("Arrivals (Poisson)", path, [
      h("div", { class: "field" }, h("label", { for: modeSelect.id }, "Given as"), modeSelect),
      field(modes.find(([k]) => k === mode)[1], valueInput, `${path}.${mode}`, { help }),
    ], "arrival");
  }

  function targetOptions() {
    return [["grid", "grid (site allocation)"], ...clusterNames().map((n) => [n, n])];
  }

  function targetSelect(path, value) {
    const el = select(path, "text", targetOptions(), value);
    el.dataset.options = "targets";
    return el;
  }

  function traceOptions() {
    return [["", "choose an uploaded or demo trace…"], ...state.traces.map((t) => [
      t.stored_name,
      `${t.name} — ${t.format.toUpperCase()}, ${Number(t.jobs).toLocaleString("en")} jobs, up to ${t.max_processors} processors (${t.owner})`,
    ])];
  }

  function tracePicker(index, path, value) {
    const traceSelect = select(path, "optional-text", traceOptions(), value);
    traceSelect.dataset.options = "traces";
    const file = h("input", { type: "file", id: `trace-file-${index}`, accept: ".swf,.gwf,.json,.gz", "data-action": "upload-trace", "data-index": index });
    const status = h("span", { class: "upload-status", id: `trace-upload-status-${index}`, "aria-live": "polite" });
    return h("div", { class: "trace-picker" },
      field("Trace", traceSelect, path, { help: "the trace's jobs are replayed as this stream" }),
      h("div", { class: "field upload" },
        h("label", { for: file.id }, `…or upload an SWF/GWF trace (up to ${formatBytes(config.max_trace_bytes)})`),
        file, status, errorSlot(`workload.streams.${index}.upload`)));
  }

  // --- sections ---------------------------------------------------------------------------------

  function sectionHead(title, paths, ...extra) {
    return h("div", { class: "section-head" }, h("h2", {}, title), ...extra, ...paths.map(errorSlot));
  }

  function renderScenario() {
    const visibility = select("meta.visibility", "text", config.visibility_choices, state.meta.visibility);
    const group = select("meta.group", "group", [["", "(no group)"], ...config.groups.map((g) => [g.id, g.name])], state.meta.group);
    return [
      sectionHead("Scenario", [""]),
      h("div", { class: "grid-2" },
        field("Name", input("name", "text", state.doc.name, { placeholder: "required", maxlength: 200 }), "name"),
        field("Tags", input("meta.tags", "tags", state.meta.tags, { placeholder: "comma-separated" }), "meta.tags"),
        field("Visibility", visibility, "meta.visibility"),
        field("Research group", group, "meta.group"),
      ),
      field("Description", input("description", "textarea", state.doc.description), "description"),
    ];
  }

  function renderPlatform() {
    const clusters = state.doc.platform.clusters;
    const cards = clusters.map((cluster, i) => h("div", { class: "item", id: `cluster-${i}`, "data-cluster": i },
      h("div", { class: "item-head" }, h("h3", {}, `Cluster ${i + 1}`),
        actionButton("remove-cluster", "Remove", { "data-index": i, id: `btn-remove-cluster-${i}` })),
      errorSlot(`platform.clusters.${i}`),
      h("div", { class: "item-fields" }, ...schemaFields(defs.Cluster, defs, `platform.clusters.${i}`, cluster))));
    return [
      sectionHead("Clusters", ["platform", "platform.clusters", "platform.preset"]),
      clusters.length ? null : h("p", { class: "muted" }, "No clusters yet."),
      ...cards,
      h("button", { type: "button", id: "btn-add-cluster", "data-action": "add-cluster" }, "Add cluster"),
    ];
  }

  function renderSites() {
    const sites = Array.isArray(state.doc.platform.file_sites) ? state.doc.platform.file_sites : [];
    const out = [sectionHead("File sites and bandwidth", ["platform.file_sites"])];
    if (catalog.features.file_sites) {
      sites.forEach((site, i) => out.push(h("div", { class: "item compact", id: `file-site-${i}` },
        h("div", { class: "item-fields inline" }, ...schemaFields(defs.FileSite, defs, `platform.file_sites.${i}`, site),
          actionButton("remove-file-site", "Remove", { "data-index": i, id: `btn-remove-file-site-${i}` })),
        errorSlot(`platform.file_sites.${i}`))));
      out.push(h("button", { type: "button", id: "btn-add-file-site", "data-action": "add-file-site" }, "Add file site"));
    }
    if (catalog.features.bandwidth) out.push(h("div", { id: "bandwidth" }, bandwidthTable()));
    return out;
  }

  function bandwidthTable() {
    const names = [...new Set([...fileSiteNames(), ...clusterNames()])].filter((n) => !n.includes("."));
    const parts = [h("h3", {}, "Bandwidth (MB/s, from row to column; empty = not given)"), errorSlot("platform.bandwidth")];
    if (names.length < 2) {
      parts.push(h("p", { class: "muted" }, "Add clusters or file sites to give bandwidths between them."));
      return parts;
    }
    const table = h("table", { class: "bandwidth" },
      h("thead", {}, h("tr", {}, h("th", {}, "from \\ to"), ...names.map((n) => h("th", { scope: "col" }, n)))));
    const body = h("tbody");
    const bandwidth = state.doc.platform.bandwidth || {};
    for (const from of names) {
      const row = h("tr", {}, h("th", { scope: "row" }, from, errorSlot(`platform.bandwidth.${from}`)));
      for (const to of names) {
        if (from === to) {
          row.append(h("td", { class: "diagonal" }, "—"));
          continue;
        }
        const path = `platform.bandwidth.${from}.${to}`;
        const cell = input(path, "bandwidth", (bandwidth[from] || {})[to], { "aria-label": `${from} to ${to}` });
        row.append(h("td", {}, cell, errorSlot(path)));
      }
      body.append(row);
    }
    table.append(body);
    parts.push(table);
    return parts;
  }

  function renderStreams() {
    const streams = state.doc.workload.streams;
    const itemSchema = defs.Workload.properties.streams.items;
    const cards = streams.map((stream, i) => h("div", { class: "item", id: `stream-${i}`, "data-stream": i },
      h("div", { class: "item-head" }, h("h3", {}, `Stream ${i + 1}`),
        actionButton("remove-stream", "Remove", { "data-index": i, id: `btn-remove-stream-${i}` })),
      unionWidget("Stream", itemSchema, defs, `workload.streams.${i}`, stream, true)));
    return [
      sectionHead("Job streams", ["workload", "workload.streams"]),
      streams.length ? null : h("p", { class: "muted" }, "No job streams yet."),
      ...cards,
      h("button", { type: "button", id: "btn-add-stream", "data-action": "add-stream" }, "Add job stream"),
    ];
  }

  function reservationNames() {
    const list = Array.isArray(state.doc.reservations) ? state.doc.reservations : [];
    return list.map((r) => (r && typeof r.name === "string" ? r.name : "")).filter(Boolean);
  }

  function renderReservations() {
    const list = Array.isArray(state.doc.reservations) ? state.doc.reservations : [];
    const cards = list.map((reservation, i) => h("div", { class: "item", id: `reservation-${i}`, "data-reservation": i },
      h("div", { class: "item-head" }, h("h3", {}, `Reservation ${i + 1}`),
        actionButton("remove-reservation", "Remove", { "data-index": i, id: `btn-remove-reservation-${i}` })),
      errorSlot(`reservations.${i}`),
      h("div", { class: "item-fields" }, ...schemaFields(defs.Reservation, defs, `reservations.${i}`, reservation))));
    return [
      sectionHead("Advance reservations", ["reservations"]),
      h("p", { class: "muted" }, "A block of processors on a cluster over a time window, accepted or rejected " +
        "when it is requested; a relaxed one may move inside its frame. Local schedulers keep accepted windows free."),
      list.length ? null : h("p", { class: "muted" }, "No reservations."),
      ...cards,
      h("button", { type: "button", id: "btn-add-reservation", "data-action": "add-reservation" }, "Add reservation"),
    ];
  }

  function renderGrid() {
    const grid = state.doc.grid || {};
    return [
      sectionHead("Grid policies", ["grid"]),
      ...catalog.grid_policies.map((g) => policyWidget(g.title, `grid.${g.field}`, g.registry, grid[g.field], g.default)),
    ];
  }

  function renderRun() {
    return [sectionHead("Run control", ["run"]),
      h("div", { class: "item-fields" }, ...schemaFields(defs.RunControl, defs, "run", state.doc.run || {}))];
  }

  const SECTIONS = {
    scenario: renderScenario,
    platform: renderPlatform,
    sites: renderSites,
    streams: renderStreams,
    reservations: renderReservations,
    grid: renderGrid,
    run: renderRun,
  };

  function renderSection(key) {
    const container = document.getElementById(`section-${key}`);
    if (!container) return;
    const active = document.activeElement;
    const activeId = active && container.contains(active) ? active.id : null;
    container.replaceChildren(...SECTIONS[key]().filter(Boolean));
    if (activeId) {
      const again = document.getElementById(activeId);
      if (again) again.focus({ preventScroll: true });
    }
  }

  function renderAll() {
    document.getElementById("section-sites").hidden = !(catalog.features.file_sites || catalog.features.bandwidth);
    document.getElementById("section-grid").hidden = !catalog.features.grid || !catalog.grid_policies.length;
    document.getElementById("section-run").hidden = !catalog.features.run;
    const reservations = document.getElementById("section-reservations");
    if (reservations) reservations.hidden = !catalog.features.reservations;
    for (const key of Object.keys(SECTIONS)) renderSection(key);
    showErrors();
  }

  /** After clusters or file sites change: the selects that list them, and the bandwidth table. */
  function refreshReferences() {
    const lists = {
      targets: targetOptions, clusters: () => [["", "(no cluster)"], ...clusterNames().map((n) => [n, n])], traces: traceOptions,
      "reservation-clusters": reservationClusterOptions,
    };
    for (const el of root.querySelectorAll("select[data-options]")) {
      const fresh = select(el.dataset.path, el.dataset.type, lists[el.dataset.options](), getPath(state.doc, el.dataset.path));
      const value = fresh.value; // read before its options move over
      el.replaceChildren(...fresh.childNodes);
      el.value = value;
    }
    const bandwidth = document.getElementById("bandwidth");
    if (bandwidth && !bandwidth.contains(document.activeElement)) bandwidth.replaceChildren(...bandwidthTable());
    showErrors();
  }

  // --- editing ----------------------------------------------------------------------------------

  function sectionOf(el) {
    const section = el.closest("[data-section]");
    return section ? section.dataset.section : null;
  }

  function applyInput(el) {
    const path = el.dataset.path;
    const value = readValue(el);
    if (path.startsWith("meta.")) {
      state.meta[path.slice(5)] = value;
      delete state.metaErrors[path];
    } else if (el.dataset.type === "bandwidth") {
      setBandwidth(path, value);
    } else {
      setPath(state.doc, path, value);
      nameShownPolicy(el);
    }
    changed();
  }

  /** A parameter of a policy the picker shows as the default (its name not in the document yet):
   *  the document names that policy too, so its parameters are not sent without a name. */
  function nameShownPolicy(el) {
    const box = el.closest("fieldset.policy");
    const base = box && box.dataset.group;
    if (!base || !el.dataset.path.startsWith(`${base}.params.`) || getPath(state.doc, `${base}.name`) !== undefined) return;
    const nameSelect = box.querySelector(`select[data-path="${base}.name"]`);
    if (nameSelect && nameSelect.value) setPath(state.doc, `${base}.name`, nameSelect.value);
  }

  function setBandwidth(path, value) {
    const [, , from, to] = path.split(".");
    const bandwidth = state.doc.platform.bandwidth || {};
    const row = { ...(bandwidth[from] || {}) };
    if (value === undefined) delete row[to];
    else row[to] = value;
    if (Object.keys(row).length) bandwidth[from] = row;
    else delete bandwidth[from];
    if (Object.keys(bandwidth).length) state.doc.platform.bandwidth = bandwidth;
    else delete state.doc.platform.bandwidth;
  }

  /** A cluster or file site was renamed: references to its old name follow it. */
  function propagateRename(el) {
    const before = el.dataset.committed;
    const after = getPath(state.doc, el.dataset.path);
    const [, collection, index] = /^platform\.(clusters|file_sites)\.(\d+)\.name$/.exec(el.dataset.path);
    const others = (state.doc.platform[collection] || []).filter((item, i) => i !== Number(index) && item)
      .map((item) => item.name);
    // A name another item has: its references stay with the old name until the name is unique
    // again (moving them would merge them with the other item's, and a rename back would then
    // take the other item's references too).
    if (after && others.includes(after)) return;
    el.dataset.committed = after ?? "";
    if (!before || !after || before === after) return;
    const doc = state.doc;
    if (el.dataset.rename === "clusters") {
      for (const stream of doc.workload.streams) {
        if (stream && stream.target === before) stream.target = after;
        if (stream && stream.site_map) {
          for (const [site, cluster] of Object.entries(stream.site_map)) if (cluster === before) stream.site_map[site] = after;
        }
      }
      for (const site of doc.platform.file_sites || []) if (site && site.cluster === before) site.cluster = after;
      for (const r of doc.reservations || []) if (r && r.cluster === before) r.cluster = after;
    }
    const bandwidth = doc.platform.bandwidth;
    if (bandwidth) {
      if (bandwidth[before] && !bandwidth[after]) {
        bandwidth[after] = bandwidth[before];
        delete bandwidth[before];
      }
      for (const row of Object.values(bandwidth)) {
        if (row[before] !== undefined && row[after] === undefined) {
          row[after] = row[before];
          delete row[before];
        }
      }
    }
    refreshReferences();
  }

  function changeUnion(el) {
    const path = el.dataset.union;
    const { prop, mapping, localDefs, isDistribution } = el._union;
    const tag = el.value;
    const old = getPath(state.doc, path) || {};
    const schema = resolve({ $ref: mapping[tag] }, localDefs);
    const allowed = Object.keys(schema.properties || {});
    let next = { [prop]: tag };
    if (isDistribution) next = { ...next, ...(distributions.get(tag).example || {}) };
    else if (/^workload\.streams\.\d+$/.test(path)) next = { ...newStream(tag, old), [prop]: tag };
    for (const [key, value] of Object.entries(old)) {
      if (key !== prop && allowed.includes(key) && !(isDistribution && key in next)) next[key] = value;
    }
    setPath(state.doc, path, next);
  }

  function changePolicy(el) {
    const path = el.dataset.path.replace(/\.name$/, "");
    setPath(state.doc, path, el.value ? { name: el.value, params: {} } : undefined);
  }

  function changeArrivalMode(el) {
    const path = el.dataset.arrival;
    const old = getPath(state.doc, path) || {};
    const modes = arrivalModes().map(([key]) => key);
    const from = modes.find((key) => old[key] !== undefined && old[key] !== null);
    const to = el.value;
    const next = Object.fromEntries(Object.entries(old).filter(([key]) => !modes.includes(key)));
    const value = from ? old[from] : undefined;
    const reciprocal = ["rate", "mean_interarrival"];
    if (from === to) next[to] = value;
    else if (typeof value === "number" && value > 0 && reciprocal.includes(from) && reciprocal.includes(to)) next[to] = 1 / value;
    else if (to === "target_load") next[to] = 0.5; // a rate says nothing about the load: start from 50%
    setPath(state.doc, path, next);
  }

  function newStream(kind, old) {
    const names = state.doc.workload.streams.filter((s) => s && s !== old).map((s) => s.name);
    const clusters = state.doc.platform.clusters.filter((c) => c && Number.isInteger(c.processors) && c.processors > 0);
    const target = old && old.target ? old.target : clusters.length === 1 ? clusters[0].name : "grid";
    const base = { kind, name: old && old.name ? old.name : uniqueName(kind === "trace" ? "trace" : "jobs", names), target };
    if (kind !== "synthetic") return base;
    const receiving = target === "grid" ? clusters : clusters.filter((c) => c.name === target);
    const largest = receiving.length ? Math.max(...receiving.map((c) => c.processors)) : 16;
    return {
      ...base,
      arrival: { target_load: 0.5 },
      size: { kind: "uniform", low: 1, high: Math.max(1, Math.min(16, largest)), integer: true },
      runtime: { kind: "exponential", mean: 600 },
      count: 10000, // a finite stream: the blank scenario has no stop rule, so that traces run whole
    };
  }

  function doAction(action, el) {
    const index = Number(el.dataset.index);
    const doc = state.doc;
    switch (action) {
      case "add-cluster": {
        doc.platform.clusters.push({ name: uniqueName("c", clusterNames()), processors: 32 });
        renderSection("platform");
        refreshReferences();
        break;
      }
      case "remove-cluster":
        doc.platform.clusters.splice(index, 1);
        renderSection("platform");
        refreshReferences();
        break;
      case "add-stream":
        doc.workload.streams.push(newStream("synthetic", null));
        renderSection("streams");
        break;
      case "remove-stream":
        doc.workload.streams.splice(index, 1);
        delete state.uploadErrors[index];
        renderSection("streams");
        break;
      case "add-file-site":
        if (!Array.isArray(doc.platform.file_sites)) doc.platform.file_sites = [];
        doc.platform.file_sites.push({ name: uniqueName("site", fileSiteNames()) });
        renderSection("sites");
        break;
      case "add-reservation": {
        if (!Array.isArray(doc.reservations)) doc.reservations = [];
        const clusters = doc.platform.clusters.filter((c) => c && c.name);
        const cluster = clusters.length ? clusters[0] : null;
        const size = cluster && Number.isInteger(cluster.processors) && cluster.processors > 0 ? Math.max(1, Math.ceil(cluster.processors / 2)) : 1;
        doc.reservations.push({ name: uniqueName("r", reservationNames()), cluster: cluster ? cluster.name : "",
          processors: size, start: 3600, end: 7200 });
        renderSection("reservations");
        break;
      }
      case "remove-reservation":
        doc.reservations.splice(index, 1);
        if (!doc.reservations.length) delete doc.reservations;
        renderSection("reservations");
        break;
      case "add-optional":
        setPath(doc, el.dataset.target, optionalDefault(el.dataset.target));
        renderSection(sectionOf(el));
        break;
      case "remove-optional":
        setPath(doc, el.dataset.target, undefined);
        renderSection(sectionOf(el));
        break;
      case "remove-file-site":
        doc.platform.file_sites.splice(index, 1);
        if (!doc.platform.file_sites.length) delete doc.platform.file_sites;
        renderSection("sites");
        break;
      default:
        return;
    }
    changed();
    showErrors();
  }

  function changed() {
    state.dirty = true;
    setStatus("Unsaved changes", "dirty");
    scheduleChecks();
  }

  const form = document.getElementById("builder-form");
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => {
    const el = event.target;
    if (el.dataset && el.dataset.path && el.type !== "file") applyInput(el);
  });
  form.addEventListener("change", (event) => {
    const el = event.target;
    if (el.dataset.action === "upload-trace") {
      uploadTrace(el);
      return;
    }
    if (el.dataset.path && el.type !== "file") applyInput(el);
    const structural = { "union-kind": changeUnion, policy: changePolicy, "arrival-mode": changeArrivalMode }[el.dataset.action];
    if (structural) {
      structural(el);
      renderSection(sectionOf(el));
      showErrors();
      changed();
    } else if (el.dataset.rename) {
      propagateRename(el);
    }
  });
  form.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button) doAction(button.dataset.action, button);
  });

  // --- talking to the server --------------------------------------------------------------------

  async function post(url, body, isJSON) {
    const headers = { "X-CSRFToken": csrfToken, Accept: "application/json" };
    if (isJSON) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(url, { method: "POST", headers, body: isJSON ? JSON.stringify(body) : body, credentials: "same-origin" });
    } catch (error) {
      return { ok: false, status: 0, data: null, error: String(error) };
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null; // e.g. the login page after the session expired
    }
    return { ok: response.ok, status: response.status, data, redirected: response.redirected };
  }

  function problem(r) {
    if (r.status === 0) return "the server did not answer";
    if (r.redirected || (r.ok && !r.data)) return "you are no longer logged in; log in again in another tab";
    if (r.status === 403) return "not allowed (403)";
    return `HTTP ${r.status}`;
  }

  let checkTimer = null;
  function scheduleChecks() {
    clearTimeout(checkTimer);
    checkTimer = setTimeout(() => {
      validateNow();
      previewNow();
    }, CHECK_DELAY_MS);
  }

  let validateSeq = 0;
  async function validateNow() {
    const seq = ++validateSeq;
    root.dataset.validating = "1";
    const r = await post(config.urls.validate, { spec: state.doc }, true);
    if (seq !== validateSeq) return;
    delete root.dataset.validating;
    if (!r.ok || !r.data) {
      setValidation(`Could not validate: ${problem(r)}`, "error");
      return;
    }
    state.errors = r.data.errors || {};
    showErrors();
    root.dataset.validated = String(seq);
  }

  let previewSeq = 0;
  async function previewNow() {
    const seq = ++previewSeq;
    const status = document.getElementById("preview-status");
    status.textContent = "Sampling jobs…";
    const r = await post(config.urls.preview, { spec: state.doc }, true);
    if (seq !== previewSeq) return;
    if (!r.ok || !r.data) {
      status.textContent = `No preview: ${problem(r)}`;
      return;
    }
    renderPreview(r.data);
    root.dataset.previewed = String(seq);
  }

  async function save() {
    setStatus("Saving…", "busy");
    clearTimeout(checkTimer);
    const body = { spec: state.doc, meta: state.meta, forked_from: state.forkedFrom ? state.forkedFrom.id : null };
    const r = await post(config.urls.save, body, true);
    if (r.ok && r.data && r.data.id) {
      state.scenario = { id: r.data.id, name: r.data.name, urls: r.data.urls };
      config.urls.save = r.data.urls.edit;
      state.dirty = false;
      state.errors = {};
      state.metaErrors = {};
      showErrors();
      updateToolbar();
      if (window.location.pathname !== r.data.urls.edit) window.history.replaceState(null, "", r.data.urls.edit);
      document.title = `${r.data.name} — GridWeb`;
      document.getElementById("builder-title").textContent = r.data.name;
      setStatus(r.data.created ? "Saved (new scenario)" : "Saved", "ok");
      root.dataset.saved = String(r.data.id);
      previewNow();
      return true;
    }
    if (r.status === 400 && r.data && r.data.errors) {
      state.errors = r.data.errors;
      state.metaErrors = Object.fromEntries(Object.entries(r.data.errors).filter(([k]) => k.startsWith("meta.")));
      const count = showErrors();
      setStatus(`Not saved: ${count} problem${count === 1 ? "" : "s"} — see the messages beside the fields`, "error");
      return false;
    }
    setStatus(`Not saved: ${problem(r)}`, "error");
    return false;
  }

  async function uploadTrace(fileInput) {
    const index = Number(fileInput.dataset.index);
    const file = fileInput.files && fileInput.files[0];
    if (!file) return;
    const status = document.getElementById(`trace-upload-status-${index}`);
    status.textContent = `Uploading ${file.name}…`;
    delete state.uploadErrors[index];
    const data = new FormData();
    data.append("file", file);
    const r = await post(config.urls.trace_upload, data, false);
    if (r.ok && r.data && r.data.trace) {
      const trace = r.data.trace;
      if (!state.traces.some((t) => t.stored_name === trace.stored_name)) state.traces.push(trace);
      setPath(state.doc, `workload.streams.${index}.path`, trace.stored_name);
      renderSection("streams");
      const again = document.getElementById(`trace-upload-status-${index}`);
      if (again) again.textContent = `Uploaded ${trace.name}: ${Number(trace.jobs).toLocaleString("en")} jobs`;
      refreshReferences();
      changed();
      return;
    }
    status.textContent = "Upload refused";
    const errors = r.data && r.data.errors ? r.data.errors : { file: [problem(r)] };
    state.uploadErrors[index] = Object.entries(errors).flatMap(([key, messages]) =>
      messages.map((m) => (key === "file" ? m : `${key}: ${m}`)));
    showErrors();
  }

  // --- errors beside their fields ---------------------------------------------------------------

  function slotFor(path) {
    const exact = root.querySelector(`[data-error-for="${attr(path)}"]`);
    if (exact) return exact;
    // An item inside a list, map or JSON input (values.2, site_map.s1): the input holding it.
    const parts = path.split(".");
    while (parts.length > 1) {
      parts.pop();
      const prefix = parts.join(".");
      if (root.querySelector(`[data-path="${attr(prefix)}"][data-error-prefix]`)) {
        return root.querySelector(`[data-error-for="${attr(prefix)}"]`);
      }
    }
    return null;
  }

  function showErrors() {
    const errors = { ...state.errors, ...state.metaErrors };
    for (const [index, messages] of Object.entries(state.uploadErrors)) errors[`workload.streams.${index}.upload`] = messages;
    for (const slot of root.querySelectorAll("[data-error-for]")) {
      slot.hidden = true;
      slot.replaceChildren();
    }
    for (const el of root.querySelectorAll(".has-error")) el.classList.remove("has-error");
    for (const el of root.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const unmatched = [];
    let count = 0;
    for (const [path, messages] of Object.entries(errors)) {
      count += messages.length;
      const slot = slotFor(path);
      if (!slot) {
        unmatched.push([path, messages]);
        continue;
      }
      const at = slot.dataset.errorFor;
      for (const message of messages) {
        const text = path === at ? message : `${path.slice(at.length + 1)}: ${message}`;
        slot.append(h("div", { class: "message", "data-error-path": path }, text));
      }
      slot.hidden = false;
      const holder = slot.closest(".field, fieldset, .item");
      if (holder) holder.classList.add("has-error");
      const control = root.querySelector(`[data-path="${attr(at)}"]`);
      if (control) control.setAttribute("aria-invalid", "true");
    }
    const summary = document.getElementById("error-summary");
    const list = document.getElementById("error-summary-list");
    list.replaceChildren(...unmatched.flatMap(([path, messages]) => messages.map((m) =>
      h("li", { "data-error-path": path }, path ? h("code", {}, path) : null, path ? ": " : "", m))));
    summary.hidden = unmatched.length === 0;
    if (count === 0) setValidation("No problems found", "ok");
    else setValidation(`${count} problem${count === 1 ? "" : "s"} to fix`, "error");
    root.dataset.errorCount = String(count);
    return count;
  }

  // --- status and toolbar -----------------------------------------------------------------------

  function setStatus(text, kind) {
    const el = document.getElementById("save-status");
    el.textContent = text;
    el.dataset.kind = kind || "";
  }

  function setValidation(text, kind) {
    const el = document.getElementById("validation-status");
    el.textContent = text;
    el.dataset.kind = kind || "";
  }

  function updateToolbar() {
    const saved = state.scenario;
    for (const el of root.querySelectorAll(".needs-saved")) el.hidden = !saved;
    if (!saved) return;
    const urls = saved.urls;
    document.getElementById("link-view").href = urls.view;
    document.getElementById("link-export").href = urls.export;
    document.getElementById("form-run").action = urls.run;
    document.getElementById("form-duplicate").action = urls.duplicate;
    document.getElementById("form-delete").action = urls.delete;
    const sweepLink = document.getElementById("link-sweep");
    sweepLink.href = sweepLink.dataset.hrefBase + saved.id;
  }

  document.getElementById("btn-save").addEventListener("click", save);
  document.getElementById("btn-validate").addEventListener("click", () => {
    clearTimeout(checkTimer);
    validateNow();
    previewNow();
  });
  document.getElementById("btn-run").addEventListener("click", async () => {
    if ((state.dirty || !state.scenario) && !(await save())) return;
    document.getElementById("form-run").submit();
  });
  document.getElementById("link-sweep").addEventListener("click", async (event) => {
    // The sweep starts from the saved scenario: save unsaved changes first.
    if (!state.dirty) return;
    event.preventDefault();
    if (await save()) window.location.href = document.getElementById("link-sweep").href;
  });
  document.getElementById("form-delete").addEventListener("submit", (event) => {
    if (!window.confirm("Delete this scenario? Its runs are kept.")) event.preventDefault();
  });
  document.getElementById("start-preset").addEventListener("change", (event) => {
    const value = event.target.value;
    if (!value) return;
    if (state.dirty && !window.confirm("Discard the unsaved changes and start again?")) {
      event.target.value = "";
      return;
    }
    window.location.assign(value === "blank" ? config.urls.new : `${config.urls.new}?preset=${encodeURIComponent(value)}`);
  });

  // --- preview ----------------------------------------------------------------------------------

  const HIST = { width: 300, height: 110, pad: 18 };

  function histogramSvg(hist, kind, label) {
    const { width, height, pad } = HIST;
    const n = hist.counts.length;
    const top = Math.max(1, ...hist.counts);
    const barWidth = n ? (width - 2) / n : 0;
    const chart = svg("svg", {
      viewBox: `0 0 ${width} ${height + pad}`, class: "histogram", role: "img", "data-histogram": kind,
      "data-total": hist.total, "data-scale": hist.scale, "aria-label": `${label}: histogram of ${hist.total} jobs`,
    });
    hist.counts.forEach((count, i) => {
      const barHeight = (count / top) * (height - 4);
      const lo = hist.edges[i];
      const hi = hist.edges[i + 1];
      const range = hist.discrete && hist.scale === "linear" ? fmt((lo + hi) / 2) : `${fmt(lo)}–${fmt(hi)}`;
      chart.append(svg("rect", {
        class: "bar", x: 1 + i * barWidth, y: height - barHeight, width: Math.max(1, barWidth - 1), height: barHeight,
        "data-count": count, "data-low": lo, "data-high": hi,
      }, svg("title", {}, `${range}: ${count} jobs`)));
    });
    chart.append(svg("line", { x1: 0, x2: width, y1: height, y2: height, class: "axis" }));
    const low = hist.edges.length ? hist.edges[0] : 0;
    const high = hist.edges.length ? hist.edges[hist.edges.length - 1] : 0;
    const first = hist.discrete && hist.scale === "linear" ? low + 0.5 : low;
    const last = hist.discrete && hist.scale === "linear" ? high - 0.5 : high;
    chart.append(svg("text", { x: 1, y: height + 13, class: "tick" }, fmt(first)));
    chart.append(svg("text", { x: width - 1, y: height + 13, class: "tick end" }, fmt(last) + (hist.scale === "log" ? " (log scale)" : "")));
    return chart;
  }

  function loadChart(reported) {
    // A load too large to compute comes back as null: draw it past saturation, labelled "huge".
    const clusters = reported.map((c) => ({ ...c, huge: !Number.isFinite(c.offered_load),
      offered_load: Number.isFinite(c.offered_load) ? c.offered_load : 2 }));
    const row = 22;
    const labelWidth = 90;
    const width = 300;
    const reservedOf = (c) => (Number.isFinite(c.reserved_load) ? c.reserved_load : 0);
    const maxLoad = Math.max(1.2, ...clusters.map((c) => c.offered_load + reservedOf(c)));
    const anyReserved = clusters.some((c) => reservedOf(c) > 0);
    const scale = (width - labelWidth - (anyReserved ? 100 : 40)) / maxLoad; // room for the value's text
    const chart = svg("svg", { viewBox: `0 0 ${width} ${clusters.length * row + 16}`, class: "load-chart", role: "img",
      "aria-label": "offered load per cluster" });
    clusters.forEach((c, i) => {
      const y = i * row + 2;
      const over = c.offered_load > 1;
      chart.append(svg("text", { x: labelWidth - 6, y: y + 14, class: "label end" }, c.name));
      chart.append(svg("rect", { class: `bar${over ? " over" : ""}`, x: labelWidth, y, height: row - 6,
        width: Math.max(0.5, c.offered_load * scale), "data-cluster": c.name, "data-load": c.huge ? "inf" : c.offered_load },
        svg("title", {}, `${c.name}: offered load ${c.huge ? "too large to compute" : c.offered_load.toFixed(3)} (${c.processors} processors × speed ${c.speed})`)));
      const reserved = reservedOf(c);
      if (reserved > 0) {
        // Advance reservations hold this share of the cluster's processor time up to the horizon.
        chart.append(svg("rect", { class: "bar reserved", x: labelWidth + c.offered_load * scale, y, height: row - 6,
          width: Math.max(0.5, reserved * scale), "data-reserved-cluster": c.name, "data-reserved": reserved },
          svg("title", {}, `${c.name}: advance reservations hold ${(reserved * 100).toFixed(1)}% of its processor time up to the horizon`)));
      }
      chart.append(svg("text", { x: labelWidth + (c.offered_load + reserved) * scale + 4, y: y + 14, class: "value" },
        (c.huge ? "huge" : c.offered_load.toFixed(2)) + (reserved > 0 ? ` + ${reserved.toFixed(2)} reserved` : "")));
    });
    const x = labelWidth + scale;
    chart.append(svg("line", { x1: x, x2: x, y1: 0, y2: clusters.length * row, class: "saturation" }));
    chart.append(svg("text", { x, y: clusters.length * row + 12, class: "tick middle" }, "1.0 = saturated"));
    return chart;
  }

  function renderPreview(data) {
    const status = document.getElementById("preview-status");
    const load = document.getElementById("preview-load");
    const streams = document.getElementById("preview-streams");
    const previewed = new Set(data.streams.map((s) => s.index));
    const skipped = state.doc.workload.streams.map((s, i) => i).filter((i) => !previewed.has(i));
    if (!data.clusters.length) {
      status.textContent = "Add a valid cluster and a job stream to see a preview.";
    } else if (!data.streams.length) {
      status.textContent = "Add a job stream (without errors) to see a preview.";
    } else {
      status.textContent = `${data.streams.length} stream${data.streams.length === 1 ? "" : "s"} sampled` +
        (skipped.length ? `; not previewed (fix their errors): ${skipped.map((i) => `stream ${i + 1}`).join(", ")}` : "");
    }
    const balanced = data.streams.some((s) => s.routing === "balanced");
    // Co-allocated components are placed by the grid's placement policy during the run: the
    // note names the one(s) the streams use, with their summaries from the catalog.
    const placements = [...new Set(data.streams.filter((s) => s.routing === "placement").map((s) => s.placement))];
    const placementField = catalog.grid_policies.find((g) => g.field === "placement");
    const placementRegistry = placementField && catalog.registries[placementField.registry];
    const describe = (name) => {
      const policy = placementRegistry && placementRegistry.policies.find((p) => p.name === name);
      return policy && policy.summary ? `${name} (${policy.summary})` : name;
    };
    load.replaceChildren(...(data.clusters.length && data.streams.length
      ? [h("h3", {}, "Offered load per cluster"), loadChart(data.clusters),
        h("p", { class: "muted", hidden: !balanced },
          "Grid jobs of a policy that decides during the run are spread in proportion to capacity."),
        h("p", { class: "muted", id: "preview-coallocation-note", hidden: !placements.length,
          "data-placement": placements.join(",") },
          "Co-allocated jobs count every component (components × component size × runtime). " +
          `${placements.map(describe).join("; ")} places them during the run, from the clusters' state ` +
          "then; the preview spreads their work in proportion to capacity, as a placement that evens out " +
          "the load would.")]
      : []));
    // What the engine will do that the numbers alone do not say: a stop that cuts the workload short
    // (issue: uploaded traces were silently cut), a trace retimed or cut by the horizon, ...
    const notes = (data.notes || []).filter((n) => !data.stop || n !== data.stop.message);
    const remarks = [
      data.stop ? h("p", { class: "warning", id: "preview-stop-warning" }, data.stop.message) : null,
      notes.length ? h("ul", { class: "muted", id: "preview-notes" }, ...notes.map((n) => h("li", {}, n))) : null,
    ].filter(Boolean);
    streams.replaceChildren(...remarks, ...data.streams.map((s) => h("div", { class: "preview-stream", id: `preview-stream-${s.index}`, "data-jobs": s.jobs },
      h("h3", {}, `${s.name} → ${s.target}`),
      // trace jobs larger than their cluster: valid, but the run rejects them (said before it runs)
      s.too_large ? h("p", { class: "warning", id: `preview-too-large-${s.index}`, "data-jobs": s.too_large.jobs },
        s.too_large.message) : null,
      h("p", { class: "muted" }, `${s.jobs.toLocaleString("en")} jobs sampled` +
        (s.offered_load !== null ? `; offered load ${s.offered_load.toFixed(3)}` : "") +
        (s.expected_load !== null ? ` (expected ${s.expected_load.toFixed(3)})` : "")),
      h("div", { class: "histograms" },
        s.components ? h("figure", {}, h("figcaption", {}, `Components per job, mean ${fmt(s.components.mean ?? 0)}`),
          histogramSvg(s.components, "components", "components per job")) : null,
        h("figure", {}, h("figcaption", {}, s.components ? `Component size (processors), mean ${fmt(s.sizes.mean ?? 0)}`
          : `Job size (processors), mean ${fmt(s.sizes.mean ?? 0)}`), histogramSvg(s.sizes, "sizes", "job sizes")),
        h("figure", {}, h("figcaption", {}, `Runtime (s), mean ${fmt(s.runtimes.mean ?? 0)}`), histogramSvg(s.runtimes, "runtimes", "runtimes"))))));
  }

  // --- start ------------------------------------------------------------------------------------

  renderAll();
  updateToolbar();
  setStatus(state.scenario ? "Saved" : "Not saved yet", state.scenario ? "ok" : "dirty");
  if (Object.keys(state.errors).length) showErrors();
  validateNow();
  previewNow();
  root.dataset.ready = "1";
})();
