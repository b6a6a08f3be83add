// Sortable tables and the results filter. No data lives here: it reads the page's tables.
(function () {
  "use strict";

  function sortValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return null;
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
    if (!numeric) return raw.trim().toLowerCase();
    var number = parseFloat(raw);
    return isNaN(number) ? null : number;
  }

  function sortBy(table, header) {
    var index = header.cellIndex;
    var numeric = header.getAttribute("data-type") === "num";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (th) {
      th.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortValue(a, index, numeric);
      var y = sortValue(b, index, numeric);
      if (x === y) return 0;
      if (x === null) return 1; // empty cells last, whichever the direction
      if (y === null) return -1;
      var order = x < y ? -1 : 1;
      return ascending ? order : -order;
    });
    rows.forEach(function (row) {
      body.appendChild(row);
    });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (header) {
      header.tabIndex = 0;
      header.addEventListener("click", function () {
        sortBy(table, header);
      });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, header);
        }
      });
    });
  });

  var results = document.getElementById("results-table");
  var filter = document.getElementById("filter");
  var failingOnly = document.getElementById("failing-only");
  var shown = document.getElementById("shown");
  if (!results || !filter || !failingOnly || !shown) return;

  function applyFilter() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = results.tBodies[0].rows;
    var visible = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var text = row.textContent.toLowerCase();
      var keep = words.every(function (word) {
        return text.indexOf(word) !== -1;
      });
      if (failingOnly.checked && row.getAttribute("data-failing") !== "1") keep = false;
      row.hidden = !keep;
      if (keep) visible++;
    }
    shown.textContent = visible + " of " + rows.length + " runs shown";
  }

  filter.addEventListener("input", applyFilter);
  failingOnly.addEventListener("change", applyFilter);
  applyFilter();
})();
