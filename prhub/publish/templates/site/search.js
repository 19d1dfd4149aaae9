(function () {
  "use strict";
  // Search with no server, over an index split in files: the keys of the words typed (pairs of
  // Chinese characters, pieces of three letters or digits) are in shards by their hash, the
  // documents in chunks; each is a script file that hands its part to prhubSearch, so a page
  // opened from the disk loads them too. A document matches when it holds every key of every
  // word (a long Chinese word also in pieces); a word found in the title ranks above one found
  // in the text, which ranks above one found in pieces; ties keep the index's order (the
  // newest first). Results come PAGE at a time.
  var PAGE = 20, CHUNK = 8;
  var keys = {}, docs = {}, waiting = {};
  function fold(text) {
    return (text.normalize ? text.normalize("NFKC") : text).toLowerCase();
  }
  function foldEach(text) {
    // Folded character by character, each as long as it was (… stays …, not ...): a place
    // in the folded text is the same place in the text.
    return Array.from(text).map(function (c) {
      var f = fold(c);
      return f.length === c.length ? f : c.toLowerCase();
    }).join("");
  }
  function keysOf(word) {
    var found = {}, runs = fold(word).match(/[\u3400-\u9fff\uf900-\ufaff]+|[a-z0-9]+/g) || [];
    runs.forEach(function (run) {
      var n = run.charCodeAt(0) >= 0x3400 ? 2 : 3;
      if (run.length <= n) found[run] = true;
      else for (var i = 0; i + n <= run.length; i++) found[run.slice(i, i + n)] = true;
    });
    return Object.keys(found);
  }
  function shardOf(key, shards) {
    var h = 0x811c9dc5;
    for (var i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
    return h % shards;
  }
  function ids(gaps) {
    var at = 0;
    return gaps.split(",").map(function (g) { at += parseInt(g, 36); return at; });
  }
  function load(kind, n, done) {
    var name = kind + n;
    if ((kind === "k" ? keys : docs)[n]) return done();
    if (waiting[name]) return waiting[name].push(done);
    waiting[name] = [done];
    var tag = document.createElement("script");
    tag.src = root + "search.index/" + kind + "/" + n + ".js";
    tag.onerror = function () {
      (kind === "k" ? keys : docs)[n] = kind === "k" ? {} : [];
      tag.onload();
    };
    tag.onload = function () {
      var calls = waiting[name];
      delete waiting[name];
      calls.forEach(function (f) { f(); });
    };
    document.head.appendChild(tag);
  }
  function loadAll(kind, list, done) {
    var left = list.length;
    if (!left) return done();
    list.forEach(function (n) { load(kind, n, function () { if (--left === 0) done(); }); });
  }
  window.prhubSearch = {
    keys: function (n, part) { keys[n] = part; },
    docs: function (n, part) { docs[n] = part; }
  };
  var root = "", shards = 1;
  function postings(key) {
    var part = keys[shardOf(key, shards)] || {};
    return Object.prototype.hasOwnProperty.call(part, key) ? ids(part[key]) : [];
  }
  function all(list) {
    // The documents holding every key of the list.
    var sets = list.map(postings).sort(function (a, b) { return a.length - b.length; });
    var found = sets.length ? sets[0] : [];
    for (var i = 1; i < sets.length; i++) {
      var other = new Set(sets[i]);
      found = found.filter(function (d) { return other.has(d); });
    }
    return found;
  }
  function chain(word) {
    // A Chinese word of four characters or more, as its pairs in order: it is also found in
    // pieces of two characters or more (检查点改动 in 检查点路径的改动).
    var run = fold(word);
    if (!/^[\u3400-\u9fff\uf900-\ufaff]{4,}$/.test(run)) return null;
    var pairs = [];
    for (var i = 0; i + 2 <= run.length; i++) pairs.push(run.slice(i, i + 2));
    return pairs;
  }
  function inPieces(sets, d) {
    var start = 0;
    for (var i = 0; i < sets.length; i++) {
      if (sets[i].has(d)) continue;
      if (i + 1 - start < 2) return false;
      start = i + 1;
    }
    return sets.length + 1 - start >= 2;
  }
  function rank(words) {
    var scores = null;
    words.forEach(function (w) {
      var titled = new Set(all(w.keys.map(function (k) { return "^" + k; })));
      var next = new Map();
      function add(d, s) {
        if (scores && !scores.has(d)) return;
        next.set(d, (scores ? scores.get(d) : 0) + s);
      }
      var exact = all(w.keys);
      exact.forEach(function (d) { add(d, titled.has(d) ? 10 : 3); });
      if (w.chain) {
        var found = new Set(exact);
        var sets = w.chain.map(function (k) { return new Set(postings(k)); });
        sets[0].forEach(function (d) { if (!found.has(d) && inPieces(sets, d)) add(d, 1); });
      }
      scores = next;
    });
    var hits = scores ? Array.from(scores.keys()) : [];
    return hits.sort(function (a, b) { return scores.get(b) - scores.get(a) || a - b; });
  }
  function snippet(text, query) {
    // Where the first word typed is found, with some text around it; a cut never falls inside
    // a word of letters or digits. [before, the word as written, after].
    var folded = foldEach(text), at = -1, size = 0;
    var words = fold(query).split(/\s+/).filter(Boolean);
    for (var i = 0; i < words.length && at < 0; i++) {
      at = folded.indexOf(words[i]);
      size = words[i].length;
    }
    if (at < 0 || folded.length !== text.length) {
      return [text.slice(0, 90) + (text.length > 90 ? "…" : ""), "", ""];
    }
    var from = Math.max(0, at - 30), to = Math.min(text.length, at + size + 60);
    while (from > 0 && from < at && /\w/.test(text[from - 1]) && /\w/.test(text[from])) from++;
    while (to < text.length && to > at + size && /\w/.test(text[to - 1]) && /\w/.test(text[to])) to--;
    return [(from ? "…" : "") + text.slice(from, at), text.slice(at, at + size),
      text.slice(at + size, to) + (to < text.length ? "…" : "")];
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("q");
    var list = document.getElementById("results");
    var count = document.getElementById("search-count");
    var more = document.getElementById("more");
    var index = document.getElementById("search-index");
    root = document.querySelector('script[src$="search.js"]').getAttribute("src").replace(/search\.js$/, "");
    shards = parseInt(index.getAttribute("data-shards"), 10) || 1;
    var hits = [], shown = 0, asked = 0, query = "";
    function show() {
      var page = hits.slice(shown, shown + PAGE);
      var chunks = {};
      page.forEach(function (d) { chunks[Math.floor(d / CHUNK)] = true; });
      var mine = asked;
      loadAll("d", Object.keys(chunks).map(Number), function () {
        if (mine !== asked) return;
        page.forEach(function (d) {
          var doc = (docs[Math.floor(d / CHUNK)] || [])[d % CHUNK];
          if (!doc) return;
          var item = document.createElement("li");
          var link = document.createElement("a");
          link.href = root + doc.u;
          link.textContent = doc.t;
          var meta = document.createElement("span");
          meta.className = "meta";
          meta.textContent = doc.r + " · " + doc.s;
          var hit = document.createElement("p");
          hit.className = "hit";
          var parts = snippet(doc.x, query);
          var found = document.createElement("mark");
          found.textContent = parts[1];
          hit.appendChild(document.createTextNode(parts[0]));
          if (parts[1]) hit.appendChild(found);
          hit.appendChild(document.createTextNode(parts[2]));
          item.appendChild(link);
          item.appendChild(meta);
          item.appendChild(hit);
          list.appendChild(item);
        });
        shown += page.length;
        more.hidden = shown >= hits.length;
        count.textContent = hits.length ? "找到 " + hits.length + " 条，显示 1–" + shown + " 条" : "没有找到";
      });
    }
    function run() {
      query = box.value;
      asked += 1;
      var mine = asked;
      var words = fold(query).split(/\s+/).filter(Boolean)
        .map(function (w) { return { keys: keysOf(w), chain: chain(w) }; })
        .filter(function (w) { return w.keys.length; });
      list.textContent = "";
      count.textContent = "";  // until this query's parts are loaded: nothing stale shows
      more.hidden = true;
      hits = [];
      shown = 0;
      if (!words.length) {
        count.textContent = query.trim() ? "没有找到" : "";
        return;
      }
      var wanted = {};
      words.forEach(function (w) {
        w.keys.forEach(function (k) {
          wanted[shardOf(k, shards)] = true;
          wanted[shardOf("^" + k, shards)] = true;
        });
      });
      loadAll("k", Object.keys(wanted).map(Number), function () {
        if (mine !== asked) return;
        hits = rank(words);
        if (!hits.length) {
          count.textContent = "没有找到";
          return;
        }
        show();
      });
    }
    more.addEventListener("click", show);
    box.addEventListener("input", function () {
      history.replaceState(null, "", box.value ? "#q=" + encodeURIComponent(box.value) : location.pathname);
      run();
    });
    var match = /^#q=(.*)$/.exec(location.hash);
    if (match) box.value = decodeURIComponent(match[1]);
    run();
  });
})();
