"use strict";
// The report's view of a run (docs/ui.md): the calls arrive as compressed columns in #run-data; the page
// keeps a bounded number of DOM elements whatever the number of calls (a pool of rows over a virtual list),
// and every text from the run is set with textContent, never parsed as markup. No network, no globals.
(function () {
  var ROW_H = 24, OVERSCAN = 10, STOPPED = { halt: 1, halted: 1, aborted: 1, timeout: 1, rejected: 1,
    cancelled: 1, skipped: 1, fail: 1, error: 1, errored: 1 };
  var root = document.documentElement;

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function fmtMs(ms) {
    if (ms < 0) { return "-"; }
    if (ms < 1000) { return ms.toFixed(ms < 10 ? 1 : 0) + " ms"; }
    if (ms < 60000) { return (ms / 1000).toFixed(2) + " s"; }
    return (ms / 60000).toFixed(1) + " min";
  }
  function fmtCost(usd) { return usd > 0 ? "$" + usd.toFixed(usd < 0.01 ? 6 : 4) : "-"; }
  function fmtInt(n) { return n < 0 ? "-" : n.toLocaleString("en-US"); }

  function decode(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }

  function Model(d) {
    var n = d.id.length, i;
    this.d = d;
    this.n = n;
    this.parent = Int32Array.from(d.parent);
    this.kind = Int32Array.from(d.kind);
    this.name = Int32Array.from(d.name);
    this.status = Int32Array.from(d.status);
    this.model = Int32Array.from(d.model);
    this.reason = Int32Array.from(d.reason);
    // Tenths of a millisecond in the file; milliseconds here (-1: unknown).
    this.start = Float64Array.from(d.start, function (t) { return t < 0 ? -1 : t / 10; });
    this.dur = Float64Array.from(d.dur, function (t) { return t < 0 ? -1 : t / 10; });
    this.cost = Float64Array.from(d.cost);
    this.strings = d.strings;
    this.lower = d.strings.map(function (s) { return s.toLowerCase(); });
    this.stoppedStr = new Uint8Array(d.strings.length);
    for (i = 0; i < d.strings.length; i++) { if (STOPPED[d.strings[i]]) { this.stoppedStr[i] = 1; } }
    // Children in saved order (compressed sparse rows); nodes no root reaches become roots themselves.
    var count = new Int32Array(n + 1), p;
    for (i = 0; i < n; i++) { p = this.parent[i]; if (p >= 0 && p < n && p !== i) { count[p + 1]++; } }
    for (i = 0; i < n; i++) { count[i + 1] += count[i]; }
    this.childStart = count.slice();
    this.childList = new Int32Array(Math.max(count[n], 1));
    var fill = count.slice(0, n);
    for (i = 0; i < n; i++) { p = this.parent[i]; if (p >= 0 && p < n && p !== i) { this.childList[fill[p]++] = i; } }
    this.depth = new Int32Array(n).fill(-1);
    this.roots = [];
    var stack = [], order = [], j, c;
    var visit = function (r, self) {
      self.roots.push(r);
      self.depth[r] = 0;
      stack.push(r);
      while (stack.length) {
        var x = stack.pop();
        order.push(x);
        for (j = self.childStart[x]; j < self.childStart[x + 1]; j++) {
          c = self.childList[j];
          if (self.depth[c] < 0) { self.depth[c] = self.depth[x] + 1; stack.push(c); }
        }
      }
    };
    for (i = 0; i < n; i++) { p = this.parent[i]; if ((p < 0 || p >= n || p === i) && this.depth[i] < 0) { visit(i, this); } }
    for (i = 0; i < n; i++) { if (this.depth[i] < 0) { visit(i, this); } }  // parent cycles in a hand-made file
    // Halts and failures below each call, so a collapsed call still shows that something inside it stopped.
    this.stoppedBelow = new Int32Array(n);
    for (j = order.length - 1; j >= 0; j--) {
      c = order[j];
      p = this.parent[c];
      if (p >= 0 && p < n && p !== c && this.depth[p] === this.depth[c] - 1) {
        this.stoppedBelow[p] += this.stoppedBelow[c] + (this.stoppedStr[this.status[c]] === 1 ? 1 : 0);
      }
    }
    var end = 0;
    for (i = 0; i < n; i++) { if (this.start[i] >= 0) { end = Math.max(end, this.start[i] + Math.max(this.dur[i], 0)); } }
    this.span = Math.max(end, 1);
  }
  Model.prototype.str = function (k) { return k >= 0 ? this.strings[k] : ""; };
  Model.prototype.stopped = function (i) { return this.stoppedStr[this.status[i]] === 1; };
  Model.prototype.children = function (i) { return this.childStart[i + 1] - this.childStart[i]; };

  function View(m) {
    this.m = m;
    this.expanded = new Uint8Array(m.n);
    var deep = m.n <= 10000 ? 1e9 : 1;
    for (var i = 0; i < m.n; i++) { if (m.depth[i] < deep) { this.expanded[i] = 1; } }
    this.rows = new Int32Array(0);
    this.selected = -1;
    this.mode = "tree";
    this.sortKey = null;
    this.sortDir = 1;
    this.window = [0, m.span];
    this.pool = [];
    this.vp = $("viewport");
    this.spacer = $("spacer");
  }

  View.prototype.filters = function () {
    var q = $("q").value.trim().toLowerCase(), kind = $("f-kind").value, status = $("f-status").value;
    var model = $("f-model").value, minCost = parseFloat($("f-cost").value);
    return { q: q, kind: kind, status: status, model: model, minCost: isNaN(minCost) ? 0 : minCost,
      active: q !== "" || kind !== "" || status !== "" || model !== "" || minCost > 0 };
  };

  View.prototype.compute = function () {
    var m = this.m, f = this.filters(), out = [], i;
    if (!f.active && this.mode === "tree") {
      var seen = new Uint8Array(m.n), stack = [];
      for (i = m.roots.length - 1; i >= 0; i--) { stack.push(m.roots[i]); }
      while (stack.length) {
        var x = stack.pop();
        if (seen[x]) { continue; }
        seen[x] = 1;
        out.push(x);
        if (this.expanded[x]) {
          for (var j = m.childStart[x + 1] - 1; j >= m.childStart[x]; j--) { stack.push(m.childList[j]); }
        }
      }
    } else {
      var hit = null, ids = m.d.id;
      if (f.q) {
        hit = new Uint8Array(m.strings.length);
        for (i = 0; i < m.lower.length; i++) { if (m.lower[i].indexOf(f.q) >= 0) { hit[i] = 1; } }
      }
      var kind = f.kind === "" ? -2 : +f.kind, model = f.model === "" ? -2 : +f.model;
      var status = f.status === "" || f.status === "stopped" ? -2 : +f.status;
      for (i = 0; i < m.n; i++) {
        if (kind !== -2 && m.kind[i] !== kind) { continue; }
        if (model !== -2 && m.model[i] !== model) { continue; }
        if (status !== -2 && m.status[i] !== status) { continue; }
        if (f.status === "stopped" && !m.stopped(i)) { continue; }
        if (f.minCost > 0 && !(m.cost[i] >= f.minCost)) { continue; }
        if (hit && !(hit[m.name[i]] || (m.model[i] >= 0 && hit[m.model[i]]) ||
            (m.reason[i] >= 0 && hit[m.reason[i]]) || ids[i].toLowerCase().indexOf(f.q) >= 0)) { continue; }
        out.push(i);
      }
      if (this.sortKey) { this.sortRows(out); }
    }
    this.rows = Int32Array.from(out);
    this.tree = !f.active && this.mode === "tree";
    $("count").textContent = (f.active ? fmtInt(out.length) + " of " : "") + fmtInt(m.n) + " calls" +
      (!f.active && this.mode === "tree" ? " · " + fmtInt(out.length) + " rows shown" : "");
    this.spacer.style.height = (this.rows.length * ROW_H) + "px";
    this.render(true);
  };

  View.prototype.sortRows = function (out) {
    var m = this.m, key = this.sortKey, dir = this.sortDir, col;
    if (key === "name" || key === "kind" || key === "status" || key === "model") {
      col = m[key];
      out.sort(function (a, b) {
        var x = m.str(col[a]), y = m.str(col[b]);
        return (x < y ? -1 : x > y ? 1 : a - b) * dir;
      });
      return;
    }
    col = key === "tokens" ? Float64Array.from(m.d.tin) : m[key];
    out.sort(function (a, b) { return ((col[a] - col[b]) || (a - b)) * dir; });
  };

  View.prototype.makeRow = function () {
    var row = el("div", "row grid");
    var name = el("div", "nm"), tog = el("span", "tog"), label = el("span", "label"), badge = el("span", "badge");
    name.appendChild(tog);
    name.appendChild(label);
    name.appendChild(badge);
    row.appendChild(name);
    var cells = { name: name, tog: tog, label: label, badge: badge };
    ["kind", "st", "num dur", "num cost", "num tok", "model"].forEach(function (cls) {
      var cell = el("div", cls);
      row.appendChild(cell);
      cells[cls.split(" ").pop()] = cell;
    });
    var lane = el("div", "lane"), bar = el("div", "bar");
    lane.appendChild(bar);
    row.appendChild(lane);
    cells.bar = bar;
    row.cells = cells;
    row.idx = -2;
    this.vp.appendChild(row);
    return row;
  };

  View.prototype.render = function (force) {
    var m = this.m, top = this.vp.scrollTop, height = this.vp.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    var count = Math.ceil(height / ROW_H) + 2 * OVERSCAN;
    while (this.pool.length < count) { this.pool.push(this.makeRow()); }
    var w0 = this.window[0], w = Math.max(this.window[1] - this.window[0], 1e-9), tree = this.tree;
    for (var k = 0; k < this.pool.length; k++) {
      var row = this.pool[k], pos = first + k, i = pos < this.rows.length ? this.rows[pos] : -1;
      if (i < 0) { row.style.display = "none"; row.idx = -1; continue; }
      row.style.display = "";
      row.style.transform = "translateY(" + (pos * ROW_H) + "px)";
      var c = row.cells;
      if (force || row.idx !== i || row.tree !== tree) {
        row.idx = i;
        row.tree = tree;
        c.name.style.paddingLeft = (tree ? Math.min(m.depth[i], 40) * 14 + 4 : 4) + "px";
        c.tog.textContent = tree && m.children(i) ? (this.expanded[i] ? "\u25BE" : "\u25B8") : "";
        c.label.textContent = m.str(m.name[i]);
        var below = tree && !this.expanded[i] ? m.stoppedBelow[i] : 0;
        c.badge.textContent = below ? "\u26A0 " + fmtInt(below) : "";
        c.badge.title = below ? fmtInt(below) + " halted or failed calls inside" : "";
        c.name.title = m.str(m.name[i]);
        c.kind.textContent = m.str(m.kind[i]);
        c.st.textContent = m.str(m.status[i]);
        c.st.title = m.str(m.reason[i]);
        c.dur.textContent = fmtMs(m.dur[i]);
        c.cost.textContent = fmtCost(m.cost[i]);
        var tin = m.d.tin[i], tout = m.d.tout[i];
        c.tok.textContent = tin < 0 && tout < 0 ? "-" : fmtInt(tin) + " / " + fmtInt(tout);
        c.model.textContent = m.str(m.model[i]);
        row.classList.toggle("stopped", m.stopped(i));
      }
      row.classList.toggle("sel", i === this.selected);
      var s = m.start[i];
      if (s < 0) { c.bar.style.display = "none"; } else {
        var left = (s - w0) / w * 100, width = Math.max(m.dur[i], 0) / w * 100;
        c.bar.style.display = left > 100 || left + width < 0 ? "none" : "";
        c.bar.style.left = Math.max(left, 0) + "%";
        c.bar.style.width = Math.max(Math.min(width, 100 - Math.max(left, 0)), 0.3) + "%";
        c.bar.classList.toggle("stopped", m.stopped(i));
      }
    }
  };

  View.prototype.rowAt = function (target) {
    while (target && target !== this.vp) { if (target.idx !== undefined) { return target; } target = target.parentNode; }
    return null;
  };

  View.prototype.toggle = function (i) {
    this.expanded[i] = this.expanded[i] ? 0 : 1;
    this.compute();
  };

  View.prototype.reveal = function (i) {
    var m = this.m;
    for (var x = m.parent[i], guard = 0; x >= 0 && guard < m.n; x = m.parent[x], guard++) { this.expanded[x] = 1; }
    this.mode = "tree";
    ["q", "f-kind", "f-status", "f-model", "f-cost"].forEach(function (id) { $(id).value = ""; });
    this.syncModeButtons();
    this.compute();
    this.select(i, true);
  };

  View.prototype.select = function (i, scroll) {
    this.selected = i;
    if (scroll) {
      var pos = this.rows.indexOf(i);
      if (pos >= 0) {
        var top = pos * ROW_H, vp = this.vp;
        if (top < vp.scrollTop || top > vp.scrollTop + vp.clientHeight - ROW_H) {
          vp.scrollTop = Math.max(0, Math.round((top - vp.clientHeight / 3) / ROW_H) * ROW_H);  // whole rows
        }
      }
    }
    this.render(false);
    showDetail(this, i);
  };

  View.prototype.syncModeButtons = function () {
    $("mode-tree").classList.toggle("on", this.mode === "tree");
    $("mode-list").classList.toggle("on", this.mode === "list");
  };

  function kv(table, label, value, cls) {
    if (value === undefined || value === null || value === "") { return; }
    var tr = el("tr"), th = el("th", "", label), td = el("td", cls || "");
    if (value instanceof Node) { td.appendChild(value); } else { td.textContent = String(value); }
    tr.appendChild(th);
    tr.appendChild(td);
    table.appendChild(tr);
  }

  function callLink(view, i) {
    var b = el("button", "linkish", view.m.str(view.m.name[i]) + " (" + view.m.d.id[i] + ")");
    b.type = "button";
    b.addEventListener("click", function () { view.reveal(i); });
    return b;
  }

  function pre(box, title, value) {
    box.appendChild(el("h4", "", title));
    var text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    box.appendChild(el("pre", "", text));
  }

  function showDetail(view, i) {
    var m = view.m, box = $("detail");
    box.textContent = "";
    if (i < 0) { box.appendChild(el("p", "empty", "Select a call to see its details.")); return; }
    box.appendChild(el("h3", "", m.str(m.name[i])));
    var t = el("table");
    kv(t, "id", m.d.id[i]);
    kv(t, "kind", m.str(m.kind[i]));
    kv(t, "status", m.str(m.status[i]), m.stopped(i) ? "stoptext" : "");
    kv(t, "reason", m.str(m.reason[i]), "stoptext");
    kv(t, "model", m.str(m.model[i]));
    if (m.start[i] >= 0) { kv(t, "started", new Date(m.d.t0 + m.start[i]).toISOString() + " (+" + fmtMs(m.start[i]) + ")"); }
    kv(t, "duration", fmtMs(m.dur[i]));
    kv(t, "cost", m.cost[i] > 0 ? "$" + m.cost[i].toPrecision(6).replace(/0+$/, "").replace(/\.$/, "") : "$0");
    if (m.d.tin[i] >= 0 || m.d.tout[i] >= 0) { kv(t, "tokens in / out", fmtInt(m.d.tin[i]) + " / " + fmtInt(m.d.tout[i])); }
    if (m.d.retries[i] > 0) { kv(t, "retries", m.d.retries[i]); }
    if (m.parent[i] >= 0) { kv(t, "parent", callLink(view, m.parent[i])); }
    var more = m.d.more_parents[String(i)];
    if (more) {
      var list = el("div");
      more.forEach(function (p) { list.appendChild(callLink(view, p)); list.appendChild(el("br")); });
      kv(t, "also after", list);
    }
    if (m.children(i)) { kv(t, "children", fmtInt(m.children(i))); }
    box.appendChild(t);
    var show = el("button", "", "Show in the call tree");
    show.type = "button";
    show.addEventListener("click", function () { view.reveal(i); });
    box.appendChild(show);
    var detail = m.d.detail[String(i)];
    if (detail) {
      var meta = detail.metadata, rest = {};
      if (detail.error_message) { pre(box, "error", detail.error_message); }
      if (meta && typeof meta === "object") {
        var shown = {};
        Object.keys(meta).forEach(function (k) { if (k !== "content_input" && k !== "content_output") { shown[k] = meta[k]; } });
        if (meta.content_input !== undefined) { pre(box, "input (captured)", meta.content_input); }
        if (meta.content_output !== undefined) { pre(box, "output (captured)", meta.content_output); }
        if (Object.keys(shown).length) { pre(box, "metadata", shown); }
      }
      Object.keys(detail).forEach(function (k) { if (k !== "metadata" && k !== "error_message") { rest[k] = detail[k]; } });
      Object.keys(rest).forEach(function (k) { pre(box, k, rest[k]); });
    }
  }

  function drawOverview(view) {
    var m = view.m, canvas = $("overview"), w = canvas.clientWidth || 800, h = canvas.clientHeight || 56;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
    var g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    var bins = new Float64Array(w), stops = new Float64Array(w), max = 1, i, b;
    for (i = 0; i < m.n; i++) {
      if (m.start[i] < 0) { continue; }
      b = Math.min(w - 1, Math.floor(m.start[i] / m.span * w));
      bins[b]++;
      if (m.stopped(i)) { stops[b]++; }
    }
    for (b = 0; b < w; b++) { max = Math.max(max, bins[b]); }
    for (b = 0; b < w; b++) {
      var bh = bins[b] ? Math.max(2, Math.sqrt(bins[b] / max) * (h - 6)) : 0;
      g.fillStyle = "#4a78c2";
      g.fillRect(b, h - bh, 1, bh);
      if (stops[b]) { g.fillStyle = "#c0392b"; g.fillRect(b, 0, 1, 5); }
    }
    var x0 = view.window[0] / m.span * w, x1 = view.window[1] / m.span * w;
    if (x0 > 0 || x1 < w) {
      g.fillStyle = "rgba(28,36,48,0.12)";
      g.fillRect(0, 0, x0, h);
      g.fillRect(x1, 0, w - x1, h);
    }
  }

  function options(select, entries) {
    entries.forEach(function (e) { var o = el("option", "", e[1]); o.value = e[0]; select.appendChild(o); });
  }

  function init(d) {
    var m = new Model(d), view = new View(m), used = function (col) {
      var seen = {}, out = [];
      for (var i = 0; i < m.n; i++) { var k = col[i]; if (k >= 0 && !seen[k]) { seen[k] = 1; out.push(k); } }
      return out.sort(function (a, b) { return m.strings[a] < m.strings[b] ? -1 : 1; })
        .map(function (k) { return [String(k), m.strings[k]]; });
    };
    options($("f-kind"), used(m.kind));
    options($("f-status"), used(m.status));
    options($("f-model"), used(m.model));
    var timer = 0, recompute = function () { clearTimeout(timer); timer = setTimeout(function () { view.compute(); }, 120); };
    ["q", "f-cost"].forEach(function (id) { $(id).addEventListener("input", recompute); });
    ["f-kind", "f-status", "f-model"].forEach(function (id) { $(id).addEventListener("change", function () { view.compute(); }); });
    $("q").addEventListener("keydown", function (e) {
      if (e.key === "Enter" && view.rows.length) { view.select(view.rows[0], true); }
    });
    $("clear").addEventListener("click", function () {
      ["q", "f-kind", "f-status", "f-model", "f-cost"].forEach(function (id) { $(id).value = ""; });
      view.compute();
    });
    $("mode-tree").addEventListener("click", function () { view.mode = "tree"; view.sortKey = null; syncSort(); view.syncModeButtons(); view.compute(); });
    $("mode-list").addEventListener("click", function () { view.mode = "list"; view.syncModeButtons(); view.compute(); });
    $("expand").addEventListener("click", function () { view.expanded.fill(1); view.compute(); });
    $("collapse").addEventListener("click", function () {
      view.expanded.fill(0);
      m.roots.forEach(function (r) { view.expanded[r] = 1; });
      view.compute();
    });
    var heads = document.querySelectorAll(".head [data-sort]");
    function syncSort() {
      Array.prototype.forEach.call(heads, function (h) {
        h.classList.remove("asc", "desc");
        if (h.getAttribute("data-sort") === view.sortKey) { h.classList.add(view.sortDir > 0 ? "asc" : "desc"); }
      });
    }
    Array.prototype.forEach.call(heads, function (h) {
      h.addEventListener("click", function () {
        var key = h.getAttribute("data-sort");
        view.sortDir = view.sortKey === key ? -view.sortDir : (key === "name" || key === "kind" || key === "status" || key === "model" || key === "start" ? 1 : -1);
        view.sortKey = key;
        view.mode = "list";
        view.syncModeButtons();
        syncSort();
        view.compute();
      });
    });
    view.vp.addEventListener("scroll", function () { view.render(false); });
    view.vp.addEventListener("click", function (e) {
      var row = view.rowAt(e.target);
      if (!row || row.idx < 0) { return; }
      if (e.target === row.cells.tog && m.children(row.idx)) { view.toggle(row.idx); return; }
      view.select(row.idx, false);
    });
    view.vp.addEventListener("dblclick", function (e) {
      var row = view.rowAt(e.target);
      if (row && row.idx >= 0 && m.children(row.idx)) { view.toggle(row.idx); }
    });
    view.vp.addEventListener("keydown", function (e) {
      var pos = view.rows.indexOf(view.selected);
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        pos = Math.max(0, Math.min(view.rows.length - 1, pos + (e.key === "ArrowDown" ? 1 : -1)));
        if (view.rows.length) { view.select(view.rows[pos], true); }
      } else if (e.key === "Enter" && view.selected >= 0 && m.children(view.selected)) {
        view.toggle(view.selected);
      }
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-call]"), function (b) {
      b.addEventListener("click", function () { view.reveal(+b.getAttribute("data-call")); });
    });
    var canvas = $("overview"), dragFrom = null;
    function at(e) { var r = canvas.getBoundingClientRect(); return Math.max(0, Math.min(1, (e.clientX - r.left) / r.width)) * m.span; }
    canvas.addEventListener("mousedown", function (e) { dragFrom = at(e); });
    window.addEventListener("mouseup", function (e) {
      if (dragFrom === null) { return; }
      var to = at(e), lo = Math.min(dragFrom, to), hi = Math.max(dragFrom, to);
      dragFrom = null;
      view.window = hi - lo > m.span / 2000 ? [lo, hi] : [0, m.span];
      drawOverview(view);
      view.render(false);
    });
    canvas.addEventListener("dblclick", function () { view.window = [0, m.span]; drawOverview(view); view.render(false); });
    window.addEventListener("resize", function () { drawOverview(view); view.render(false); });
    drawOverview(view);
    view.syncModeButtons();
    view.compute();
    showDetail(view, -1);
    $("status-line").textContent = "";
    root.setAttribute("data-calls", String(m.n));
    root.setAttribute("data-ready", "1");
  }

  var started = typeof performance !== "undefined" ? performance.now() : 0;
  decode($("run-data").textContent.trim()).then(function (d) {
    init(d);
    root.setAttribute("data-load-ms", String(Math.round(performance.now() - started)));
  }).catch(function (err) {
    var line = $("status-line");
    line.className = "error";
    line.textContent = "This report could not be read: " + (err && err.message ? err.message : String(err)) +
      " (it needs a browser with DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later).";
    root.setAttribute("data-ready", "error");
  });
})();
