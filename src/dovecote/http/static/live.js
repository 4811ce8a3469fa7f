// dovecote Human View: live updates without a reload, and a few keys.
// Listens to /api/v1/events; on each letter it fetches this page again and swaps its <main>,
// marking the rows that are new. "/" focuses the search box.
(function () {
  "use strict";
  var status = document.getElementById("live");
  function say(text, state) { if (status) { status.textContent = text; status.dataset.state = state; } }
  var busy = false, again = false;
  function ids(root) { var s = new Set(); root.querySelectorAll("[data-id]").forEach(function (e) { s.add(e.dataset.id); }); return s; }
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
        var known = ids(main), focused = document.activeElement, href = focused && main.contains(focused) ? focused.getAttribute("href") : null;
        main.replaceWith(fresh);
        fresh.querySelectorAll("[data-id]").forEach(function (e) { if (!known.has(e.dataset.id)) { e.classList.add("fresh"); } });
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
