(function () {
  "use strict";
  // Search over the index the page holds, with no server. Chinese is written without spaces, so
  // each word typed is looked for as a substring of a title or text; a Chinese word not found
  // whole still matches where it is found in pieces of two characters or more (检查点改动 in
  // 检查点路径的改动). A hit in the title ranks above one in the text; ties keep the index's order.
  var MAX = 50;
  function fold(text) {
    return (text.normalize ? text.normalize("NFKC") : text).toLowerCase();
  }
  function inPieces(word, doc) {
    // Greedy: the longest piece of what is left that the document holds, until nothing is left.
    var at = 0;
    while (at < word.length) {
      var end = word.length;
      while (end - at >= 2 && doc.title.indexOf(word.slice(at, end)) < 0 && doc.text.indexOf(word.slice(at, end)) < 0) end--;
      if (end - at < 2) return false;
      at = end;
    }
    return true;
  }
  function score(doc, words) {
    var total = 0;
    for (var i = 0; i < words.length; i++) {
      var w = words[i];
      if (doc.title.indexOf(w) >= 0) total += 10;
      else if (doc.text.indexOf(w) >= 0) total += 3;
      else if (/[\u3400-\u9fff]/.test(w) && w.length > 3 && inPieces(w, doc)) total += 1;
      else return 0;
    }
    return total;
  }
  function snippet(text, words) {
    var at = -1;
    for (var i = 0; i < words.length && at < 0; i++) at = fold(text).indexOf(words[i]);
    if (at < 0) return text.slice(0, 80);
    var from = Math.max(0, at - 30);
    return (from ? "…" : "") + text.slice(from, at + 50) + (at + 50 < text.length ? "…" : "");
  }
  document.addEventListener("DOMContentLoaded", function () {
    var data = JSON.parse(document.getElementById("search-index").textContent);
    var root = document.getElementById("site-search").getAttribute("data-to").replace(/search\.html$/, "");
    var docs = data.docs.map(function (d, i) {
      return { d: d, i: i, title: fold(d.t), text: fold(d.x + " " + d.r) };
    });
    var box = document.getElementById("q");
    var list = document.getElementById("results");
    var count = document.getElementById("search-count");
    function run() {
      var words = fold(box.value).split(/\s+/).filter(Boolean);
      list.textContent = "";
      if (!words.length) {
        count.textContent = "";
        return;
      }
      var hits = docs.map(function (doc) { return { doc: doc, s: score(doc, words) }; })
        .filter(function (h) { return h.s > 0; })
        .sort(function (a, b) { return b.s - a.s || a.doc.i - b.doc.i; });
      count.textContent = hits.length ? "找到 " + hits.length + " 条" + (hits.length > MAX ? "，显示前 " + MAX + " 条" : "") : "没有找到";
      hits.slice(0, MAX).forEach(function (h) {
        var d = h.doc.d;
        var item = document.createElement("li");
        var link = document.createElement("a");
        link.href = root + d.u;
        link.textContent = d.t;
        var meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent = d.r + " · " + d.s;
        var hit = document.createElement("p");
        hit.className = "hit";
        hit.textContent = snippet(d.x, words);
        item.appendChild(link);
        item.appendChild(meta);
        item.appendChild(hit);
        list.appendChild(item);
      });
    }
    box.addEventListener("input", function () {
      history.replaceState(null, "", box.value ? "#q=" + encodeURIComponent(box.value) : location.pathname);
      run();
    });
    var match = /^#q=(.*)$/.exec(location.hash);
    if (match) box.value = decodeURIComponent(match[1]);
    run();
  });
})();
