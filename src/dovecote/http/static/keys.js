// dovecote Human View: the keyboard. "/" search, "j"/"k" next/previous row, "o" or Enter open the row,
// "r" reply, "c" compose, "e" complete, "?" the list of keys. No key fires while typing in a field.
// "r", "c" and "e" press the control marked data-key="r" / "c" / "e": the current row's first, else the page's
// first (a page without one ignores the key). The current row is kept by its data-id across live refreshes.
(function () {
  "use strict";
  var KEYS = [
    ["/", "search mail"], ["j", "next row"], ["k", "previous row"], ["o", "open the row"], ["Enter", "open the row"],
    ["r", "reply"], ["c", "compose"], ["e", "complete"], ["?", "show these keys"], ["Esc", "close this list"]
  ];
  var current = null; // the data-id of the current row

  function typing(t) {
    if (!t || !t.tagName) { return false; }
    var tag = t.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || t.isContentEditable;
  }
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("main table tbody tr"))
      .filter(function (r) { return !r.hidden && r.querySelector("a[href]"); });
  }
  function at() {
    var all = rows();
    for (var i = 0; i < all.length; i += 1) {
      if (current !== null && all[i].dataset.id === current) { return i; }
    }
    return -1;
  }
  function select(row) {
    document.querySelectorAll("tr.kb-current").forEach(function (r) { r.classList.remove("kb-current"); });
    if (!row) { current = null; return; }
    current = row.dataset.id || null;
    row.classList.add("kb-current");
    var link = row.querySelector("a[href]");
    if (link) { link.focus(); }
    if (row.scrollIntoView) { row.scrollIntoView({ block: "nearest" }); }
  }
  function move(by) {
    var all = rows();
    if (!all.length) { return; }
    var i = at();
    select(all[Math.max(0, Math.min(all.length - 1, i === -1 ? (by > 0 ? 0 : all.length - 1) : i + by))]);
  }
  function currentRow() { var i = at(); return i === -1 ? null : rows()[i]; }
  function press(key) {
    var row = currentRow(), sel = '[data-key="' + key + '"]';
    var target = (row && row.querySelector(sel)) || document.querySelector("main " + sel) || document.querySelector(sel);
    if (!target) { return false; }
    if (target.tagName === "A" || target.tagName === "BUTTON" || target.tagName === "INPUT") { target.click(); } else { target.focus(); }
    return true;
  }
  function open() {
    var row = currentRow(), link = row && row.querySelector("a[href]");
    if (link) { link.click(); return true; }
    return false;
  }
  function help() {
    var d = document.getElementById("keys-help");
    if (!d) {
      d = document.createElement("dialog");
      d.id = "keys-help";
      d.setAttribute("aria-labelledby", "keys-help-title");
      var h = document.createElement("h2"); h.id = "keys-help-title"; h.textContent = "Keyboard";
      var dl = document.createElement("dl"); dl.className = "facts keys";
      KEYS.forEach(function (k) {
        var dt = document.createElement("dt"), kbd = document.createElement("kbd"), dd = document.createElement("dd");
        kbd.textContent = k[0]; dt.appendChild(kbd); dd.textContent = k[1];
        dl.appendChild(dt); dl.appendChild(dd);
      });
      var p = document.createElement("p"); p.className = "of";
      p.textContent = "No key fires while you type in a field.";
      var form = document.createElement("form"); form.method = "dialog";
      var b = document.createElement("button"); b.type = "submit"; b.textContent = "Close";
      form.appendChild(b);
      d.appendChild(h); d.appendChild(dl); d.appendChild(p); d.appendChild(form);
      document.body.appendChild(d);
    }
    if (!d.open) { d.showModal(); }
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || typing(e.target)) { return; }
    var d = document.getElementById("keys-help");
    if (d && d.open) { return; } // the dialog has the keyboard: Esc or its button closes it
    var done = true;
    switch (e.key) {
      case "/": { var q = document.getElementById("q"); if (q) { q.focus(); } else { done = false; } break; }
      case "j": move(1); break;
      case "k": move(-1); break;
      case "o": done = open(); break;
      case "Enter": done = e.target === document.body || (e.target.closest && !!e.target.closest("tr.kb-current")) ? open() : false; break;
      case "r": case "c": case "e": done = press(e.key); break;
      case "?": help(); break;
      default: done = false;
    }
    if (done) { e.preventDefault(); }
  });
  // A live refresh swaps <main>: mark the current row again (without moving the focus a person may have put elsewhere).
  new MutationObserver(function () {
    var i = at();
    if (i !== -1) { rows()[i].classList.add("kb-current"); }
  }).observe(document.body, { childList: true });
  window.dovecoteKeys = KEYS;
})();
