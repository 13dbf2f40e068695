"use strict";
// Sortable tables: click a header to sort by it (numbers by data-sort, text otherwise). No network, no globals.
(function () {
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw !== null && raw !== "" && !isNaN(Number(raw))) { return Number(raw); }
    return cell.textContent.toLowerCase();
  }
  function sortBy(table, column, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var descending = header.classList.contains("sorted-asc");
    rows.sort(function (a, b) {
      var x = key(a.cells[column]), y = key(b.cells[column]);
      if (x === y) { return 0; }
      var order = x < y ? -1 : 1;
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.classList.remove("sorted-asc", "sorted-desc");
    });
    header.classList.add(descending ? "sorted-desc" : "sorted-asc");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.addEventListener("click", function () { sortBy(table, column, th); });
    });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
