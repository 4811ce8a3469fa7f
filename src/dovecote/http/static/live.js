// dovecote Human View: live updates without a reload, and a few keys.
// Listens to /api/v1/events; on each letter it fetches this page again and swaps its <main>,
// marking the rows that are new. "/" focuses the search box.
(function () {
  "use strict";
  var status = document.getElementById("live");
  function say(text, state) { if (status) { status.textContent = text; status.dataset.state = state; } }
  var busy = false, again = false;
  // Rows this page has shown, and when each new one arrived: it stays marked "fresh" for a few
  // seconds, across the refreshes that the other letters of the same act (a send's record) cause.
  var shown = new Set(), arrived = new Map(), FRESH_MS = 4000;
  document.querySelectorAll("main [data-id]").forEach(function (e) { shown.add(e.dataset.id); });
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!fresh || !main) { return; }
        var focused = document.activeElement, href = focused && main.contains(focused) ? focused.getAttribute("href") : null;
        main.replaceWith(fresh);
        var now = Date.now();
        fresh.querySelectorAll("[data-id]").forEach(function (e) {
          var id = e.dataset.id;
          if (!shown.has(id)) { shown.add(id); arrived.set(id, now); }
          if (arrived.has(id) && now - arrived.get(id) < FRESH_MS) { e.classList.add("fresh"); }
        });
        if (href) { var back = fresh.querySelector('[href="' + CSS.escape(href) + '"]'); if (back) { back.focus(); } }
      })
      .catch(function () { say("offline", "down"); })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  if (window.EventSource) {
    var es = new EventSource("/api/v1/events");
    // On every (re)connect: fetch once, so nothing that landed while the stream was down is missed.
    es.addEventListener("open", function () { say("live", "live"); refresh(); });
    es.addEventListener("error", function () { say("reconnecting…", "down"); });
    es.addEventListener("letter", function (e) {
      var ev = JSON.parse(e.data);
      say("live · " + ev.kind + " in " + ev.box, "live");
      refresh();
    });
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (e.key === "/" && t !== "INPUT" && t !== "SELECT" && t !== "TEXTAREA") {
      var q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); }
    }
  });
})();
