"use strict";
// The dashboard of `chainwarden serve` (docs/ui.md): reads the server's JSON API, draws runs, spend charts and a
// live DAG. Every text from the data is set with textContent; nothing is ever written back (GET only).
(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var root = document.documentElement;
  var state = { tab: "runs", runs: [], selected: null, graph: null, events: null, pending: 0 };

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    return node;
  }
  function money(usd, credits) {
    var parts = [];
    if (usd !== null && usd !== undefined) { parts.push("$" + Number(usd).toFixed(usd < 0.01 ? 6 : 4)); }
    if (credits !== null && credits !== undefined) { parts.push(Number(credits).toLocaleString("en-US") + " cr"); }
    return parts.join(" / ") || "-";
  }
  function when(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : "-"; }
  function secs(s) { return s === null || s === undefined ? "-" : s < 60 ? s.toFixed(2) + " s" : (s / 60).toFixed(1) + " min"; }
  function query() {
    var form = new FormData($("filters")), params = new URLSearchParams();
    form.forEach(function (v, k) { if (String(v).trim()) { params.set(k, String(v).trim()); } });
    return params.toString();
  }
  function busy(delta) {
    state.pending += delta;
    root.setAttribute("data-busy", state.pending > 0 ? "1" : "0");
  }
  function getJSON(url) {
    busy(1);
    return fetch(url, { headers: { "Accept": "application/json" } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { throw new Error(body && body.error ? body.error : r.statusText); }
        return body;
      });
    }).finally(function () { busy(-1); });
  }
  function fill(select, values) {
    var keep = select.value;
    while (select.options.length > 1) { select.remove(1); }
    values.forEach(function (v) { var o = el("option", "", v); o.value = v; select.appendChild(o); });
    select.value = keep;
  }
  function datalist(list, values) {
    list.textContent = "";
    values.forEach(function (v) { var o = el("option"); o.value = v; list.appendChild(o); });
  }
  function kvTable(rows) {
    var t = el("table", "kv");
    rows.forEach(function (r) {
      if (r[1] === null || r[1] === undefined || r[1] === "") { return; }
      var tr = el("tr");
      tr.appendChild(el("th", "", r[0]));
      tr.appendChild(el("td", r[2] || "", r[1]));
      t.appendChild(tr);
    });
    return t;
  }
  function miniTable(head, rows) {
    var t = el("table", "mini"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", "", h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) { row.appendChild(el("td", "", c === null || c === undefined ? "-" : c)); });
      t.appendChild(row);
    });
    return t;
  }

  // -- runs -------------------------------------------------------------------------------------------------
  function loadRuns() {
    return getJSON("/api/runs?" + query()).then(function (data) {
      state.runs = data.runs;
      fill($("filters").elements.account, data.accounts);
      datalist($("users"), data.users);
      datalist($("tags"), data.tags);
      $("runs-count").textContent = data.matched + " of " + data.total + " runs" +
        (data.matched > data.runs.length ? " (the latest " + data.runs.length + " shown)" : "");
      var body = $("runs").tBodies[0];
      body.textContent = "";
      data.runs.forEach(function (r) {
        var tr = el("tr");
        tr.setAttribute("data-run", r.origin + ":" + r.run_id + ":" + r.attempt);
        [r.run_id + (r.attempt ? " #" + r.attempt : ""), r.graph_id, r.status, when(r.started_at), secs(r.duration_s),
          r.account || "-", r.user_id || "-", r.session_id || "-", r.tags.join(", ")].forEach(function (c, i) {
          tr.appendChild(el("td", i === 2 ? "status-" + r.status : "", c));
        });
        tr.appendChild(el("td", "num", money(r.cost_usd, r.credits)));
        tr.appendChild(el("td", "num", r.tokens_in === null ? "-" : r.tokens_in + " / " + r.tokens_out));
        tr.addEventListener("click", function () { selectRun(r, tr); });
        body.appendChild(tr);
      });
    });
  }

  function selectRun(r, tr) {
    Array.prototype.forEach.call($("runs").querySelectorAll("tr.sel"), function (x) { x.classList.remove("sel"); });
    tr.classList.add("sel");
    var box = $("run-detail");
    box.textContent = "";
    box.appendChild(el("h2", "", r.run_id));
    box.appendChild(kvTable([["origin", r.origin], ["graph", r.graph_id], ["status", r.status, "status-" + r.status],
      ["started", when(r.started_at)], ["ended", when(r.ended_at)], ["duration", secs(r.duration_s)],
      ["account", r.account], ["user", r.user_id], ["session", r.session_id], ["tags", r.tags.join(", ")],
      ["model", r.model], ["cost", money(r.cost_usd, r.credits)], ["calls", r.calls], ["receipts", r.receipts]]));
    var url = r.origin === "ledger" ? "/api/ledger/runs/" + encodeURIComponent(r.run_id)
      : "/api/files/" + r.run_id.split("/").map(encodeURIComponent).join("/");
    getJSON(url).then(function (d) {
      if (d.origin === "ledger") {
        box.appendChild(el("h2", "", "Attempts"));
        box.appendChild(miniTable(["attempt", "status", "error", "credits"],
          d.attempts.map(function (a) { return [a.attempt, a.status, a.error, a.credits]; })));
        box.appendChild(el("h2", "", "Receipts"));
        box.appendChild(miniTable(["reference", "model", "tokens", "credits", "USD"], d.receipts.map(function (x) {
          return [x.source_reference, x.model, x.input_tokens + " / " + x.output_tokens, x.credits, x.cost_usd];
        })));
        if (d.context && d.context.attributes) {
          box.appendChild(el("h2", "", "Attributes"));
          box.appendChild(el("pre", "", JSON.stringify(d.context.attributes, null, 2)));
        }
        return;
      }
      var link = el("a", "", "Open the full report");
      link.href = "/report/" + r.run_id.split("/").map(encodeURIComponent).join("/");
      link.target = "_blank";
      link.rel = "noopener";
      box.appendChild(link);
      box.appendChild(el("h2", "", "Halts and failures"));
      box.appendChild(miniTable(["call", "status", "reason"], d.stopped.map(function (c) { return [c.name, c.status, c.reason]; })));
      box.appendChild(el("h2", "", "Events"));
      box.appendChild(miniTable(["event", "decision", "reason"], d.events.map(function (e) {
        return [e.event_type, e.decision || e.severity, e.reason || e.detection_mode];
      })));
      box.appendChild(el("h2", "", "Calls (first 200)"));
      box.appendChild(miniTable(["call", "kind", "status", "ms", "USD"], d.calls.map(function (c) {
        return [c.name, c.kind, c.status, c.duration_ms === null ? "-" : c.duration_ms.toFixed(1), c.cost_usd];
      })));
    }).catch(function (err) { box.appendChild(el("p", "status-error", String(err.message || err))); });
  }

  // -- spend ------------------------------------------------------------------------------------------------
  function barChart(box, rows, vertical) {
    box.textContent = "";
    if (!rows.length) { box.appendChild(el("p", "muted", "no spend for these filters")); return; }
    var max = Math.max.apply(null, rows.map(function (r) { return r.usd || r.credits; })) || 1;
    var value = function (r) { return r.usd || r.credits; };
    var w = Math.max(box.clientWidth, 320), s;
    if (vertical) {
      var h = 180, step = Math.max(Math.min((w - 40) / rows.length, 60), 6);
      s = svg("svg", { viewBox: "0 0 " + w + " " + (h + 40), role: "img" });
      s.appendChild(svg("line", { "class": "axis", x1: 30, y1: h, x2: w, y2: h }));
      rows.forEach(function (r, i) {
        var bh = value(r) / max * (h - 10), x = 30 + i * step;
        var bar = svg("rect", { "class": "bar", x: x + 1, y: h - bh, width: Math.max(step - 2, 1), height: bh });
        var tip = svg("title"); tip.textContent = r.key + ": " + money(r.usd, r.credits); bar.appendChild(tip);
        s.appendChild(bar);
        if (rows.length <= 31 || i % Math.ceil(rows.length / 31) === 0) {
          var t = svg("text", { x: x + 2, y: h + 14 }); t.textContent = String(r.key).slice(5); s.appendChild(t);
        }
      });
    } else {
      var rowH = 22, label = 170;
      s = svg("svg", { viewBox: "0 0 " + w + " " + (rows.length * rowH + 6), role: "img" });
      rows.slice(0, 40).forEach(function (r, i) {
        var y = i * rowH + 3, bw = value(r) / max * (w - label - 140);
        var name = svg("text", { x: 0, y: y + 14 }); name.textContent = String(r.key).slice(0, 28); s.appendChild(name);
        s.appendChild(svg("rect", { "class": "bar", x: label, y: y + 3, width: Math.max(bw, 1), height: rowH - 8 }));
        var v = svg("text", { x: label + bw + 6, y: y + 14 }); v.textContent = money(r.usd, r.credits); s.appendChild(v);
      });
    }
    box.appendChild(s);
  }

  function loadSpend() {
    var q = query();
    return Promise.all(["account", "model", "day"].map(function (by) {
      return getJSON("/api/spend?by=" + by + (q ? "&" + q : "")).then(function (d) { barChart($("by-" + by), d.rows, by === "day"); });
    }));
  }

  // -- DAGs -------------------------------------------------------------------------------------------------
  // The core's DAG states, in its order, as the server wrote them into the page.
  var STATES = (root.getAttribute("data-states") || "").split(" ").filter(Boolean);

  function loadGraphs() {
    return getJSON("/api/graphs").then(function (d) {
      var list = $("graphs");
      list.textContent = "";
      if (d.error) { list.appendChild(el("li", "muted", d.error)); }
      d.graphs.forEach(function (id) {
        var li = el("li"), b = el("button", "", id);
        b.type = "button";
        b.setAttribute("data-graph", id);
        b.addEventListener("click", function () { watch(id); });
        li.appendChild(b);
        list.appendChild(li);
      });
    });
  }

  function layout(g) {
    var index = {}, parents = {}, children = {}, layer = {}, i;
    g.nodes.forEach(function (n, k) { index[n.id] = k; parents[n.id] = []; children[n.id] = []; layer[n.id] = 0; });
    g.edges.forEach(function (e) {
      if (index[e[0]] === undefined || index[e[1]] === undefined || e[0] === e[1]) { return; }
      parents[e[1]].push(e[0]); children[e[0]].push(e[1]);
    });
    var indeg = {}, ready = [];
    g.nodes.forEach(function (n) { indeg[n.id] = parents[n.id].length; if (!indeg[n.id]) { ready.push(n.id); } });
    while (ready.length) {
      var x = ready.shift();
      children[x].forEach(function (c) { layer[c] = Math.max(layer[c], layer[x] + 1); if (--indeg[c] === 0) { ready.push(c); } });
    }
    var slots = {}, pos = {};
    for (i = 0; i < g.nodes.length; i++) {
      var id = g.nodes[i].id, l = layer[id];
      slots[l] = (slots[l] || 0) + 1;
      pos[id] = [slots[l] - 1, l];
    }
    return pos;
  }

  function drawGraph(g) {
    var box = $("dag"), W = 150, H = 40, GX = 22, GY = 44, P = 12;
    state.graph = g;
    $("dag-title").textContent = g.graph_id;
    var counts = {};
    g.nodes.forEach(function (n) { counts[n.state] = (counts[n.state] || 0) + 1; });
    $("dag-status").textContent = "version " + g.version + " · " + g.nodes.length + " nodes · " +
      STATES.filter(function (s) { return counts[s]; }).map(function (s) { return counts[s] + " " + s; }).join(", ") +
      " · updated " + new Date().toLocaleTimeString();
    box.setAttribute("data-version", String(g.version));
    box.textContent = "";
    if (g.nodes.length > 3000) { box.appendChild(el("p", "muted", "too many nodes to draw; the counts above are live")); return; }
    var pos = layout(g), maxX = 0, maxY = 0;
    Object.keys(pos).forEach(function (k) { maxX = Math.max(maxX, pos[k][0]); maxY = Math.max(maxY, pos[k][1]); });
    var width = P * 2 + (maxX + 1) * (W + GX), height = P * 2 + (maxY + 1) * (H + GY);
    var s = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img" });
    var xy = function (id) { return [P + pos[id][0] * (W + GX), P + pos[id][1] * (H + GY)]; };
    g.edges.forEach(function (e) {
      if (!pos[e[0]] || !pos[e[1]]) { return; }
      var a = xy(e[0]), b = xy(e[1]), sx = a[0] + W / 2, sy = a[1] + H, tx = b[0] + W / 2, ty = b[1], my = (sy + ty) / 2;
      s.appendChild(svg("path", { "class": "dag-edge", d: "M " + sx + " " + sy + " C " + sx + " " + my + ", " + tx + " " + my + ", " + tx + " " + ty }));
    });
    g.nodes.forEach(function (n) {
      var p = xy(n.id), grp = svg("g", { "class": "dag-node", transform: "translate(" + p[0] + "," + p[1] + ")" });
      grp.setAttribute("data-id", n.id);
      grp.setAttribute("data-state", n.state);
      var tip = svg("title");
      tip.textContent = n.id + " · " + n.type + " · " + n.state + (n.error ? " · " + n.error : "") + (n.worker ? " · " + n.worker : "");
      grp.appendChild(tip);
      grp.appendChild(svg("rect", { width: W, height: H, rx: 6 }));
      var t1 = svg("text", { x: 7, y: 16 }); t1.textContent = String(n.name).slice(0, 22); grp.appendChild(t1);
      var t2 = svg("text", { x: 7, y: 31 }); t2.textContent = n.state + " · " + String(n.id).slice(0, 12); grp.appendChild(t2);
      s.appendChild(grp);
    });
    box.appendChild(s);
  }

  function watch(id) {
    if (state.events) { state.events.close(); }
    Array.prototype.forEach.call($("graphs").querySelectorAll("button"), function (b) {
      b.classList.toggle("on", b.getAttribute("data-graph") === id);
    });
    $("dag-status").textContent = "connecting…";
    var source = new EventSource("/api/graphs/" + encodeURIComponent(id) + "/events");
    state.events = source;
    source.addEventListener("graph", function (ev) { drawGraph(JSON.parse(ev.data)); });
    source.addEventListener("problem", function (ev) { $("dag-status").textContent = JSON.parse(ev.data).error; source.close(); });
    source.onerror = function () { $("dag-status").textContent = "disconnected; retrying…"; };
  }

  function legend() {
    var box = $("dag-legend");
    STATES.forEach(function (s) {
      var span = el("span"), swatch = el("i");
      swatch.className = "sw-" + s;
      span.appendChild(swatch);
      span.appendChild(document.createTextNode(s));
      box.appendChild(span);
    });
  }

  // -- wiring -----------------------------------------------------------------------------------------------
  function refresh() {
    if (state.tab === "runs") { return loadRuns(); }
    if (state.tab === "spend") { return loadSpend(); }
    return loadGraphs();
  }
  function show(tab) {
    state.tab = tab;
    ["runs", "spend", "dags"].forEach(function (t) { $("tab-" + t).hidden = t !== tab; });
    Array.prototype.forEach.call(document.querySelectorAll("nav button"), function (b) {
      b.classList.toggle("on", b.getAttribute("data-tab") === tab);
    });
    root.setAttribute("data-tab", tab);
    return refresh();
  }
  Array.prototype.forEach.call(document.querySelectorAll("nav button"), function (b) {
    b.addEventListener("click", function () { show(b.getAttribute("data-tab")); });
  });
  var timer = 0;
  $("filters").addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refresh, 250); });
  $("filters").addEventListener("reset", function () { setTimeout(refresh, 0); });
  $("filters").addEventListener("submit", function (e) { e.preventDefault(); refresh(); });
  legend();
  getJSON("/api/sources").then(function (s) {
    $("sources").textContent = [s.ledger && "ledger: " + s.ledger, s.store && "store: " + s.store,
      s.runs && "runs: " + s.runs].filter(Boolean).join(" · ");
  });
  var hash = (location.hash || "").replace("#", "");
  show(["runs", "spend", "dags"].indexOf(hash) >= 0 ? hash : "runs").then(function () {
    root.setAttribute("data-ready", "1");
  }, function (err) {
    $("runs-count").textContent = "could not load: " + (err.message || err);
    root.setAttribute("data-ready", "error");
  });
  setInterval(function () { if (state.tab !== "dags" && !document.hidden) { refresh(); } }, 10000);
})();
