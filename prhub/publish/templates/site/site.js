(function () {
  "use strict";
  // The header's search box opens the search page with what was typed; a repository's stream
  // of digests is filtered by verdict and tag (#verdict=精读&tag=rollout, so a filter can be
  // linked). Without scripts every digest shows and the box stays hidden.
  function facetsFromHash() {
    var found = { verdict: "", tag: "" };
    location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at < 0) return;
      var key = pair.slice(0, at);
      if (key === "verdict" || key === "tag") found[key] = decodeURIComponent(pair.slice(at + 1));
    });
    return found;
  }
  function filterStream(chosen) {
    var items = document.querySelectorAll("article.digest");
    var shown = 0;
    Array.prototype.forEach.call(items, function (item) {
      var tags = (item.getAttribute("data-tags") || "").split(" ").filter(Boolean).map(decodeURIComponent);
      var on = (!chosen.verdict || item.getAttribute("data-verdict") === chosen.verdict) &&
        (!chosen.tag || tags.indexOf(chosen.tag) >= 0);
      item.hidden = !on;
      if (on) shown += 1;
    });
    Array.prototype.forEach.call(document.querySelectorAll("button[data-facet]"), function (c) {
      var on = c.getAttribute("data-value") === chosen[c.getAttribute("data-facet")];
      c.setAttribute("aria-pressed", String(on));
    });
    var label = document.getElementById("stream-shown");
    if (label) label.textContent = "显示 " + shown + " / " + items.length;
    var none = document.getElementById("stream-none");
    if (none) none.hidden = shown > 0;
  }
  function streamHash(chosen) {
    var parts = [];
    if (chosen.verdict) parts.push("verdict=" + encodeURIComponent(chosen.verdict));
    if (chosen.tag) parts.push("tag=" + encodeURIComponent(chosen.tag));
    return parts.length ? "#" + parts.join("&") : location.pathname + location.search;
  }
  document.addEventListener("DOMContentLoaded", function () {
    // The header's search box, made here: without scripts there is none. The search page is
    // beside this script, at the site's root.
    var header = document.querySelector("header.site");
    var script = document.querySelector('script[src$="prhub.js"]');
    if (header && script && !document.getElementById("q")) {
      var box = document.createElement("input");
      box.type = "search";
      box.className = "site-search";
      box.id = "site-search";
      box.placeholder = box.ariaLabel = "搜索标题与导读";
      box.setAttribute("aria-label", "搜索标题与导读");
      var to = script.getAttribute("src").replace(/prhub\.js$/, "search.html");
      box.addEventListener("keydown", function (event) {
        if (event.key !== "Enter" || event.isComposing || !box.value.trim()) return;
        location.href = to + "#q=" + encodeURIComponent(box.value.trim());
      });
      header.appendChild(box);
    }
    var facets = document.getElementById("facets");
    if (!facets) return;
    facets.hidden = false;
    Array.prototype.forEach.call(document.querySelectorAll("button[data-facet]"), function (c) {
      c.addEventListener("click", function () {
        var chosen = facetsFromHash();
        chosen[c.getAttribute("data-facet")] = c.getAttribute("data-value");
        history.replaceState(null, "", streamHash(chosen));
        filterStream(chosen);
      });
    });
    window.addEventListener("hashchange", function () { filterStream(facetsFromHash()); });
    filterStream(facetsFromHash());
  });
})();
