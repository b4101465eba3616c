/* Compare page: the run picker sends /compare/?runs=1,2,... and the metrics table marks the
 * lowest mean of each row (lower is better for waits, responses and slowdowns). */
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
})();
