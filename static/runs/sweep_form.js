/* The "new sweep" form (templates/runs/sweep_form.html): add and remove parameter rows, write a
 * row's values from its range (start, stop, step), say what a chosen parameter is now, and count
 * the points (the cartesian product of the value lists) times the replications before submitting.
 * The form posts as a plain HTML form; the server checks everything again (gridweb/runs/sweep_form.py).
 */
"use strict";

(function () {
  const form = document.getElementById("sweep-form");
  if (!form) return;
  const config = JSON.parse(document.getElementById("sweep-form-config").textContent);
  const rowsBody = document.getElementById("param-rows");
  const template = document.getElementById("param-row-template");
  const count = document.getElementById("sweep-points-count");
  const replicationsInput = form.querySelector("input[name=replications]");
  let nextRow = config.nextRow;

  // --- values, as the server reads them (sweep_form.parse_values / range_values) ---------------

  function valueCount(text) {
    if (!text.trim()) return 0;
    const items = text.split(",");
    return items.some((item) => !item.trim()) ? NaN : items.length;
  }

  function rangeValues(startText, stopText, stepText) {
    const numbers = [startText, stopText, stepText].map((t) => (t.trim() === "" ? NaN : Number(t)));
    if (numbers.some((n) => !Number.isFinite(n))) return null;
    const [start, stop, step] = numbers;
    if (step === 0 || (stop - start) * step < 0) return null;
    const n = Math.floor((stop - start) / step + 1e-9) + 1;
    if (n > config.maxPoints) return null;
    const integers = numbers.every(Number.isInteger) && ![startText, stopText, stepText].some((t) => /[.eE]/.test(t));
    return Array.from({ length: n }, (_, i) =>
      integers ? start + i * step : Number((start + i * step).toFixed(10)));
  }

  // --- rows --------------------------------------------------------------------------------------

  function rowOf(element) {
    return element.closest(".param-row");
  }

  function input(row, part) {
    return row.querySelector(`input[name="param-${row.dataset.row}-${part}"]`);
  }

  function describe(row) {
    // What the chosen parameter is now, and for a policy's name the names to choose from.
    const hint = row.querySelector(".param-hint");
    const found = config.suggestions[input(row, "path").value.trim()];
    if (!found) {
      hint.textContent = "";
      return;
    }
    let text = `now ${JSON.stringify(found.value)} (${found.type})`;
    if (found.choices && found.choices.length) text += `; choices: ${found.choices.join(", ")}`;
    hint.textContent = text;
  }

  function fillFromRange(row) {
    const values = rangeValues(input(row, "start").value, input(row, "stop").value, input(row, "step").value);
    if (values) input(row, "values").value = values.join(", ");
  }

  function addRow() {
    const index = String(nextRow++);
    const html = template.innerHTML.replaceAll("__i__", index);
    const holder = document.createElement("tbody");
    holder.innerHTML = html;
    rowsBody.append(...holder.children);
    rowsBody.querySelector(`#param-${index}-path`).focus();
    update();
  }

  function removeRow(row) {
    const index = row.dataset.row;
    rowsBody.querySelector(`[data-row-errors="${index}"]`)?.remove();
    row.remove();
    if (!rowsBody.querySelector(".param-row")) addRow();
    update();
  }

  // --- the count ---------------------------------------------------------------------------------

  function update() {
    const rows = [...rowsBody.querySelectorAll(".param-row")].filter((row) =>
      ["path", "values", "start", "stop", "step"].some((part) => input(row, part).value.trim()));
    const counts = rows.map((row) => valueCount(input(row, "values").value));
    const replications = Number(replicationsInput.value) || config.scenarioReplications || 1;
    count.classList.remove("error");
    if (!rows.length || counts.some((n) => !n)) {
      count.dataset.points = "";
      count.textContent = "Give every parameter its values to see how many points the sweep has.";
      return;
    }
    const points = counts.reduce((a, b) => a * b, 1);
    count.dataset.points = String(points);
    count.dataset.replications = String(replications);
    count.dataset.simulations = String(points * replications);
    const product = counts.length > 1 ? ` (${counts.join(" × ")})` : "";
    count.textContent = `${points} point${points === 1 ? "" : "s"}${product} × ${replications} replication` +
      `${replications === 1 ? "" : "s"} = ${points * replications} simulation${points * replications === 1 ? "" : "s"}` +
      ` in ${points} run${points === 1 ? "" : "s"}`;
    if (points > config.maxPoints) {
      count.classList.add("error");
      count.textContent += ` — too many: a sweep has at most ${config.maxPoints} points`;
    }
  }

  form.addEventListener("input", (event) => {
    const target = event.target;
    const row = rowOf(target);
    if (row && target.classList.contains("param-range")) fillFromRange(row);
    if (row && target.classList.contains("param-path")) describe(row);
    update();
  });
  form.addEventListener("click", (event) => {
    const button = event.target.closest(".btn-remove-param");
    if (button) removeRow(rowOf(button));
  });
  document.getElementById("btn-add-param").addEventListener("click", addRow);

  for (const row of rowsBody.querySelectorAll(".param-row")) describe(row);
  update();
  form.dataset.ready = "1";
})();
