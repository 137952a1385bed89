/*
 * viz/html/viewer_graph.js -- the viewer's circuit page: a graph.json in the
 * MIB / EAP-IG shape ({"cfg": {"n_layers", "n_heads", ...}, "nodes":
 * {"a0.h2": {"in_graph", "score"?}}, "edges": {"a0.h2->a1.h0<q>": {"score",
 * "in_graph"}}}) drawn as an SVG in the layout of viz's graph figure
 * (viz/viz_graph.c): input at the bottom, a layer's heads side by side, its
 * MLP on the row above them in the last column, logits on top; an edge runs
 * from its sender's top into its receiver's q, k or v port (under the
 * letter), width linear in |score|, the diverging map's ends by sign
 * (negative dashed). A threshold slider hides edges under an |score| (the
 * count shown beside it), hover or focus names an edge or node with its
 * score, a click (or Enter) on a head shows its attention pattern when the
 * folder holds one: a file with "attention" [heads][T][T] (or the page's
 * packed form), "attention_head_names" ("a1.h0" or "L1H0") and "tokens".
 * Loaded before viewer.js in the same <script>; viewer.js calls
 * hsCircuitView(graph, attention, ctx) with its helpers (ctx) and places the
 * element it returns.
 */
var hsCircuitView = (function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var POOL_MAX = 500; /* edges the slider ranges over when not only the circuit's */
  var PORT_X = { q: 1 / 6, k: 3 / 6, v: 5 / 6 };

  function sv(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* "a1.h0" -> {kind: 'head', l: 1, h: 0}; "m1", "input", "logits" */
  function parseNode(name) {
    var m = /^a(\d+)\.h(\d+)$/.exec(name);
    if (m) return { kind: 'head', l: +m[1], h: +m[2] };
    m = /^m(\d+)$/.exec(name);
    if (m) return { kind: 'mlp', l: +m[1] };
    if (name === 'input' || name === 'logits') return { kind: name };
    return null;
  }
  /* "a0.h2->a1.h0<q>" -> {from, to, port} */
  function parseEdge(name) {
    var m = /^(.+)->(.+?)(?:<([qkv])>)?$/.exec(name);
    return m ? { from: m[1], to: m[2], port: m[3] || '' } : null;
  }

  /* Rows and columns as viz's figure places them (experiments/graph_fig.c). */
  function layout(graph) {
    var cfg = graph.cfg || {}, names = Object.keys(graph.nodes || {}), L = cfg.n_layers || 0, H = cfg.n_heads || 0;
    var mlp = names.some(function (n) { return /^m\d+$/.test(n); }), step = mlp ? 2 : 1, nodes = {};
    names.forEach(function (n) {
      var p = parseNode(n);
      if (!p) return;
      L = Math.max(L, (p.l || 0) + (p.kind === 'head' || p.kind === 'mlp' ? 1 : 0));
      if (p.kind === 'head') H = Math.max(H, p.h + 1);
      nodes[n] = p;
    });
    Object.keys(nodes).forEach(function (n) {
      var p = nodes[n];
      if (p.kind === 'input') { p.row = 0; p.col = -1; }
      else if (p.kind === 'head') { p.row = 1 + p.l * step; p.col = p.h; }
      else if (p.kind === 'mlp') { p.row = 2 + p.l * step; p.col = H; }
      else { p.row = 1 + L * step; p.col = -1; }
    });
    return { nodes: nodes, C: H + (mlp ? 1 : 0), R: 2 + L * step };
  }

  /* a canvas context to measure labels with */
  function measurer() {
    var probe = document.createElement('canvas').getContext('2d');
    probe.font = '12px sans-serif';
    return probe;
  }

  /* Boxes (p.box) as the figure places them: a column box fits the widest
     label, rows from the top (a head's row holds its name and q k v). */
  function place(lay, probe) {
    var nodes = lay.nodes, colW = 40;
    Object.keys(nodes).forEach(function (n) { if (nodes[n].col >= 0) colW = Math.max(colW, Math.ceil(probe.measureText(n).width) + 12); });
    var pitch = colW + 14, margin = 10, hHead = 34, hOne = 20, vgap = 30;
    var W = 2 * margin + lay.C * pitch, rowTop = [], y = margin;
    for (var r = lay.R - 1; r >= 0; r--) {
      var rh = hOne;
      Object.keys(nodes).forEach(function (n) { if (nodes[n].row === r && nodes[n].kind === 'head') rh = hHead; });
      rowTop[r] = { y: y, h: rh };
      y += rh + vgap;
    }
    Object.keys(nodes).forEach(function (n) {
      var p = nodes[n], w = p.col < 0 ? Math.max(colW, Math.ceil(probe.measureText(n).width) + 16) : colW;
      var cx = p.col < 0 ? W / 2 : margin + p.col * pitch + pitch / 2, h = p.kind === 'head' ? hHead : hOne;
      p.box = { x: cx - w / 2, y: rowTop[p.row].y + (rowTop[p.row].h - h) / 2, w: w, h: h };
    });
    return { W: W, H: y - vgap + margin };
  }

  /* The edges of graph.json between known nodes, strongest |score| first. */
  function edgeList(graph, nodes) {
    var edges = [];
    Object.keys(graph.edges || {}).forEach(function (name) {
      var e = parseEdge(name), d = graph.edges[name];
      if (!e || !nodes[e.from] || !nodes[e.to]) return;
      e.name = name;
      e.score = typeof d.score === 'number' ? d.score : 0;
      e.abs = Math.abs(e.score);
      e.in = d.in_graph === true;
      edges.push(e);
    });
    return edges.sort(function (a, b) { return b.abs - a.abs || (a.name < b.name ? -1 : 1); });
  }

  /* Pattern k of A (the unpacked attention of file att) with token labels in
     the viewer's colours; data-name, -x0, -y0, -cell for tests. */
  function patternCanvas(ctx, A, k, att, name, probe) {
    var T = A.T, toks = (att.tokens || []).map(ctx.word), cell = Math.max(4, Math.min(22, Math.floor(360 / T))), lw = 0;
    toks.forEach(function (t, i) { lw = Math.max(lw, probe.measureText(i + ' ' + t).width); });
    var ml = Math.ceil(lw) + 8, mt = Math.ceil(lw) + 8, cv = ctx.canvas(ml + T * cell + 4, mt + T * cell + 4,
      name + ': attention pattern, rows = destination, columns = source');
    cv.c.className = 'graphhead';
    cv.c.setAttribute('data-name', name);
    cv.c.setAttribute('data-x0', ml);
    cv.c.setAttribute('data-y0', mt);
    cv.c.setAttribute('data-cell', cell);
    var g = cv.g, every = Math.max(1, Math.ceil(13 / cell));
    g.imageSmoothingEnabled = false;
    g.drawImage(ctx.patternImage(A.a, k * T * T, T, att.attention.causal !== false), ml, mt, T * cell, T * cell);
    g.fillStyle = '#222';
    g.font = '12px sans-serif';
    g.textAlign = 'right';
    for (var i = 0; i < T; i += every) g.fillText(i + ' ' + toks[i], ml - 4, mt + i * cell + cell / 2 + 4);
    g.save();
    g.translate(ml, mt - 4);
    g.rotate(-Math.PI / 2);
    g.textAlign = 'left';
    for (var j = 0; j < T; j += every) g.fillText(j + ' ' + toks[j], 0, j * cell + cell / 2 + 4);
    g.restore();
    return cv.c;
  }

  /* The colours and widths, in words. */
  function legend(ctx, POS, NEG) {
    var swatch = function (rgb, dash, text) {
      var s = sv('svg', { width: 36, height: 10, 'aria-hidden': 'true' });
      s.appendChild(sv('line', { x1: 2, y1: 5, x2: 34, y2: 5, stroke: ctx.css(rgb), 'stroke-width': 3, 'stroke-dasharray': dash }));
      return ctx.el('span', {}, [s, ctx.el('span', { text: text })]);
    };
    return ctx.el('div', { cls: 'legend' }, [swatch(POS, 'none', 'score ≥ 0'), swatch(NEG, '8 4', 'score < 0'),
      ctx.el('span', { text: 'width: linear in |score|; an edge enters a head at its q, k or v' })]);
  }

  return function circuitView(graph, att, ctx) {
    var lay = layout(graph), nodes = lay.nodes, POS = ctx.rgbAt(ctx.CMAPS.diverging, 255), NEG = ctx.rgbAt(ctx.CMAPS.diverging, 0);
    var edges = edgeList(graph, nodes);
    var inCircuit = edges.filter(function (e) { return e.in; });
    var only = inCircuit.length > 0, pool = [], maxAbs = 1;

    var probe = measurer(), size = place(lay, probe), W = size.W, Hpx = size.H;

    var svg = sv('svg', { width: W, height: Hpx, 'class': 'circuit', role: 'group' });
    var gFaint = sv('g', {}), gEdges = sv('g', { 'class': 'edges' }), gNodes = sv('g', {});
    svg.appendChild(gFaint);
    svg.appendChild(gEdges);
    svg.appendChild(gNodes);
    var status = ctx.el('p', { cls: 'status', 'aria-live': 'polite' });
    var count = ctx.el('span', { cls: 'count' });
    var slider = ctx.el('input', { type: 'range', min: '0', step: '1', 'aria-label': 'threshold: hide the edges under this |score|' });
    var patternBox = ctx.el('div', { cls: 'graphpattern', 'aria-live': 'polite' });

    function say(text, ev, elt) {
      status.textContent = text;
      if (ev) ctx.tip(text, ev.clientX, ev.clientY);
      else if (elt) { var b = elt.getBoundingClientRect(); ctx.tip(text, b.right, b.top); }
    }
    function hoverable(elt, text) {
      elt.addEventListener('mousemove', function (ev) { say(text, ev); });
      elt.addEventListener('mouseleave', function () { ctx.tip(null); });
      elt.addEventListener('focus', function () { say(text, null, elt); });
      elt.addEventListener('blur', function () { ctx.tip(null); });
    }
    function portX(p, port) { return p.box.x + p.box.w * (PORT_X[port] || 0.5); }
    function widthOf(e) { return 1.5 * (0.5 + 2.5 * e.abs / maxAbs); }

    function drawNode(name, strong, used) {
      var p = nodes[name], nd = graph.nodes[name] || {}, head = p.kind === 'head';
      var g = sv('g', { 'class': 'node' + (strong ? ' strong' : ' faint') + (head ? ' head' : ''), 'data-name': name,
        tabindex: strong ? '0' : '-1', role: head ? 'button' : 'img' });
      var label = name + (typeof nd.score === 'number' ? ': score ' + ctx.fmt(nd.score, 4) : '') +
        (strong ? ', in the circuit' : '') + (head ? '; click or Enter for its attention' : '');
      g.setAttribute('aria-label', label);
      g.appendChild(sv('rect', { x: p.box.x, y: p.box.y, width: p.box.w, height: p.box.h, rx: 2 }));
      g.appendChild(sv('text', { x: p.box.x + p.box.w / 2, y: p.box.y + 14, 'text-anchor': 'middle' }, name));
      if (head && strong)
        ['q', 'k', 'v'].forEach(function (k) {
          g.appendChild(sv('text', { x: portX(p, k), y: p.box.y + 29, 'text-anchor': 'middle',
            'class': 'port' + (used[name + '<' + k + '>'] ? ' used' : '') }, k));
        });
      hoverable(g, label);
      if (head) {
        g.addEventListener('click', function () { showPattern(name); });
        g.addEventListener('keydown', function (ev) {
          if (ev.key === 'Enter' || ev.key === ' ') { showPattern(name); ev.preventDefault(); }
        });
      }
      (strong ? gNodes : gFaint).appendChild(g);
    }
    function drawEdge(e) {
      var s = nodes[e.from].box, rcv = nodes[e.to], xs = s.x + s.w / 2, ys = s.y;
      var xr = portX(rcv, e.port), yr = rcv.box.y + rcv.box.h, dy = ys - yr;
      var rise = Math.max(0.5 * dy, Math.min(0.35 * Math.abs(xr - xs), 2 * rcv.box.h)), w = widthOf(e);
      var rgb = e.score < 0 ? NEG : POS;
      var path = sv('path', { 'class': 'edge', 'data-name': e.name, 'data-score': String(e.score), tabindex: '0',
        d: 'M' + xs + ' ' + ys + ' C' + xs + ' ' + (ys - 0.5 * dy) + ' ' + xr + ' ' + (yr + rise) + ' ' + xr + ' ' + yr,
        fill: 'none', stroke: ctx.css(rgb), 'stroke-width': w.toFixed(2) });
      if (e.score < 0) path.setAttribute('stroke-dasharray', Math.max(4 * w, 4).toFixed(1) + ' ' + Math.max(2 * w, 2).toFixed(1));
      var text = e.name + ': score ' + ctx.fmt(e.score, 4) + (e.in ? ' (in the circuit)' : '');
      path.setAttribute('aria-label', text);
      hoverable(path, text);
      gEdges.appendChild(path);
    }
    /* the edges of the pool over the slider's |score|, weakest first; their nodes strong */
    function draw() {
      var k = Math.min(pool.length - 1, +slider.value), thr = pool.length ? pool[k].abs : Infinity;
      var shown = pool.filter(function (e) { return e.abs >= thr; }), used = {}, touched = {};
      shown.forEach(function (e) { used[e.to + (e.port ? '<' + e.port + '>' : '')] = 1; touched[e.from] = touched[e.to] = 1; });
      [gFaint, gEdges, gNodes].forEach(function (g) { g.textContent = ''; });
      Object.keys(nodes).forEach(function (n) {
        drawNode(n, touched[n] === 1 || (graph.nodes[n] && graph.nodes[n].in_graph === true), used);
      });
      shown.slice().reverse().forEach(drawEdge);
      svg.setAttribute('data-edges', String(shown.length));
      svg.setAttribute('aria-label', 'circuit graph: ' + shown.length + ' edges with |score| at least ' + ctx.fmt(thr, 4));
      count.textContent = pool.length ? '|score| ≥ ' + ctx.fmt(thr, 4) + ': ' + shown.length + ' of ' + pool.length +
        (only ? ' circuit edges shown' : ' strongest edges shown') : 'no edge';
    }
    function setPool() {
      pool = only ? inCircuit : edges.slice(0, POOL_MAX);
      maxAbs = pool.length && pool[0].abs > 0 ? pool[0].abs : 1;
      slider.max = String(Math.max(0, pool.length - 1));
      slider.value = slider.max;
      slider.disabled = pool.length < 2;
      draw();
    }
    slider.addEventListener('input', draw);

    /* a head's attention pattern for the folder's prompt: the file's packed or nested form */
    var A = att ? ctx.unpack(att.attention) : null;
    function showPattern(name) {
      var p = nodes[name], names = att ? att.attention_head_names || [] : [], k = names.indexOf(name);
      if (k < 0 && p) k = names.indexOf('L' + p.l + 'H' + p.h);
      patternBox.textContent = '';
      if (!A || k < 0) {
        patternBox.appendChild(ctx.el('p', { cls: 'status', text: name + ': this folder holds no attention pattern for it' }));
        return;
      }
      if (ctx.select && p) ctx.select(p.l, p.h, 'head');
      patternBox.appendChild(ctx.el('h3', { text: name + ': attention on the prompt' + (att.title ? ' (' + att.title + ')' : '') }));
      patternBox.appendChild(patternCanvas(ctx, A, k, att, name, probe));
    }

    var controls = ctx.el('div', { cls: 'controls' }, [ctx.el('label', {}, [ctx.el('span', { text: 'threshold' }), slider]), count]);
    if (inCircuit.length && inCircuit.length < edges.length) {
      var box = ctx.el('input', { type: 'checkbox' });
      box.checked = true;
      box.addEventListener('change', function () { only = box.checked; setPool(); });
      controls.appendChild(ctx.el('label', {}, [box, ctx.el('span', { text: 'only the circuit\'s edges (in_graph); ' +
        'unticked: the ' + Math.min(POOL_MAX, edges.length) + ' strongest of ' + edges.length })]));
    }
    setPool();
    var cfg = graph.cfg || {};
    return ctx.el('figure', { cls: 'panel circuitview' }, [
      ctx.el('h3', { text: 'Circuit graph: ' + inCircuit.length + ' of ' + edges.length + ' edges in the circuit' +
        (cfg.n_layers ? ' (' + cfg.n_layers + ' layers x ' + cfg.n_heads + ' heads)' : '') }),
      controls, ctx.el('div', { cls: 'row' }, [ctx.el('div', { cls: 'scroll' }, [svg]), patternBox]), status, legend(ctx, POS, NEG),
      ctx.el('figcaption', { text: 'graph.json in the MIB / EAP-IG format. Nodes: input, a<layer>.h<head>, m<layer> ' +
        '(MLP), logits; layers bottom to top. Hover or focus an edge or node for its score; click a head (or focus it ' +
        'and press Enter) for its attention pattern. Faint nodes have no edge shown.' })]);
  };
})();
