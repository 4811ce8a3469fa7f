// dovecote Human View: every <table data-sortable> sorts by a column (its header is a button) and filters by
// each column (a labelled field under each header), in the page, without a reload. The sort and the filters a
// person set are kept across the live refreshes that swap <main>, and so is the field being typed in.
(function () {
  "use strict";
  var kept = new Map(); // table key -> {col, dir, filters[]}

  function keyOf(table, i) { return table.id || location.pathname + "#" + i; }
  function headers(table) { var r = table.tHead && table.tHead.rows[0]; return r ? Array.prototype.slice.call(r.cells) : []; }
  function label(th) { return (th.dataset.label || th.textContent || "").trim(); }
  // The rows that sort and filter: every body row but a "nothing here" row (one cell spanning the table).
  function bodyRows(table) {
    var out = [];
    Array.prototype.forEach.call(table.tBodies, function (b) {
      Array.prototype.forEach.call(b.rows, function (r) { if (!(r.cells.length === 1 && r.cells[0].colSpan > 1)) { out.push(r); } });
    });
    return out;
  }
  function cellValue(row, col) {
    var c = row.cells[col];
    if (!c) { return ""; }
    return c.dataset.sort !== undefined ? c.dataset.sort : c.textContent.trim();
  }
  var NUMBER = /^-?\d+(\.\d+)?$/;
  function compare(a, b) {
    if (NUMBER.test(a) && NUMBER.test(b)) { return parseFloat(a) - parseFloat(b); }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function apply(table, state) {
    var rows = bodyRows(table);
    if (state.col !== null && rows.length) {
      var body = rows[0].parentNode, col = state.col, dir = state.dir === "descending" ? -1 : 1;
      rows.slice().sort(function (a, b) { return dir * compare(cellValue(a, col), cellValue(b, col)); })
        .forEach(function (r) { body.appendChild(r); });
    }
    headers(table).forEach(function (th, i) {
      if (state.col === i) { th.setAttribute("aria-sort", state.dir); } else { th.removeAttribute("aria-sort"); }
    });
    var shown = 0;
    rows.forEach(function (r) {
      var ok = state.filters.every(function (f, i) {
        return !f || (r.cells[i] ? r.cells[i].textContent : "").toLowerCase().indexOf(f.toLowerCase()) !== -1;
      });
      r.hidden = !ok;
      if (ok) { shown += 1; }
    });
    table.dataset.shown = String(shown);
  }

  function enhance(table, i) {
    if (table.dataset.enhanced) { return; }
    table.dataset.enhanced = "1";
    var key = keyOf(table, i), ths = headers(table);
    var state = kept.get(key) || { col: null, dir: "ascending", filters: ths.map(function () { return ""; }) };
    kept.set(key, state);
    var filterRow = document.createElement("tr");
    filterRow.className = "filter-row";
    ths.forEach(function (th, col) {
      var name = label(th) || "column " + (col + 1);
      th.dataset.label = name;
      var b = document.createElement("button");
      b.type = "button"; b.className = "sort"; b.textContent = name;
      b.setAttribute("aria-label", "Sort by " + name);
      while (th.firstChild) { th.removeChild(th.firstChild); }
      th.appendChild(b);
      b.addEventListener("click", function () {
        state.dir = state.col === col && state.dir === "ascending" ? "descending" : "ascending";
        state.col = col;
        apply(table, state);
      });
      var td = document.createElement("td");
      var input = document.createElement("input");
      input.type = "search"; input.className = "filter"; input.dataset.col = String(col);
      input.setAttribute("aria-label", "Filter by " + name);
      input.placeholder = "filter";
      input.value = state.filters[col] || "";
      input.addEventListener("input", function () { state.filters[col] = input.value; apply(table, state); });
      td.appendChild(input);
      filterRow.appendChild(td);
    });
    table.tHead.appendChild(filterRow);
    apply(table, state);
  }

  function enhanceAll() {
    document.querySelectorAll("table[data-sortable]").forEach(enhance);
  }
  // A live refresh swaps <main>: enhance the new tables with the kept state, and give the focus back to the
  // filter field a person was typing in (same table, same column), caret where it was.
  var typing = null;
  document.addEventListener("focusin", function (e) {
    var t = e.target;
    if (t.classList && t.classList.contains("filter")) {
      var table = t.closest("table"), all = Array.prototype.slice.call(document.querySelectorAll("table[data-sortable]"));
      typing = { key: keyOf(table, all.indexOf(table)), col: t.dataset.col };
    }
  });
  // Leaving the field for another control ends the typing; the focus falling to <body> (the field's <main> was
  // swapped away) does not.
  document.addEventListener("focusout", function (e) {
    if (!(e.target.classList && e.target.classList.contains("filter"))) { return; }
    setTimeout(function () {
      var now = document.activeElement;
      if (now && now !== document.body && !now.classList.contains("filter")) { typing = null; }
    }, 0);
  });
  function restore() {
    enhanceAll();
    if (!typing || (document.activeElement && document.activeElement.classList.contains("filter"))) { return; }
    var all = Array.prototype.slice.call(document.querySelectorAll("table[data-sortable]"));
    all.forEach(function (table, i) {
      if (keyOf(table, i) !== typing.key) { return; }
      var input = table.querySelector('input.filter[data-col="' + typing.col + '"]');
      if (input) { input.focus(); var n = input.value.length; input.setSelectionRange(n, n); }
    });
  }
  enhanceAll();
  new MutationObserver(restore).observe(document.body, { childList: true });
  window.dovecoteTables = { enhance: enhanceAll };
})();
