(function () {
  "use strict";
  // Script errors, failed loads and CSP refusals are counted in body[data-errors], so a page that
  // broke (or held markup it should not) says so to tests and to readers' devtools alike.
  var errors = 0;
  function count() {
    errors += 1;
    if (document.body) document.body.setAttribute("data-errors", String(errors));
  }
  window.addEventListener("error", count, true);
  window.addEventListener("unhandledrejection", count);
  document.addEventListener("securitypolicyviolation", count);
  var consoleError = console.error;
  console.error = function () {
    count();
    return consoleError.apply(console, arguments);
  };

  function chips() {
    return Array.prototype.slice.call(document.querySelectorAll("button[data-tag]"));
  }
  function show(tag) {
    if (!chips().some(function (c) { return c.getAttribute("data-tag") === tag; })) tag = "";
    var rows = document.querySelectorAll("tr[data-tags]");
    var shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var tags = row.getAttribute("data-tags").split(" ").map(decodeURIComponent);
      var on = tag === "" || tags.indexOf(tag) >= 0;
      row.hidden = !on;
      if (on) shown += 1;
    });
    chips().forEach(function (c) {
      c.setAttribute("aria-pressed", String(c.getAttribute("data-tag") === tag));
    });
    var label = document.getElementById("shown");
    if (label) label.textContent = "显示 " + shown + " / " + rows.length;
  }
  function fromHash() {
    var match = /^#tag=(.*)$/.exec(location.hash);
    show(match ? decodeURIComponent(match[1]) : "");
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (errors) document.body.setAttribute("data-errors", String(errors));
    var bar = document.getElementById("filter");
    if (!bar) return;
    bar.hidden = false;
    chips().forEach(function (c) {
      c.addEventListener("click", function () {
        var tag = c.getAttribute("data-tag");
        history.replaceState(null, "", tag ? "#tag=" + encodeURIComponent(tag) : location.pathname + location.search);
        show(tag);
      });
    });
    window.addEventListener("hashchange", fromHash);
    fromHash();
  });
})();
