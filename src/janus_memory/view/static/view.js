/* janus view: draws a run folder's data (the JSON block #janus-data, written by janus_memory/view/data.py).
   Every text from the data reaches the page through textContent or a property (title, value): never innerHTML. */
(function () {
  "use strict";
  var T0 = performance.now();
  var D = null; // the run data: JSON in the page, or gzip + base64 for a large run (view/page.py)
  var F = {CORRECT: 1, TRIGGERED: 2, DEPLOYED: 4, ROLLED_BACK: 8, INJECTED: 16, WARMUP: 32, CHANGED: 64, REJECTED: 128};
  var MARK_W = 16; // px per timeline mark (14 px mark + 2 px gap, view.css); a row holds what fits, in tens
  var LABEL_W = 150; // px of a lane's method label (view.css)
  var MAX_OPEN = 3; // steps that matter opened on load (the rest are listed closed, drawn when opened)
  var MAX_LISTED = 60; // steps that matter listed at all (the timeline shows every step)
  var COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"];
  var REASONS = {
    warmup: "warm-up step: the candidate is deployed without a comparison",
    not_triggered: "the trigger did not fire: the candidate is deployed without a comparison",
    trivially_equal: "old and candidate memory are trivially equal: deployed without a comparison",
    new_ge_old: "the candidate scored at least as well as the old memory on the evaluation set: deployed",
    old_better: "the old memory scored better on the evaluation set: the candidate is rolled back",
    early_stop_new_ge_old: "early stop: the candidate cannot lose any more: deployed",
    early_stop_old_better: "early stop: the candidate cannot catch up any more: rolled back",
    sign_test_new_ge_old: "paired sign test: the candidate is not significantly worse: deployed",
    sign_test_old_better: "paired sign test: the old memory is significantly better: rolled back",
    sign_test_not_significant: "paired sign test: no significant difference: deployed",
    no_controller: "no controller: every candidate is deployed",
    sprt_new_not_worse: "sequential test: the candidate is not worse than the old memory on the tasks they disagree on: deployed",
    sprt_new_worse: "sequential test: the candidate is worse than the old memory on the tasks they disagree on: rolled back",
    sprt_truncated_new_ge_old: "sequential test stopped at its cap: the candidate did at least as well (with the lead the preset asks for): deployed",
    sprt_truncated_old_better: "sequential test stopped at its cap: the old memory did better: rolled back",
    sprt_truncated_no_lead: "sequential test stopped at its cap without the lead the preset asks for (a tie is not enough): rolled back",
    indeterminate_candidate: "every answer of the candidate was indeterminate (no outcome on any task asked): rolled back",
    near_copy: "a rewording of the old memory: checked on a few tasks, the old memory's other outcomes kept"
  };
  var state = {run: 0, method: null, step: null, charts: [], selected: null, perRow: 100};

  // ------------------------------------------------------------------ DOM helpers (text only)
  function el(tag, opts, kids) {
    var e = document.createElement(tag);
    if (opts) {
      for (var k in opts) {
        if (!Object.prototype.hasOwnProperty.call(opts, k) || opts[k] === undefined || opts[k] === null) continue;
        if (k === "text") e.textContent = String(opts[k]);
        else if (k === "cls") e.className = opts[k];
        else if (k === "title") e.title = String(opts[k]);
        else if (k === "on") { for (var ev in opts.on) e.addEventListener(ev, opts.on[ev]); }
        else if (k === "data") { for (var dk in opts.data) e.dataset[dk] = String(opts.data[dk]); }
        else e.setAttribute(k, String(opts[k]));
      }
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function pct(x, d) { return x === null || x === undefined ? "—" : (100 * x).toFixed(d === undefined ? 1 : d); }
  function num(x) { return x === null || x === undefined ? "—" : Number(x).toLocaleString("en-US"); }
  function acc(a) { // [k, n, lo, hi]
    if (!a) return "—";
    return pct(a[0] / a[1]) + "% (" + a[0] + "/" + a[1] + ") [" + pct(a[2]) + ", " + pct(a[3]) + "]";
  }
  function table(header, rows, cls) { // the table inside a box that keeps it within its card (view.css .tw)
    return el("div", {cls: "tw"}, [el("table", {cls: cls || "grid"}, [
      el("thead", null, [el("tr", null, header.map(function (h) { return el("th", {text: h}); }))]),
      el("tbody", null, rows.map(function (r) {
        return el("tr", null, r.map(function (c) { return c instanceof Node ? el("td", null, [c]) : el("td", {text: c}); }));
      }))
    ])]);
  }
  function section(title, id, kids) {
    return el("section", {id: id, cls: "card"}, [el("h2", {text: title})].concat(kids));
  }

  // ------------------------------------------------------------------ page
  function render() {
    state.charts.forEach(function (c) { c.destroy(); });
    state.charts = [];
    state.selected = null;
    var app = clear(document.getElementById("app"));
    var runs = D.runs;
    var nav = el("nav", {id: "runs"}, runs.length > 1 ? runs.map(function (r, i) {
      return el("button", {text: r.name, cls: i === state.run ? "tab on" : "tab", title: r.path,
                           on: {click: function () { go({run: i}); }}});
    }) : []);
    app.appendChild(storyCard(runs)); // first: what happened, for every run on the page; the tables follow
    app.appendChild(nav);
    (D.unfinished || []).forEach(function (u) { app.appendChild(el("p", {cls: "note", text: "not shown: " + u})); });
    if (D.compare && (runs.length > 1 || D.compare.some(function (g) { return g.paired.length; }))) app.appendChild(compare());
    var run = runs[state.run];
    app.appendChild(headerCard(run));
    app.appendChild(accuracyCard(run));
    app.appendChild(timelineCard(run));
    app.appendChild(el("section", {id: "detail", cls: "card hidden"}));
    app.appendChild(keyStepsCard(run));
    var charts = chartsCard(run);
    app.appendChild(charts.box);
    charts.draw();  // in the page: each chart takes its card's width
    app.appendChild(costCard(run));
    if (state.method !== null && state.step !== null) openStep(state.method, state.step, false);
  }

  // ------------------------------------------------------------------ the story: the decisions that mattered
  function storyCard(runs) {
    var kids = [];
    runs.forEach(function (run, ri) {
      var st = run.story;
      if (!st) return;
      var box = el("div", {cls: "story-run", data: {run: ri}});
      if (runs.length > 1) {
        var h = run.header;
        box.appendChild(el("h3", {text: "Run " + run.name + " (" + [h.dataset_name, h.updater, h.backend === "fake" ?
          "scripted backend" : h.model || h.backend].filter(Boolean).join(", ") + ")"}));
      }
      if (st.note) box.appendChild(el("p", {cls: "note scripted", text: st.note}));
      if (run.models_warning) box.appendChild(el("p", {cls: "note warn", text: "warning: " + run.models_warning}));
      st.pairs.forEach(function (p) {
        var who = [p.blind ? p.blind + " (blind: deploys every candidate)" : null,
                   p.janus ? p.janus + " (Janus)" : null].filter(Boolean).join(" vs ");
        box.appendChild(el("p", {cls: "pair"}, [el("b", {text: who}), " · held-out test, final memories: " +
                                                 p.held_out]));
        if (p.none) box.appendChild(el("p", {cls: "none", text: p.none}));
        if (p.rows.length) {
          var head = ["Step", "What the candidate changed", "Blind" + (p.blind ? " (" + p.blind + ")" : ""),
                      "Janus" + (p.janus ? " (" + p.janus + ")" : "") + ": its evaluation set, right answers",
                      "Held-out test"];
          box.appendChild(table(head, p.rows.map(function (r) { return storyRow(run, ri, r); }), "grid story"));
        }
        if (p.more) box.appendChild(el("p", {cls: "note", text: p.more}));
      });
      kids.push(box);
    });
    return section("What happened: the decisions that mattered", "story", kids);
  }
  function storyRow(run, ri, r) {
    var step = el("div", null, [
      el("button", {text: "step " + r.step, title: "open step " + r.step + " of " + r.method,
                    on: {click: function () { go({run: ri, method: r.method, step: r.step}); }}}),
      r.planted ? el("div", {cls: "badge planted", text: "planted: " + r.planted}) : null]);
    var changed = el("div", null, [el("div", {text: r.changed.text})].concat(r.changed.lines.map(function (l) {
      return el("code", {cls: "cl " + (l[0] === "+" ? "add" : "del"), text: l[0] + " " + l[1]});
    })));
    return [step, changed, r.blind, el("span", {cls: "why " + (r.decision === "rolled back" ? "rb" : "ac"),
                                             text: r.janus}), r.held_out];
  }

  function compare() {
    var kids = [];
    D.compare.forEach(function (g, i) {
      if (D.compare.length > 1) kids.push(el("h3", {text: "Group " + (i + 1)}));
      kids.push(el("p", {cls: "caption", text: g.caption}));
      (g.notes || []).forEach(function (x) { kids.push(el("p", {cls: "note", text: x})); });
      kids.push(el("h3", {text: "Test accuracy (%), as in janus report's Table 1"}));
      kids.push(table(g.header, g.body));
      if (g.paired.length) {
        kids.push(el("h3", {text: "Base vs +Janus, paired on the same test items"}));
        kids.push(table(["Dataset", "Comparison", "Run folder(s)", "Seed", "n", "Base acc", "+Janus acc", "Diff (pp)",
                         "95% CI (pp)", "Janus-only/base-only correct", "McNemar exact p"],
          g.paired.map(function (p) {
            return [p.dataset, p.base + " vs " + p.label, p.folders, String(p.seed), String(p.n), pct(p.base_acc),
                    pct(p.janus_acc), signed(p.diff), "[" + signed(p.ci95[0]) + ", " + signed(p.ci95[1]) + "]",
                    p.janus_only + "/" + p.base_only, p.p.toPrecision(3)];
          })));
        kids.push(el("p", {cls: "note", text: "Diff = +Janus minus base accuracy on the items both answered; 95% CI: " +
          "Newcombe's paired square-and-add interval; p: exact McNemar test (janus report computes the same)."}));
      }
    });
    return section("Comparison", "compare", kids);
  }
  function signed(x) { return x === null ? "—" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1); }

  function headerCard(run) {
    var h = run.header;
    var sizes = "stream " + num(h.stream_n) + " (asked " + (h.stream_size === null ? "all" : h.stream_size) +
      "), test " + num(h.test_n) + " (asked " + (h.test_size === null ? "all" : h.test_size) + ")";
    var seeds = "split " + h.seed + (h.stream_order_seed !== null && h.stream_order_seed !== undefined ?
      ", stream order " + h.stream_order_seed : "") + ", Janus " + h.janus_seed;
    var cost = num(h.tokens) + " tokens in " + num(h.calls) + " LLM responses (paid: " + num(h.paid_tokens) +
      " tokens, " + num(h.paid_calls) + " calls)" + (h.cost_usd !== null && h.cost_usd !== undefined ?
      ", $" + h.cost_usd.toFixed(4) : "");
    var rows = [
      ["Run folder", run.path], ["Backend", h.backend + (h.identity ? " (" + h.identity + ")" : "")],
      ["Model", h.model], ["Dataset", h.dataset_name + " (" + h.dataset + ")"], ["Updater", h.updater]
    ].concat(h.setup || []).concat([
      ["Encoder", h.encoder], ["Sizes", sizes], ["Seeds", seeds],
      ["Wall time", h.wall_s === null || h.wall_s === undefined ? "—" : h.wall_s.toFixed(1) + " s (from the " +
        "command's start to the run's end: the wall time janus run's last line gives)"], ["Cost", cost]
    ]);
    if (h.inject) rows.push(["Injected candidates", h.inject]);
    if (h.version) rows.push(["janus-memory", h.version]);
    var kids = [el("dl", {cls: "kv"}, [].concat.apply([], rows.map(function (r) {
      return [el("dt", {text: r[0]}), el("dd", {text: r[1]})];
    })))];
    if (run.task_note) kids.push(el("p", {cls: "note", text: run.task_note}));
    return section("Run " + run.name, "header", kids);
  }

  function accuracyCard(run) {
    var rows = run.methods.map(function (m) {
      var inj = m.injections ? m.injections.injected + " (" + m.injections.deployed + " deployed, " +
        m.injections.blocked + " blocked)" : "—";
      return [m.label, acc(m.online), acc(m.test), m.janus ? num(m.triggers) : "—",
              m.janus ? num(m.accepts) : "—", m.janus ? num(m.rollbacks) : "—",
              m.trigger_rate === null || m.trigger_rate === undefined ? "—" : pct(m.trigger_rate) + "%", inj];
    });
    return section("Accuracy", "accuracy", [
      table(["Method", "Online accuracy (stream)", "Test accuracy (frozen memory)", "Triggers", "Accepted",
             "Rolled back", "Trigger rate", "Injected"], rows),
      el("p", {cls: "note", text: "Accuracy % (correct/n) [95% Wilson interval]. Trigger rate: triggers per " +
        "post-warm-up step."})]);
  }

  // ------------------------------------------------------------------ timeline
  function markClass(f) {
    var c = "m " + (f & F.CORRECT ? "ok" : "no");
    if (f & F.WARMUP) c += " wu";
    if (f & F.TRIGGERED) c += f & F.ROLLED_BACK ? " t rb" : " t ac";
    if (f & F.INJECTED) c += " inj";
    return c;
  }
  function stepWords(m, i) {
    var f = m.f[i], d = m.d[i], c = m.c[i];
    var parts = [m.label + " · step " + (i + 1), f & F.CORRECT ? "online answer correct" : "online answer wrong"];
    if (f & F.WARMUP) parts.push("warm-up");
    if (f & F.TRIGGERED) {
      parts.push("trigger fired" + (c === null ? "" : " (cos " + c.toFixed(3) + ")"));
      parts.push(f & F.ROLLED_BACK ? "rolled back" : "accepted");
      if (d.os !== undefined && d.ns !== undefined) parts.push("E: old " + d.os.toFixed(2) + " vs new " + d.ns.toFixed(2));
    } else if (m.janus && !(f & F.WARMUP)) {
      parts.push("no trigger" + (c === null ? "" : " (cos " + c.toFixed(3) + ")"));
    }
    if (f & F.INJECTED) parts.push("injected " + d.inj);
    if (f & F.REJECTED) parts.push("candidate rejected by the updater: " + d.rej);
    return parts.join(" · ");
  }
  function rowLength(n) { // steps per timeline row: as many as fit the card, in tens (at least 10)
    var app = document.getElementById("app");
    var inner = Math.max(200, (app ? app.clientWidth : 1100) - 40 - 34 - LABEL_W);
    var fit = Math.max(10, Math.floor(inner / MARK_W / 10) * 10);
    return Math.min(fit, Math.max(10, Math.ceil(n / 10) * 10));
  }
  function timelineCard(run) {
    var n = Math.max.apply(null, run.methods.map(function (m) { return m.n; }).concat([0]));
    var legend = el("div", {cls: "legend"}, [
      legendItem("m ok", "correct online answer"), legendItem("m no", "wrong online answer"),
      legendItem("m ok wu", "warm-up"), legendItem("m ok t ac", "trigger fired, candidate accepted"),
      legendItem("m ok t rb", "trigger fired, candidate rolled back"),
      legendItem("m ok inj", "injected harmful candidate")]);
    var box = el("div", {id: "timeline", role: "group",
                         "aria-label": "timeline: arrow keys move between steps and methods, Enter opens a step"});
    var per = state.perRow = rowLength(n);
    var frag = document.createDocumentFragment();
    for (var start = 0; start < n; start += per) {
      var stop = Math.min(n, start + per);
      var seg = el("div", {cls: "seg"}, [el("div", {cls: "segl", text: "steps " + (start + 1) + "–" + stop})]);
      run.methods.forEach(function (m, mi) {
        var lane = el("div", {cls: "lane", data: {m: mi}});
        lane.appendChild(el("span", {cls: "lanel", text: m.label, title: m.label}));
        var marks = el("span", {cls: "marks"});
        for (var i = start; i < Math.min(stop, m.n); i++) {
          var mk = document.createElement("i");
          mk.className = markClass(m.f[i]);
          mk.dataset.s = i + 1;
          mk.setAttribute("role", "button");
          mk.tabIndex = -1;
          marks.appendChild(mk);
        }
        lane.appendChild(marks);
        seg.appendChild(lane);
      });
      frag.appendChild(seg);
    }
    box.appendChild(frag);
    var first = box.querySelector("i[data-s]");
    if (first) first.tabIndex = 0; // one tab stop for the whole timeline; the arrow keys move inside it
    var tip = document.getElementById("tip") || document.body.appendChild(el("div", {id: "tip", cls: "hidden"}));
    function markOf(t) { return t && t.tagName === "I" && t.dataset.s ? t : null; }
    function methodOf(t) { return Number(t.parentNode.parentNode.dataset.m); }
    function showTip(t) {
      var m = run.methods[methodOf(t)];
      tip.textContent = stepWords(m, Number(t.dataset.s) - 1);
      tip.classList.remove("hidden");
      var r = t.getBoundingClientRect();
      var w = Math.min(420, window.innerWidth - 8);
      tip.style.maxWidth = w + "px";
      tip.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, r.left - 20)) + window.scrollX + "px";
      tip.style.top = (r.bottom + window.scrollY + 6) + "px";
    }
    box.addEventListener("mouseover", function (ev) { var t = markOf(ev.target); if (t) showTip(t); });
    box.addEventListener("mouseout", function () { tip.classList.add("hidden"); });
    box.addEventListener("focusin", function (ev) {
      var t = markOf(ev.target);
      if (!t) return;
      t.setAttribute("aria-label", stepWords(run.methods[methodOf(t)], Number(t.dataset.s) - 1));
      showTip(t);
    });
    box.addEventListener("focusout", function () { tip.classList.add("hidden"); });
    box.addEventListener("click", function (ev) {
      var t = markOf(ev.target);
      if (t) go({method: run.methods[methodOf(t)].name, step: Number(t.dataset.s)});
    });
    box.addEventListener("keydown", function (ev) {
      var t = markOf(ev.target);
      if (!t) return;
      var mi = methodOf(t), s = Number(t.dataset.s), m = run.methods[mi];
      var to = null;
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        go({method: m.name, step: s});
        return;
      }
      if (ev.key === "ArrowLeft") to = [mi, s - 1];
      else if (ev.key === "ArrowRight") to = [mi, s + 1];
      else if (ev.key === "ArrowUp") to = [mi - 1, s];
      else if (ev.key === "ArrowDown") to = [mi + 1, s];
      else if (ev.key === "Home") to = [mi, 1];
      else if (ev.key === "End") to = [mi, m.n];
      else return;
      ev.preventDefault();
      ev.stopPropagation(); // the page's own ← / → (move the open step) stay out of the timeline
      var next = to[0] >= 0 && to[0] < run.methods.length ? markAt(to[0], Math.min(to[1], run.methods[to[0]].n)) : null;
      if (!next) return;
      t.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    });
    return section("Timeline: one mark per stream step and method (click a step, or Tab to it and press Enter)",
                   "timeline-card", [legend, box]);
  }
  function markAt(mi, step) { // the timeline mark of method index mi at a step (1-based), or null
    if (!(step >= 1)) return null;
    var segs = document.getElementById("timeline").children;
    var seg = segs[Math.floor((step - 1) / state.perRow)];
    var lane = seg ? seg.querySelector(".lane[data-m=\"" + mi + "\"] .marks") : null;
    return lane ? lane.children[(step - 1) % state.perRow] || null : null;
  }
  function legendItem(cls, text) { return el("span", {cls: "li"}, [el("i", {cls: cls}), text]); }

  // ------------------------------------------------------------------ one step
  function openStep(methodName, step, scroll) {
    var run = D.runs[state.run];
    var m = run.methods.filter(function (x) { return x.name === methodName; })[0];
    var box = document.getElementById("detail");
    if (!m || !(step >= 1 && step <= m.n)) { box.classList.add("hidden"); return; }
    var i = step - 1;
    var tip = document.getElementById("tip");
    if (tip) tip.classList.add("hidden");
    if (state.selected) state.selected.classList.remove("sel");
    state.selected = markAt(run.methods.indexOf(m), step);
    if (state.selected) state.selected.classList.add("sel");
    clear(box).classList.remove("hidden");
    var nav = el("div", {cls: "stepnav"}, [
      el("button", {text: "◀ step " + (step - 1), disabled: step > 1 ? null : "disabled",
                    on: {click: function () { go({step: step - 1}); }}}),
      el("button", {text: "step " + (step + 1) + " ▶", disabled: step < m.n ? null : "disabled",
                    on: {click: function () { go({step: step + 1}); }}}),
      el("span", {text: " same step in: "})].concat(run.methods.filter(function (x) { return x !== m && x.n >= step; })
      .map(function (x) { return el("button", {text: x.label, on: {click: function () { go({method: x.name}); }}}); })));
    box.appendChild(el("h2", {text: m.label + " · step " + step + " of " + m.n}));
    box.appendChild(nav);
    box.appendChild(el("p", {cls: "summary", text: stepWords(m, i)}));
    stepBlocks(run, m, i, true).forEach(function (b) { box.appendChild(b); });
    if (scroll) box.scrollIntoView({block: "start"});
  }

  function stepBlocks(run, m, i, ids) { // a step's decision, task and answer, memory diff and evaluation set
    var d = m.d[i], f = m.f[i];
    var out = [decisionBlock(m, d, f, i, ids), taskBlock(run, m, d, i, ids), diffBlock(d, f, ids)];
    if (d.e) out.push(evalBlock(run, d, ids));
    return out;
  }

  function decisionBlock(m, d, f, i, ids) {
    var verdict = f & F.DEPLOYED ? "candidate deployed" : "previous memory kept";
    if (f & F.ROLLED_BACK) verdict = "rolled back: the previous memory is kept";
    if (d.ro && d.ro.indexOf("deployed:") >= 0) verdict = (f & F.DEPLOYED ? "candidate deployed" : "candidate rolled back")
      + ", and a re-offer deployed too (below)";
    var rows = [["Decision", verdict], ["Reason", (REASONS[d.r] || "") + (d.r ? " (" + d.r + ")" : "")]];
    if (m.janus) {
      rows.push(["Trigger", f & F.TRIGGERED ? "fired" : (f & F.WARMUP ? "warm-up (no trigger test)" : "did not fire")]);
      rows.push(["MMT cosine", m.c[i] === null ? "— (no momentum yet)" : m.c[i].toFixed(3) + " (τ = " + m.tau + ")"]);
    }
    if (d.os !== undefined || d.ns !== undefined) {
      rows.push(["Evaluation-set score", "old memory " + fmt(d.os) + " vs candidate " + fmt(d.ns)]);
    }
    if (d.p !== undefined) rows.push(["p-value", String(d.p)]);
    if (d.tc !== undefined) rows.push(["Triggers so far", String(d.tc)]);
    if (d.ec !== undefined) rows.push(["Evaluator calls", String(d.ec)]);
    if (d.ro) rows.push(["Re-offer", d.ro]);
    if (d.inj) rows.push(["Injected candidate", d.inj]);
    if (d.rej) rows.push(["Updater rejected its candidate", d.rej]);
    (d.w || []).forEach(function (w) { rows.push(["Warning", w]); });
    return el("div", {cls: "block"}, [el("h3", {text: "Decision"}), el("dl", {cls: "kv decision", id: ids ? "decision" : null},
      [].concat.apply([], rows.map(function (r) { return [el("dt", {text: r[0]}), el("dd", {text: r[1]})]; })))]);
  }
  function fmt(x) { return x === undefined || x === null ? "—" : Number(x).toFixed(3); }

  function taskBlock(run, m, d, i, ids) {
    var t = run.tasks[m.t[i]] || [null, null, null];
    var kids = [el("h3", {text: "Task " + (t[0] || "?")})];
    kids.push(el("pre", {cls: "text task-text", id: ids ? "task-text" : null,
                         text: t[1] === null ? "(task text not available)" : t[1]}));
    if (t[2] !== null) kids.push(el("p", null, [el("b", {text: "Gold answer: "}), el("code", {text: t[2]})]));
    kids.push(el("h3", {text: "Answer"}));
    kids.push(el("p", null, [el("b", {text: "Extracted: "}), el("code", {text: d.x === undefined ? "(none)" : d.x}),
                             d.st ? el("span", {cls: "badge", text: d.st}) : null]));
    if (d.rs) kids.push(el("details", null, [el("summary", {text: "reasoning"}), el("pre", {cls: "text", text: d.rs})]));
    var answer = d.a === undefined || d.a === null ? "" : d.a;
    if (!answer) kids.push(el("p", {cls: "note", text: "The model's answer text is empty" +
                                    (d.rs ? " (its output is under reasoning above)." : ".")}));
    kids.push(el("pre", {cls: "text answer-text" + (answer ? "" : " hidden"), id: ids ? "answer-text" : null,
                         text: answer}));
    return el("div", {cls: "block"}, kids);
  }

  function diffBlock(d, f, ids) {
    var kids = [el("h3", {text: "Memory: old → candidate"})];
    if (!(f & F.CHANGED)) {
      kids.push(el("p", {text: "The candidate is the old memory unchanged (sha256 " + d.om + ")."}));
    } else if (d.dn) {
      kids.push(el("p", {cls: "note", text: d.dn}));
    } else {
      var add = 0, del = 0;
      var pre = el("pre", {cls: "diff", id: ids ? "diff" : null});
      (d.df || []).forEach(function (l) {
        if (l[0] === "+") add++;
        if (l[0] === "-") del++;
        var cls = l[0] === "+" ? "add" : l[0] === "-" ? "del" : l[0] === "@" ? "hunk" : "ctx";
        pre.appendChild(el("span", {cls: cls, text: (l[0] === "@" ? "@@ " + l[1] + " @@" : l[0] + l[1]) + "\n"}));
      });
      kids.push(el("p", {text: "old " + d.om + " → candidate " + d.cm + ": " + add + " line(s) added, " + del +
                                " removed" + (f & F.DEPLOYED ? " (deployed)" : " (not deployed)")}));
      kids.push(pre);
      if (d.dc) kids.push(el("p", {cls: "note", text: d.dc + " more diff lines not shown"}));
    }
    return el("div", {cls: "block"}, kids);
  }

  function evalBlock(run, d, ids) {
    var mark = function (v) { return v === null ? "—" : v ? "✓" : "✗"; };
    var oldN = 0, newN = 0, n = 0;
    var rows = d.e.map(function (e, k) {
      var t = run.tasks[e[0]] || ["?", null];
      if (e[2] !== null && e[3] !== null) { n++; oldN += e[2]; newN += e[3]; }
      var q = el("span", {cls: "q", text: t[1] === null ? "" : t[1], title: t[1] === null ? "" : t[1],
                          on: {click: function () { this.classList.toggle("full"); }}});
      return [String(k + 1), t[0], e[1].split("+").join(", "), mark(e[2]), mark(e[3]), e[4] === null ? "—" : e[4],
              e[5] === null ? "—" : e[5], q];
    });
    var box = table(["#", "Task", "Role", "Old", "Candidate", "Old answer", "Candidate answer", "Question"], rows,
                    "grid eval evalset");
    var tb = box.firstChild;
    if (ids) tb.id = "evalset";
    Array.prototype.forEach.call(tb.tBodies[0].rows, function (tr, k) {
      var e = d.e[k];
      if (e[2] !== null && e[3] !== null && e[2] !== e[3]) tr.className = e[3] ? "flip-up" : "flip-down";
    });
    return el("div", {cls: "block"}, [
      el("h3", {text: "Evaluation set: " + d.e.length + " entries; old memory " + oldN + "/" + n + " right, candidate " +
                      newN + "/" + n}),
      box, el("p", {cls: "note", text: "Rows where the two memories disagree are tinted (green: only the candidate " +
        "right; red: only the old memory right). Verdicts: — = not evaluated (early stop) or no verdict; answers: — = none " +
        "extracted. Click a question to see it whole."})]);
  }

  // ------------------------------------------------------------------ the steps that matter, open on load
  function keySteps(run) {
    // per method: every rollback, every injected candidate, and a Janus method's first comparison; in step order
    var out = [];
    run.methods.forEach(function (m, mi) {
      var firstCmp = -1;
      for (var i = 0; i < m.n; i++) {
        var f = m.f[i], why = [];
        if (f & F.ROLLED_BACK) why.push("rolled back");
        if (f & F.INJECTED) why.push("injected " + m.d[i].inj + (f & F.DEPLOYED ? " (deployed)" : " (blocked)"));
        if (m.janus && firstCmp < 0 && (f & F.TRIGGERED)) { firstCmp = i; why.push("first comparison"); }
        // opened first: a planted candidate Janus rolled back, then any planted candidate, a rollback, a comparison
        var rank = f & F.INJECTED ? (f & F.ROLLED_BACK ? 0 : 1) : f & F.ROLLED_BACK ? 2 : 3;
        if (why.length) out.push({m: m, mi: mi, i: i, why: why, rank: rank});
      }
    });
    var byStep = function (a, b) { return a.i - b.i || a.mi - b.mi; };
    // opened on load: by rank, each rank in step order
    var order = out.slice().sort(function (a, b) { return a.rank - b.rank || byStep(a, b); });
    order.slice(0, MAX_OPEN).forEach(function (k) { k.open = true; });
    // listed: the opened ones and the earliest others, at most MAX_LISTED, in step order
    var room = MAX_LISTED - Math.min(MAX_OPEN, out.length);
    return {all: out.length, listed: out.sort(byStep).filter(function (k) { return k.open || room-- > 0; })};
  }
  function keySummary(k) {
    var d = k.m.d[k.i], f = k.m.f[k.i];
    var parts = [k.m.label + " · step " + (k.i + 1) + ": " + k.why.join(", ")];
    if (d.os !== undefined && d.ns !== undefined) {
      parts.push("evaluation set: old memory " + d.os.toFixed(2) + " vs candidate " + d.ns.toFixed(2));
    }
    parts.push(f & F.CORRECT ? "online answer correct" : "online answer wrong");
    return parts.join(" · ");
  }
  function keyStepsCard(run) {
    var found = keySteps(run), keys = found.listed;
    var kids = [];
    if (!keys.length) {
      kids.push(el("p", {cls: "note", text: "No step to show first: nothing was rolled back or injected, and Janus " +
        "compared no candidate in this run. Open any step from the timeline."}));
    } else {
      var opened = keys.filter(function (k) { return k.open; }).length;
      kids.push(el("p", {cls: "note", text: found.all + " step(s): every rollback, every injected candidate and the " +
        "first comparison of each Janus method; " + (opened < keys.length ? opened + " of them are open (a planted " +
        "candidate Janus rolled back first, then planted candidates, then rollbacks), the others open with a click." :
        "all open.") +
        (found.all > keys.length ? " " + keys.length + " are listed here; the timeline shows every step." : "")}));
    }
    keys.forEach(function (k) {
      var body = el("div", {cls: "keybody"});
      var det = el("details", {cls: "keystep", data: {m: k.mi, s: k.i + 1}}, [
        el("summary", {text: keySummary(k)}), body]);
      var filled = false;
      function fill() {
        if (filled) return;
        filled = true;
        var blocks = stepBlocks(run, k.m, k.i, false);
        var task = blocks.splice(1, 1)[0]; // the task and the answer fold away: the decision, diff and set come first
        blocks.forEach(function (b) { body.appendChild(b); });
        body.appendChild(el("details", {cls: "block"}, [el("summary", {text: "task and answer"}), task]));
        body.appendChild(el("button", {text: "open in the step panel (← / → move along the stream from there)",
                                       on: {click: function () { go({method: k.m.name, step: k.i + 1}); }}}));
      }
      det.addEventListener("toggle", function () { if (det.open) fill(); });
      if (k.open) { fill(); det.open = true; }
      kids.push(det);
    });
    return section("Steps that matter: rollbacks, injected candidates, first comparisons", "keysteps", kids);
  }

  // ------------------------------------------------------------------ charts (uPlot)
  function chartsCard(run) {
    var box = section("Accuracy trajectory, trigger cosine and cost (drag to zoom, double-click to reset)", "charts", []);
    var n = Math.max.apply(null, run.methods.map(function (m) { return m.n; }).concat([0]));
    var xs = []; for (var i = 1; i <= n; i++) xs.push(i);
    var pad = function (arr) { var out = arr.slice(0, n); while (out.length < n) out.push(null); return out; };
    var pending = [];
    var plot = function (id, title, series, data, opt, why) {
      pending.push(chartHolder(box, id, title, series, data, opt, why));
    };
    // accuracy: online per step; the memory's test accuracy at the checkpoints and after the last step
    var series = [{label: "step"}], data = [xs];
    run.methods.forEach(function (m, k) {
      series.push({label: m.label + " online", stroke: COLORS[k % COLORS.length], width: lineWidth(k, run),
                   value: function (u, v) { return v === null ? "—" : v.toFixed(1) + "%"; }});
      data.push(pad(m.acc));
    });
    var anyCkpt = run.methods.some(function (m) { return m.checkpoints.some(function (c) { return c[1] !== null; }); });
    run.methods.forEach(function (m, k) {
      var ys = pad([]);
      m.checkpoints.forEach(function (c) { if (c[0] >= 1 && c[0] <= n && c[1] !== null) ys[c[0] - 1] = 100 * c[1]; });
      if (m.test && m.n >= 1 && m.n <= n) ys[m.n - 1] = 100 * m.test[0] / m.test[1];
      if (!ys.some(function (v) { return v !== null; })) return;
      series.push({label: m.label + " test", stroke: COLORS[k % COLORS.length], width: 1, dash: [2, 4],
                   points: {show: true, size: 10, fill: COLORS[k % COLORS.length]}, spanGaps: true,
                   value: function (u, v) { return v === null ? "—" : v.toFixed(1) + "%"; }});
      data.push(ys);
    });
    plot("acc-chart", "Accuracy (%): online accuracy so far per step (lines); test accuracy of the memory on the " +
         "held-out tasks (dots) " + (anyCkpt ? "at the checkpoints and " : "") + "after the last step", series, data,
         {y: [0, 100]}, anyCkpt ? null : "No checkpoint tests in this run (janus run --checkpoints 0.2,0.4,0.6,0.8 " +
         "tests the memory during the stream): the dots are the final memories' test accuracy.");
    // MMT cosine: only methods that have one; a method without says why
    var jm = run.methods.filter(function (m) { return m.janus; });
    var withCos = jm.filter(function (m) { return m.c.some(function (c) { return c !== null; }); });
    var whyNot = jm.filter(function (m) { return withCos.indexOf(m) < 0; }).map(function (m) {
      return m.trigger === "mmt" || m.trigger === "selective" ?
        m.label + ": no step after the warm-up had a momentum yet, so no cosine was computed" :
        m.label + ": its trigger (" + m.trigger + ") compares at every step after the warm-up whatever the cosine, " +
        "and this run recorded none";
    });
    if (!jm.length) whyNot = ["no method of this run uses Janus, so there is no trigger cosine"];
    var cs = [{label: "step"}], cd = [xs];
    withCos.forEach(function (m) {
      var k = run.methods.indexOf(m);
      cs.push({label: m.label + " cosine", stroke: COLORS[k % COLORS.length], width: 1.5, spanGaps: false,
               points: {show: true, size: 4}, value: function (u, v) { return v === null ? "—" : v.toFixed(3); }});
      cd.push(pad(m.c));
    });
    if (withCos.length) {
      cs.push({label: "τ", stroke: "#999", dash: [6, 4], width: 1, points: {show: false}});
      cd.push(xs.map(function () { return withCos[0].tau; }));
    }
    var other = withCos.filter(function (m) { return m.trigger !== "mmt" && m.trigger !== "selective"; })
      .map(function (m) { return m.label + ": trigger " + m.trigger; });
    plot("cos-chart", "MMT cosine cos(z_t, m_{t-1}) per step" + (!withCos.length ? "" : " (" + (other.length ?
         other.join(", ") + ", which compares whatever the cosine; τ drawn for reference" : "the trigger fires below τ") +
         ")"),
         cs, cd, {y: [-1, 1]}, whyNot.length ? "No cosine to draw for " + whyNot.join("; ") + "." : null);
    // cost
    var ts = [{label: "step"}], td = [xs];
    run.methods.forEach(function (m, k) {
      if (!m.tok.length) return;
      var ys = pad([]);
      m.tok_steps.forEach(function (s, j) { if (s >= 1 && s <= n) ys[s - 1] = m.tok[j]; });
      ts.push({label: m.label, stroke: COLORS[k % COLORS.length], width: lineWidth(k, run),
               value: function (u, v) { return v === null ? "—" : Math.round(v).toLocaleString("en-US"); }});
      td.push(ys);
    });
    plot("tok-chart", "Cost: cumulative LLM tokens per method (stream steps, every role, cache hits included)", ts, td,
         {short: true}, ts.length > 1 ? null : "No per-step token counts are stored in this run folder.");
    return {box: box, draw: function () { pending.forEach(function (p) { p(); }); }};
  }

  function lineWidth(k, run) { // earlier methods' lines are wider: where two lines run together both stay visible
    return 2 + 1.5 * (run.methods.length - 1 - k);
  }
  function sameCurves(series, data) {
    // a series whose values equal an earlier one's hides it: the earlier becomes a wide pale line, the later is
    // dashed on top, and the chart says so
    var notes = [];
    for (var j = 2; j < series.length; j++) {
      if (!data[j].some(function (v) { return v !== null; })) continue;
      for (var i = 1; i < j; i++) {
        var same = data[i].length === data[j].length && data[i].every(function (v, k) { return v === data[j][k]; });
        if (!same || series[i].width === 0) continue;
        series[i].width = 6;
        series[i].stroke = fade(series[i].stroke);
        series[j].dash = [7, 5];
        if (series[i].points && series[i].points.size) { // a dot on a dot: the later one smaller, inside the earlier
          series[j].points = {show: true, size: Math.max(4, series[i].points.size - 5), fill: series[j].stroke};
        }
        notes.push(series[j].label + " is the same curve as " + series[i].label + " (the wide pale line; drawn " +
                   "dashed on top of it)");
        break;
      }
    }
    return notes;
  }
  function fade(color) {
    var h = /^#([0-9a-f]{6})$/i.exec(color || "");
    if (!h) return color;
    var v = parseInt(h[1], 16);
    return "rgba(" + (v >> 16) + "," + ((v >> 8) & 255) + "," + (v & 255) + ",0.4)";
  }

  function chartHolder(box, id, title, series, data, opt, why) {
    // the chart's place in its card now; the chart itself once the card is in the page (its width is the card's)
    var holder = el("div", {cls: "chart", id: id}, [el("h3", {text: title})]);
    box.appendChild(holder);
    var drawn = series.length > 1 && data[0].length > 0 && data.slice(1).some(function (ys) {
      return ys.some(function (v) { return v !== null; });
    });
    if (why) holder.appendChild(el("p", {cls: "note why", text: why}));
    if (!drawn) {
      if (!why) holder.appendChild(el("p", {cls: "note why", text: "Nothing to draw: this run has no values for it."}));
      return function () {};
    }
    if (typeof uPlot === "undefined") {
      holder.appendChild(el("p", {cls: "note why", text: "The chart library did not load, so the chart is not drawn."}));
      return function () {};
    }
    sameCurves(series, data).forEach(function (t) { holder.appendChild(el("p", {cls: "note same", text: t})); });
    return function () {
      var scales = {x: {time: false}};
      if (opt.y) scales.y = {range: opt.y};
      var yaxis = {size: 60};
      if (opt.short) yaxis.values = function (u, vals) { return vals.map(short); };
      var u = new uPlot({width: chartWidth(holder), height: 260, series: series, scales: scales,
                         axes: [{label: "stream step", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                                                               10000, 20000, 50000, 100000]}, yaxis],
                         cursor: {drag: {x: true, y: false}},
                         legend: {live: true}}, data, holder);
      u.holder = holder;
      state.charts.push(u);
    };
  }
  function chartWidth(holder) { return Math.max(240, Math.min(1180, holder.clientWidth || 600)); }

  function short(v) {
    var a = Math.abs(v);
    return a >= 1e9 ? (v / 1e9).toFixed(1) + "G" : a >= 1e6 ? (v / 1e6).toFixed(1) + "M" :
      a >= 1e3 ? (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k" : String(v);
  }

  function costCard(run) {
    var roles = {};
    run.methods.forEach(function (m) { Object.keys(m.cost.roles).forEach(function (r) { roles[r] = 1; }); });
    var order = ["solver", "curator", "janus", "test"].filter(function (r) { return roles[r]; })
      .concat(Object.keys(roles).filter(function (r) { return ["solver", "curator", "janus", "test"].indexOf(r) < 0; }));
    var rows = run.methods.map(function (m) {
      var ev = !m.janus ? "—" : m.cost.evaluations === null || m.cost.evaluations === undefined ? "n/a" :
        num(m.cost.evaluations);
      return [m.label, num(m.cost.needed_calls), num(m.cost.needed_tokens), num(m.cost.paid_calls),
              num(m.cost.paid_tokens), num(m.cost.cache_hits), ev].concat(order.map(function (r) {
        var x = m.cost.roles[r];
        return x ? num(x.tokens) + " (" + num(x.calls) + (x.retries ? ", " + num(x.retries) + (x.retries === 1 ? " retry" : " retries") : "") + ")"
          : "—";
      }));
    });
    return section("Cost per method", "cost", [
      table(["Method", "Calls needed", "Tokens needed", "Calls paid", "Tokens paid", "Cache hits (not paid)",
             "Janus evaluations needed"].concat(order.map(function (r) { return r + " tokens (calls)"; })), rows),
      el("p", {cls: "note", text: "needed = every response the method's requests got, cache included (its cost with an empty cache; " +
        "speculative reads too); paid = calls this run " +
        "made (as janus run prints): a reply served by the response cache is not paid. Janus evaluations needed = " +
        "the (memory, task) evaluations the controller's decisions used (decision log); the janus role's calls " +
        "also count requests sent ahead that a decision did not need; retries = attempts repeated after a transient " +
        "failure (a dropped connection, HTTP 429 or 5xx, a timeout), not calls paid."})]);
  }

  // ------------------------------------------------------------------ state in the URL hash (#run=0&method=..&step=..)
  function readHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    var r = Number(p.get("run"));
    state.run = r >= 0 && r < D.runs.length ? r : 0;
    state.method = p.get("method");
    var s = Number(p.get("step"));
    state.step = p.get("step") !== null && s >= 1 ? s : null;
  }
  function go(change) {
    var next = {run: state.run, method: state.method, step: state.step};
    for (var k in change) next[k] = change[k];
    if (change.run !== undefined && change.run !== state.run && change.step === undefined) {
      next.method = null; next.step = null;
    }
    if (next.method === null && next.step !== null) next.method = D.runs[next.run].methods[0].name;
    var p = new URLSearchParams();
    p.set("run", String(next.run));
    if (next.method !== null && next.step !== null) { p.set("method", next.method); p.set("step", String(next.step)); }
    var h = "#" + p.toString();
    var rerender = next.run !== state.run;
    state.run = next.run; state.method = next.method; state.step = next.step;
    if (location.hash !== h) history.replaceState(null, "", h);
    if (rerender) render();
    if (state.step !== null) openStep(state.method, state.step, true);
  }
  var resizing = null;
  window.addEventListener("resize", function () { // charts take the card's new width; the timeline re-flows its rows
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      if (!D) return;
      state.charts.forEach(function (u) { u.setSize({width: chartWidth(u.holder), height: 260}); });
      var run = D.runs[state.run];
      var n = Math.max.apply(null, run.methods.map(function (m) { return m.n; }).concat([0]));
      var card = document.getElementById("timeline-card");
      if (card && rowLength(n) !== state.perRow) {
        card.parentNode.replaceChild(timelineCard(run), card);
        var m = run.methods.filter(function (x) { return x.name === state.method; })[0];
        state.selected = m && state.step ? markAt(run.methods.indexOf(m), state.step) : null;
        if (state.selected) state.selected.classList.add("sel");
      }
    }, 150);
  });
  document.addEventListener("keydown", function (ev) {
    if (state.step === null || /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) return;
    if (ev.key === "ArrowLeft" && state.step > 1) go({step: state.step - 1});
    var m = D.runs[state.run].methods.filter(function (x) { return x.name === state.method; })[0];
    if (ev.key === "ArrowRight" && m && state.step < m.n) go({step: state.step + 1});
  });
  window.addEventListener("hashchange", function () { readHash(); render(); });

  function loadData() {
    var block = document.getElementById("janus-data");
    if (block.type === "application/json") return Promise.resolve(JSON.parse(block.textContent));
    var bin = atob(block.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  loadData().then(function (data) {
    D = data;
    readHash();
    render();
    var marks = document.querySelectorAll("#timeline i[data-s]").length;
    document.body.dataset.marks = String(marks);
    window.janusView = {data: D, open: function (m, s) { go({method: m, step: s}); }, renderMs: performance.now() - T0,
      charts: function () { // what each drawn chart holds: its series and how many values each has
        return state.charts.map(function (u) {
          return {id: u.holder.id, series: u.series.slice(1).map(function (x) { return x.label; }),
                  values: u.data.slice(1).map(function (ys) { return ys.filter(function (v) { return v !== null; }).length; })};
        });
      }};
    document.body.dataset.ready = String(Math.round(performance.now() - T0));
  }).catch(function (e) {
    clear(document.getElementById("app")).appendChild(el("p", {cls: "note", text: "cannot draw this run: " + e}));
    throw e;
  });
})();
