// Trajectory explorer: filters, search and pages over the JSON data island.
// Model text is untrusted: it only ever reaches the page through textContent, never as HTML.
(function () {
  "use strict";
  var island = document.getElementById("explorer-data");
  if (!island) return;

  // A large scan's island is gzipped and base64'd (html.COMPRESS_ABOVE) in two parts: the
  // index (every trajectory's header, what the filters and the cards show) and the turns,
  // each trajectory's a JSON text of its own, one a line. The index is inflated and shown
  // first; the turns inflate after, with the browser's own DecompressionStream (no network),
  // and are parsed per trajectory when a card, a search or a link first needs them.
  var turnsReady = true;
  var whenTurns = [];
  function inflate(b64) {
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  function load(done) {
    if (island.dataset.encoding !== "gzip+base64") { done(JSON.parse(island.textContent)); return; }
    var parts = island.textContent.trim().split(" ");
    turnsReady = false;
    inflate(parts[0]).then(function (text) {
      var D = JSON.parse(text);
      done(D);
      return inflate(parts[1]).then(function (blob) {
        var lines = blob.split("\n");
        D.trajectories.forEach(function (t, i) { t.tj = lines[i]; });
        turnsReady = true;
        document.getElementById("explorer").dataset.turnsMs = String(Math.round(performance.now()));
        whenTurns.splice(0).forEach(function (f) { f(); });
      });
    });
  }
  function afterTurns(f) { if (turnsReady) f(); else whenTurns.push(f); }
  function turnsOf(t) {
    if (t.turns === undefined) { t.turns = JSON.parse(t.tj); t.tj = undefined; }
    return t.turns;
  }
  var ROLE_OF = { s: "system", u: "user", a: "assistant", t: "tool" };
  load(run);

  function run(D) {
  var T = D.trajectories;
  var markRe = D.markup ? new RegExp(D.markup, "g") : null;
  var state = { q: "", rule: "", cause: "", variant: "", reward: "", page: 0 };
  var filtered = T;
  var haystacks = null;
  var byK = {};
  T.forEach(function (t) { byK[t.k] = t; });

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  function plural(n, one, many) { return fmt(n) + " " + (n === 1 ? one : many || one + "s"); }
  function actorName(a) { return a === "user_sim" ? "user simulator" : a === "env" ? "tool" : a; }

  function rewardBucket(r) {
    if (r === null || r === undefined) return "none";
    if (r <= 0) return "zero";
    if (r >= 1) return "full";
    return "partial";
  }
  var BUCKETS = [["zero", "reward 0"], ["partial", "partial reward"], ["full", "full reward"], ["none", "not scored"]];

  function addOptions(select, options) {
    options.forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = o[0];
      select.appendChild(opt);
    });
  }

  function setupFilters() {
    var ruleCount = {}, causeCount = {}, variantCount = {}, rewardCount = {};
    T.forEach(function (t) {
      t.rules.forEach(function (r) { ruleCount[r] = (ruleCount[r] || 0) + 1; });
      t.causes.forEach(function (c) { causeCount[c] = (causeCount[c] || 0) + 1; });
      if (t.vi !== null && t.vi !== undefined) variantCount[t.vi] = (variantCount[t.vi] || 0) + 1;
      var b = rewardBucket(t.reward);
      rewardCount[b] = (rewardCount[b] || 0) + 1;
    });
    var flagged = T.filter(function (t) { return t.nf > 0; }).length;
    // Rules with findings first, most first; the rest after them, in the pack's order.
    addOptions($("x-rule"), [["*", "any finding (" + flagged + ")"]]);
    var ranked = D.rules.map(function (r, i) { return i; }).sort(function (a, b) {
      return (ruleCount[b] || 0) - (ruleCount[a] || 0) || a - b;
    });
    [["with findings", ranked.filter(function (i) { return ruleCount[i]; })],
     ["no findings", ranked.filter(function (i) { return !ruleCount[i]; })]].forEach(function (g) {
      if (!g[1].length) return;
      var group = el("optgroup");
      group.label = g[0];
      addOptions(group, g[1].map(function (i) { return [D.rules[i].id, D.rules[i].id + " (" + (ruleCount[i] || 0) + ")"]; }));
      $("x-rule").appendChild(group);
    });
    addOptions($("x-cause"), D.causes.map(function (c, i) {
      return [c.id, c.rank + ". " + c.title + " (" + (causeCount[i] || 0) + ")"];
    }));
    addOptions($("x-variant"), D.variants.map(function (v, i) {
      return [String(i), v.variant + " · " + v.agent_model + " (" + (variantCount[i] || 0) + ")"];
    }));
    addOptions($("x-reward"), BUCKETS.filter(function (b) { return rewardCount[b[0]]; }).map(function (b) {
      return [b[0], b[1] + " (" + rewardCount[b[0]] + ")"];
    }));
    ["x-rule", "x-cause", "x-variant", "x-reward"].forEach(function (id) {
      $(id).addEventListener("change", function () { readControls(); apply(); });
    });
    var timer = null;
    $("x-q").addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { readControls(); apply(); }, 150);
    });
    $("x-reset").addEventListener("click", function () { setControls({}); apply(); });
  }

  function readControls() {
    state.q = $("x-q").value.trim().toLowerCase();
    state.rule = $("x-rule").value;
    state.cause = $("x-cause").value;
    state.variant = $("x-variant").value;
    state.reward = $("x-reward").value;
    state.page = 0;
  }
  function setControls(s) {
    $("x-q").value = s.q || "";
    $("x-rule").value = s.rule || "";
    $("x-cause").value = s.cause || "";
    $("x-variant").value = s.variant || "";
    $("x-reward").value = s.reward || "";
    readControls();
  }

  function turnText(u) {
    var parts = [];
    if (u.c) parts.push(u.c.t, u.c.t2 || "");
    if (u.r) parts.push(u.r.t, u.r.t2 || "");
    if (u.s !== undefined) parts.push(D.strings[u.s]);
    (u.tc || []).forEach(function (c) { parts.push(c[0], c[1]); });
    if (u.e) parts.push(u.e);
    return parts.join("\n");
  }
  function haystack(t) {
    if (!haystacks) haystacks = {};
    var h = haystacks[t.k];
    if (h === undefined) {
      h = [t.id, t.task, t.run, D.paths[t.p] || ""].concat(turnsOf(t).map(turnText)).join("\n").toLowerCase();
      haystacks[t.k] = h;
    }
    return h;
  }
  function ruleIndex(id) {
    for (var i = 0; i < D.rules.length; i++) if (D.rules[i].id === id) return i;
    return -1;
  }
  function causeIndex(id) {
    for (var i = 0; i < D.causes.length; i++) if (D.causes[i].id === id) return i;
    return -1;
  }
  function matches(t) {
    if (state.rule === "*" && !t.nf) return false;
    if (state.rule && state.rule !== "*" && t.rules.indexOf(ruleIndex(state.rule)) < 0) return false;
    if (state.cause && t.causes.indexOf(causeIndex(state.cause)) < 0) return false;
    if (state.variant !== "" && String(t.vi) !== state.variant) return false;
    if (state.reward && rewardBucket(t.reward) !== state.reward) return false;
    if (state.q && haystack(t).indexOf(state.q) < 0) return false;
    return true;
  }

  function apply() {
    if (state.q && !turnsReady) {  // a search reads the turns: it runs once they are in
      $("x-pager").textContent = "searching (the turns are still loading)…";
      afterTurns(apply);
      return;
    }
    filtered = T.filter(matches);
    var pages = Math.max(1, Math.ceil(filtered.length / D.page_size));
    if (state.page >= pages) state.page = pages - 1;
    renderPage();
  }

  function pager(box) {
    box.textContent = "";
    var pages = Math.max(1, Math.ceil(filtered.length / D.page_size));
    var from = filtered.length ? state.page * D.page_size + 1 : 0;
    var to = Math.min(filtered.length, (state.page + 1) * D.page_size);
    var count = el("span", "count", filtered.length === T.length
      ? plural(T.length, "trajectory", "trajectories")
      : fmt(filtered.length) + " of " + fmt(T.length) + " trajectories match");
    box.appendChild(count);
    if (pages > 1) {
      var prev = el("button", null, "‹ previous");
      prev.type = "button";
      prev.disabled = state.page === 0;
      prev.addEventListener("click", function () { state.page--; renderPage(); scrollToList(); });
      var next = el("button", null, "next ›");
      next.type = "button";
      next.disabled = state.page >= pages - 1;
      next.addEventListener("click", function () { state.page++; renderPage(); scrollToList(); });
      box.appendChild(prev);
      box.appendChild(el("span", "pageno", fmt(from) + "–" + fmt(to) + " · page " + (state.page + 1) + " of " + fmt(pages)));
      box.appendChild(next);
    }
  }
  function scrollToList() { $("x-controls").scrollIntoView(); }

  function renderPage() {
    var list = $("x-list");
    list.textContent = "";
    var start = state.page * D.page_size;
    filtered.slice(start, start + D.page_size).forEach(function (t) { list.appendChild(card(t)); });
    if (!filtered.length) list.appendChild(el("p", "note", "No trajectory matches these filters."));
    pager($("x-pager"));
    pager($("x-pager2"));
  }

  function chip(text, cls) { return el("span", "chip " + (cls || ""), text); }

  function card(t) {
    var d = el("details", "traj");
    d.id = "traj-" + t.k;
    var s = el("summary");
    var head = el("div", "thead");
    head.appendChild(el("span", "tk", "T" + t.k));
    // A source without task ids is named by its trajectory id, and its trial counter is not shown.
    var hasTask = t.task !== null && t.task !== undefined;
    head.appendChild(el("span", null, hasTask ? "task " + t.task + (t.trial !== null && t.trial !== undefined ? " · trial " + t.trial : "") : t.id));
    if (t.variant) head.appendChild(el("span", null, t.variant));
    if (t.am) head.appendChild(el("span", "muted", t.am));
    if (t.reward !== null && t.reward !== undefined) head.appendChild(el("span", "reward " + rewardBucket(t.reward), "reward " + t.reward));
    head.appendChild(el("span", "muted", plural(t.nt !== undefined ? t.nt : turnsOf(t).length, "turn")));
    if (t.term) head.appendChild(el("span", "muted", "ended " + t.term));
    head.appendChild(el("span", t.nf ? "nf bad" : "nf", plural(t.nf, "finding")));
    s.appendChild(head);
    var tags = el("div", "ttags");
    // rc counts each rule's findings, the episode's own (no turn) with the turns'.
    t.rules.forEach(function (r, i) { tags.appendChild(chip(D.rules[r].id + " ×" + t.rc[i], "rule sev-" + D.rules[r].severity)); });
    t.causes.forEach(function (c) { tags.appendChild(chip("cause " + D.causes[c].rank, "cause")); });
    tags.appendChild(el("span", "src", (D.paths[t.p] || "?") + (t.l ? ":" + t.l : "")));
    s.appendChild(tags);
    s.appendChild(strip(t));
    d.appendChild(s);
    d.addEventListener("toggle", function () {
      if (d.open && !d.dataset.rendered) {
        d.dataset.rendered = "1";
        var body = el("div", "turns");
        if (t.err) body.appendChild(el("div", "terr", "episode error: " + t.err));
        if (t.ef) body.appendChild(findingList(t.ef, "tfind episode"));
        var wait = turnsReady ? null : body.appendChild(el("p", "note", "loading the turns…"));
        d.appendChild(body);
        afterTurns(function () {
          if (wait) body.removeChild(wait);
          turnsOf(t).forEach(function (u) { body.appendChild(turn(t, u)); });
        });
      }
    });
    return d;
  }

  function strip(t) {
    var box = el("div", "strip");
    var rule = state.rule && state.rule !== "*" ? ruleIndex(state.rule) : -1;
    if (!turnsReady && t.st !== undefined) {  // from the index until the turns are in
      t.st.split("").forEach(function (ch) {
        var low = ch.toLowerCase();
        box.appendChild(el("span", "cell role-" + (ROLE_OF[low] || "other") + (ch !== low ? " flagged" : "")));
      });
      return box;
    }
    turnsOf(t).forEach(function (u) {
      var cls = "cell role-" + D.ra[u.a][0];
      if (u.f) {
        cls += " flagged";
        if (rule >= 0 && u.f.some(function (f) { return f[0] === rule; })) cls += " hit";
      }
      var c = el("span", cls);
      c.title = "turn " + u.i + " · " + D.ra[u.a][0] + "/" + D.ra[u.a][1] + (u.f ? " · " + u.f.map(function (f) { return D.rules[f[0]].id; }).join(", ") : "");
      box.appendChild(c);
    });
    return box;
  }

  function marked(parent, text) {
    var q = state.q;
    var pieces = [];
    var last = 0, m;
    if (markRe) {
      markRe.lastIndex = 0;
      while ((m = markRe.exec(text)) !== null) {
        if (m[0] === "") { markRe.lastIndex++; continue; }
        pieces.push([text.slice(last, m.index), false]);
        pieces.push([m[0], true]);
        last = m.index + m[0].length;
      }
    }
    pieces.push([text.slice(last), false]);
    pieces.forEach(function (p) {
      if (p[1]) { parent.appendChild(el("mark", null, p[0])); return; }
      if (!q) { parent.appendChild(document.createTextNode(p[0])); return; }
      var low = p[0].toLowerCase(), pos = 0, at;
      while ((at = low.indexOf(q, pos)) >= 0) {
        parent.appendChild(document.createTextNode(p[0].slice(pos, at)));
        parent.appendChild(el("mark", "hit", p[0].slice(at, at + q.length)));
        pos = at + q.length;
      }
      parent.appendChild(document.createTextNode(p[0].slice(pos)));
    });
  }

  function textBlock(cls, clip) {
    var pre = el("pre", cls);
    marked(pre, clip.t);
    if (clip.t2 !== undefined) {
      pre.appendChild(el("span", "gap", " [… " + fmt(clip.n - clip.t.length - clip.t2.length) + " of " + fmt(clip.n) + " chars not shown …] "));
      marked(pre, clip.t2);
    }
    return pre;
  }

  function findingList(marks, cls) {
    var ul = el("ul", cls);
    marks.forEach(function (f) {
      var li = el("li", "sev-" + D.rules[f[0]].severity);
      li.appendChild(el("code", null, D.rules[f[0]].id));
      li.appendChild(document.createTextNode(" " + f[1]));
      ul.appendChild(li);
    });
    return ul;
  }

  function turn(t, u) {
    var box = el("div", "turn role-" + D.ra[u.a][0] + (u.f ? " flagged" : ""));
    box.id = "turn-" + t.k + "-" + u.i;
    var meta = el("div", "tmeta");
    meta.appendChild(el("span", "ti", "#" + u.i));
    meta.appendChild(el("span", "role", D.ra[u.a][0]));
    meta.appendChild(el("span", null, actorName(D.ra[u.a][1])));
    if (u.m) meta.appendChild(el("span", "muted", u.m));
    if (u.fr || u.frr) meta.appendChild(el("span", null, "finish " + (u.fr || u.frr) + (u.fr && u.frr ? " (" + u.frr + ")" : "")));
    if (u.tk) {
      var tk = [];
      if (u.tk[0] !== null) tk.push("in " + fmt(u.tk[0]));
      if (u.tk[1] !== null) tk.push("out " + fmt(u.tk[1]));
      if (u.tk[2] !== null) tk.push("reasoning " + fmt(u.tk[2]));
      meta.appendChild(el("span", null, tk.join(" · ") + " tokens"));
    }
    if (u.cap !== undefined) meta.appendChild(el("span", "muted", "cap " + fmt(u.cap)));
    if (u.hs !== undefined) meta.appendChild(el("span", u.hs >= 400 ? "bad" : null, "HTTP " + u.hs));
    if (u.tc) meta.appendChild(el("span", null, plural(u.tc.length, "tool call")));
    var up = u.p === undefined ? t.p : u.p, ul = u.l === undefined ? t.l : u.l;
    meta.appendChild(el("span", "src", (D.paths[up] || "?") + (ul ? ":" + ul : "")));
    var link = el("a", "permalink", "link");
    link.href = "#turn-" + t.k + "-" + u.i;
    meta.appendChild(link);
    box.appendChild(meta);
    if (u.f) box.appendChild(findingList(u.f, "tfind"));
    if (u.s !== undefined) {
      var sd = el("details", "sys");
      sd.appendChild(el("summary", null, "system prompt · " + fmt(u.sn) + " chars"));
      sd.appendChild(textBlock("content", { t: D.strings[u.s], n: u.sn }));
      box.appendChild(sd);
    }
    if (u.r) {
      var rd = el("details", "reasoning");
      rd.appendChild(el("summary", null, "reasoning · " + fmt(u.r.n || u.r.t.length) + " chars"));
      rd.appendChild(textBlock("content", u.r));
      box.appendChild(rd);
    }
    if (u.c) box.appendChild(textBlock("content", u.c));
    else if (u.s === undefined && !u.tc) box.appendChild(el("div", "empty", "(empty content)"));
    (u.tc || []).forEach(function (c) {
      var call = el("pre", "call");
      call.appendChild(el("b", null, "→ " + c[0]));
      var args = c[1];
      try { args = JSON.stringify(JSON.parse(c[1]), null, 1); } catch (e) { /* keep raw */ }
      call.appendChild(document.createTextNode(" " + args));
      box.appendChild(call);
    });
    if (u.e) box.appendChild(el("div", "terr", "error: " + u.e));
    return box;
  }

  function openTurn(k, i) {
    afterTurns(function () { openTurnNow(k, i); });
  }
  function openTurnNow(k, i) {
    var t = byK[k];
    if (!t) return;
    var pos = filtered.indexOf(t);
    if (pos < 0) { setControls({}); filtered = T; pos = T.indexOf(t); }
    state.page = Math.floor(pos / D.page_size);
    renderPage();
    var d = $("traj-" + k);
    if (!d) return;
    d.open = true;
    d.dispatchEvent(new Event("toggle"));
    var target = i === null ? d : $("turn-" + k + "-" + i);
    if (!target) return;
    var old = document.querySelector(".target");
    if (old) old.classList.remove("target");
    target.classList.add("target");
    target.scrollIntoView({ block: "start" });
  }

  function route() {
    var h = decodeURIComponent(location.hash || "");
    var m = /^#turn-(\d+)-(\d+)$/.exec(h);
    if (m) { openTurn(+m[1], +m[2]); return; }
    m = /^#traj-(\d+)$/.exec(h);
    if (m) { openTurn(+m[1], null); return; }
    m = /^#explore:(rule|cause)=(.+)$/.exec(h);
    if (m) {
      var s = {};
      s[m[1]] = m[2];
      setControls(s);
      apply();
      $("explorer").scrollIntoView();
    }
  }

  setupFilters();
  apply();
  window.addEventListener("hashchange", route);
  if (location.hash) route();
  // When the explorer became usable, in ms since navigation (benchmarks/report_load.py).
  $("explorer").dataset.readyMs = String(Math.round(performance.now()));
  }
})();
