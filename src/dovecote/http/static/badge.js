// dovecote Human View: the count of what needs a person, on every page, in the tab's title ("(3) Inbox · dovecote")
// and on the tab's icon (drawn here on a canvas: no file, no CDN), so a person with the tab in the background sees
// it change. It reads GET /api/v1/needs (the one list the /needs page shows) when the page loads and each time a
// letter arrives: live.js swaps <main> on every letter of /api/v1/events, and that swap is what this listens for.
// New rows are announced politely in a live region (aria-live="polite"), never by moving the focus.
(function () {
  "use strict";
  var base = document.title.replace(/^\(\d+\+?\) /, "");
  var last = null, timer = null, seen = new Set();
  var say = document.createElement("div");
  say.id = "announce"; say.className = "visually-hidden";
  say.setAttribute("role", "status"); say.setAttribute("aria-live", "polite");
  document.body.appendChild(say);
  document.querySelectorAll("main [data-id]").forEach(function (e) { seen.add(e.dataset.id); });

  function icon(count) {
    var c = document.createElement("canvas");
    c.width = 32; c.height = 32;
    var g = c.getContext("2d");
    if (!g) { return null; }
    g.fillStyle = "#1f5fbf"; // the page's accent
    g.beginPath(); g.arc(16, 16, 14, 0, 2 * Math.PI); g.fill();
    g.fillStyle = "#ffffff"; g.font = "bold 18px sans-serif"; g.textAlign = "center"; g.textBaseline = "middle";
    g.fillText("d", 16, 17);
    if (count > 0) {
      var text = count > 99 ? "99+" : String(count);
      g.fillStyle = "#b3261e";
      g.beginPath(); g.arc(22, 10, 10, 0, 2 * Math.PI); g.fill();
      g.fillStyle = "#ffffff"; g.font = "bold " + (text.length > 2 ? 9 : 13) + "px sans-serif";
      g.fillText(text, 22, 11);
    }
    return c.toDataURL("image/png");
  }
  function show(count) {
    document.title = (count > 0 ? "(" + count + ") " : "") + base;
    document.documentElement.dataset.needs = String(count);
    var link = document.querySelector('link[rel="icon"]');
    if (!link) { link = document.createElement("link"); link.rel = "icon"; document.head.appendChild(link); }
    var url = icon(count);
    if (url) { link.type = "image/png"; link.href = url; }
    if (last !== null && count > last) { say.textContent = count + " waiting on a person (" + (count - last) + " new)"; }
    last = count;
  }
  function update() {
    fetch("/api/v1/needs", { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) { if (body && typeof body.count === "number") { show(body.count); } })
      .catch(function () { /* offline: the live status says so */ });
  }
  function swapped() {
    var fresh = 0;
    document.querySelectorAll("main [data-id]").forEach(function (e) {
      if (!seen.has(e.dataset.id)) { seen.add(e.dataset.id); fresh += 1; }
    });
    if (fresh) { say.textContent = fresh === 1 ? "1 new item" : fresh + " new items"; }
    clearTimeout(timer);
    timer = setTimeout(update, 150); // the several letters of one act are one fetch
  }
  update();
  new MutationObserver(swapped).observe(document.body, { childList: true });
})();
