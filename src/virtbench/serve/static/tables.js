// virtbench serve: every table of a page sorts by any column (click its header, again to
// reverse). Without this script a table is the plain table the server sent, in its order.
// A cell's key is its data-sort attribute if it has one, else its text; numbers compare as
// numbers (with the report's SI prefixes: 980 µs < 4.16 ms), other text in natural order
// (run-2 < run-10); empty cells and "–" stay last. Written for virtbench; no library.
(function () {
  "use strict";
  var SCALE = {G: 1e9, M: 1e6, k: 1e3, m: 1e-3, "µ": 1e-6, n: 1e-9};
  var UNITS = /^(s|B\/s|B|bit\/s|Hz|req\/s|ops\/s|IOPS|packets\/s)\b/;
  var NUMBER = /^[<>≤≥~]?\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)(?=$|[\s%×/,;)\]])/i;
  var collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});

  function key(cell) {
    var text = (cell.getAttribute("data-sort") || cell.textContent || "").trim();
    if (text === "" || text === "–" || text === "-") { return {empty: true}; }
    var match = NUMBER.exec(text);
    if (!match) { return {text: text}; }
    var value = parseFloat(match[1]);
    var rest = text.slice(match[0].length).trim();
    var prefix = rest.charAt(0);
    if (SCALE[prefix] && UNITS.test(rest.slice(1))) { value *= SCALE[prefix]; }
    return isFinite(value) ? {number: value} : {text: text};
  }

  function compare(a, b) {  // empties last; numbers before text
    if (a.empty || b.empty) { return (a.empty ? 1 : 0) - (b.empty ? 1 : 0); }
    if (a.number !== undefined && b.number !== undefined) { return a.number - b.number; }
    if (a.number !== undefined) { return -1; }
    if (b.number !== undefined) { return 1; }
    return collator.compare(a.text, b.text);
  }

  function sortable(table) {  // one header row, plain body rows (no merged cells)
    var head = table.tHead;
    var body = table.tBodies.length === 1 ? table.tBodies[0] : null;
    if (!head || head.rows.length !== 1 || !body || body.rows.length < 2) { return false; }
    return !body.querySelector("td[rowspan], td[colspan], th[rowspan], th[colspan]");
  }

  function sortBy(table, column, th) {
    var body = table.tBodies[0];
    var descending = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      var cell = row.cells[column];
      return {row: row, index: index, key: cell ? key(cell) : {empty: true}};
    });
    rows.sort(function (x, y) {
      var order = compare(x.key, y.key);
      if (order !== 0 && !(x.key.empty || y.key.empty)) { order = descending ? -order : order; }
      return order || x.index - y.index;  // stable: equal keys keep their order
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  function prepare(root) {
    Array.prototype.forEach.call(root.querySelectorAll("table"), function (table) {
      if (table.hasAttribute("data-sortable") || !sortable(table)) { return; }
      table.setAttribute("data-sortable", "");
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        button.title = "sort by this column";
        while (th.firstChild) { button.appendChild(th.firstChild); }
        th.appendChild(button);
        button.addEventListener("click", function () { sortBy(table, column, th); });
      });
    });
  }

  prepare(document);
  // the live run page swaps in a new report body: its tables sort too
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      if (change.target.querySelectorAll) { prepare(change.target); }
    });
  }).observe(document.body, {childList: true, subtree: true});
}());
