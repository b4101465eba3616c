/* The gallery's compare selection: ticking cards shows a bar that opens
 * /compare/?runs=1,2,... (without JavaScript the form sends runs=1&runs=2, which works too). */
(function () {
  "use strict";

  const form = document.getElementById("compare-form");
  const bar = document.getElementById("compare-bar");
  const count = document.getElementById("compare-count");
  if (!form || !bar) return;
  const boxes = () => Array.from(document.querySelectorAll('input[name="runs"][form="compare-form"]'));

  function selected() {
    // a run may be on the page twice (curated and listed): count it once
    return [...new Set(boxes().filter((box) => box.checked).map((box) => box.value))];
  }
  function refresh() {
    const ids = selected();
    bar.hidden = ids.length === 0;
    count.textContent = ids.length === 1 ? "1 run selected — pick another to compare"
      : `${ids.length} runs selected`;
    document.getElementById("compare-button").disabled = ids.length < 2;
  }
  document.addEventListener("change", (event) => {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || box.name !== "runs") return;
    for (const other of boxes()) if (other.value === box.value) other.checked = box.checked;
    refresh();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const ids = selected();
    if (ids.length >= 2) location.assign(`${form.action}?runs=${ids.join(",")}`);
  });
  refresh();
})();
