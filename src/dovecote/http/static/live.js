// dovecote Human View: live updates without a reload, and a few keys.
// Listens to /api/v1/events; on each letter it fetches this page again and swaps its <main>,
// marking the rows that are new. A form the person is filling in (one holding the focus, or whose
// fields differ from what the page gave) is carried over into the new <main> as it is, so a live
// update never wipes a half-typed letter. "/" focuses the search box.
(function () {
  "use strict";
  // Whether the person is at work in form f: the focus is in it, or a field differs from its default.
  function typing(f) {
    if (f.contains(document.activeElement)) { return true; }
    return Array.prototype.some.call(f.elements, function (e) {
      if (e.type === "hidden" || e.type === "submit") { return false; }
      if (e.type === "checkbox" || e.type === "radio") { return e.checked !== e.defaultChecked; }
      if (e.tagName === "SELECT") {
        return Array.prototype.some.call(e.options, function (o) { return o.selected !== o.defaultSelected; });
      }
      return "defaultValue" in e && e.value !== e.defaultValue;
    });
  }
  // Put each form being filled in into the fresh <main> in place of its twin (same id, else same
  // action). False when such a form has no twin there: then the page is left as it is for now.
  function carry(main, fresh) {
    var forms = Array.prototype.filter.call(main.querySelectorAll("form"), typing);
    var twins = forms.map(function (f) {
      return fresh.querySelector(f.id ? "form#" + CSS.escape(f.id)
        : 'form[action="' + CSS.escape(f.getAttribute("action") || "") + '"]');
    });
    if (twins.some(function (t) { return !t; })) { return false; }
    forms.forEach(function (f, i) { twins[i].replaceWith(f); });
    return true;
  }
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
        var caret = focused && "selectionStart" in focused ? [focused.selectionStart, focused.selectionEnd] : null;
        if (!carry(main, fresh)) { say("live · new mail (shown when you send or clear the form)", "live"); return; }
        main.replaceWith(fresh);
        if (focused && fresh.contains(focused)) {  // a carried field: give the focus (and the caret) back
          focused.focus();
          if (caret && caret[0] !== null) { try { focused.setSelectionRange(caret[0], caret[1]); } catch (err) { /* not a text field */ } }
        }
        var now = Date.now();
        fresh.querySelectorAll("[data-id]").forEach(function (e) {
          var id = e.dataset.id;
          if (!shown.has(id)) { shown.add(id); arrived.set(id, now); }
          if (arrived.has(id) && now - arrived.get(id) < FRESH_MS) { e.classList.add("fresh"); }
        });
        if (href && !fresh.contains(focused)) { var back = fresh.querySelector('[href="' + CSS.escape(href) + '"]'); if (back) { back.focus(); } }
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
