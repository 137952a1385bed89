/*
 * viz/html/viewer_figs.js -- the viewer's figures of a folder's other files:
 * bars (DLA; values with U+2212), the next-token predictions, matrices on a
 * canvas (hover, arrow keys, a colour bar on the file's colour_scale), and
 * line plots in SVG (timeline, faithfulness curves; log x when x_scale is
 * "log"). viewer.js calls hsFigures(ctx) once with its helpers (ctx: the
 * names below) and draws each file with what it returns.
 */
var hsFigures = function (ctx) {
  'use strict';
  var el = ctx.el, css = ctx.css, fmt = ctx.fmt, signed = ctx.signed, short = ctx.short, whole = ctx.whole, word =
    ctx.word, tip = ctx.tip, canvas = ctx.canvas, CMAPS = ctx.CMAPS, BAR_NEG = ctx.BAR_NEG, BAR_POS = ctx.BAR_POS,
    perFrame = ctx.perFrame, arrowKey = ctx.arrowKey, cursorFrame = ctx.cursorFrame, onFocusChange =
    ctx.onFocusChange, cindex = ctx.cindex, rgbAt = ctx.rgbAt, colourBar = ctx.colourBar, ATT_MAP = ctx.ATT_MAP,
    MASKED = ctx.MASKED, DATA = ctx.DATA, PAGE = ctx.PAGE, table = ctx.table;

  /* ---- bars, predictions, matrices ---- */
  function bars(file, caption) {
    var vals = file.values, labs = file.labels, n = vals.length, m = 0;
    vals.forEach(function (v) { m = Math.max(m, Math.abs(v)); });
    if (!(m > 0)) m = 1;
    var neg = vals.some(function (v) { return v < 0; }), zero = neg ? 50 : 0;
    var dec = Math.max(0, Math.min(4, 2 - Math.floor(Math.log10(m))));
    var g = el('div', { cls: 'bars', role: 'table', 'aria-label': file.title || 'bars' });
    for (var i = 0; i < n; i++) {
      var v = vals[i], w = Math.abs(v) / m * (neg ? 50 : 100);
      var bar = el('div', { cls: 'bar' });
      bar.style.left = (v < 0 ? zero - w : zero) + '%';
      bar.style.width = w + '%';
      bar.style.background = css(v < 0 ? BAR_NEG : BAR_POS);
      var z = el('div', { cls: 'zero' });
      z.style.left = zero + '%';
      g.appendChild(el('div', { cls: 'lab', role: 'rowheader', title: whole(labs[i]) }, [el('bdi', { text: short(labs[i]) })]));
      g.appendChild(el('div', { cls: 'track', title: whole(labs[i]) + ': ' + fmt(v, dec) }, [z, bar]));
      g.appendChild(el('div', { cls: 'val', role: 'cell', text: signed(v, dec) }));
    }
    return el('figure', { cls: 'panel' }, [el('h3', { text: file.title || '' }), g,
      el('figcaption', { text: (file.xlabel ? file.xlabel + '. ' : '') + (caption || '') })]);
  }
  function predictions(file) {
    var t = el('table', {}, [el('caption', { text: 'top predictions at position ' + file.query_position +
      ' (' + word(file.query_token) + ')' }), el('tr', {}, [el('th', { text: 'token' }), el('th', { text: 'probability' }),
      el('th', { text: 'logit' })])]);
    file.predictions.forEach(function (p) {
      t.appendChild(el('tr', {}, [el('td', { title: whole(p.token) }, [el('bdi', { text: short(p.token) })]), el('td', { text: fmt(p.prob, 4) }),
        el('td', { text: fmt(p.logit, 3) })]));
    });
    return el('figure', { cls: 'panel' }, [el('h3', { text: 'Predictions' }), t]);
  }

  /* A matrix heatmap; signed data on the diverging map over [-max|v|, max|v|],
   * non-negative on the attention map from 0 (to 1, or the maximum above 1). */
  function matrix(stem, file, caption) {
    var V = file.values, R = V.length, C = V[0].length, mn = 0, mx = 0;
    V.forEach(function (r) { r.forEach(function (v) { if (v !== null) { mn = Math.min(mn, v); mx = Math.max(mx, v); } }); });
    /* the figure's own scale when its JSON says it (colour_scale), else the
       figures' auto rule: signed data symmetric about 0, non-negative from 0 */
    var cs = file.colour_scale || { cmap: mn < 0 ? 'diverging' : DATA.cmap, range: 'auto' };
    var signed = cs.cmap === 'diverging', lim = Math.max(Math.abs(mn), Math.abs(mx)) || 1;
    var lo = signed ? -lim : 0, hi = signed ? lim : (mx > 0 ? mx : 1), map = CMAPS[cs.cmap] || ATT_MAP;
    if (cs.range === 'fixed') { lo = cs.vmin; hi = cs.vmax; }
    var cell = Math.max(4, Math.min(28, Math.floor(560 / C)));
    var probe = document.createElement('canvas').getContext('2d');
    probe.font = '12px sans-serif';
    var rw = 0, cw = 0, rl = (file.row_labels || []).map(word), cl = (file.col_labels || []).map(word);
    rl.forEach(function (t) { rw = Math.max(rw, probe.measureText(t).width); });
    cl.forEach(function (t) { cw = Math.max(cw, probe.measureText(t).width); });
    var ml = Math.ceil(rw) + 8, mt = Math.ceil(cw) + 8, w = ml + C * cell + 4, h = mt + R * cell + 4;
    var cv = canvas(w, h, (file.title || stem) + ': ' + R + ' x ' + C + ' matrix; focus and use the arrow keys to read values');
    cv.c.id = 'fig-' + stem;
    cv.c.setAttribute('data-x0', ml);
    cv.c.setAttribute('data-y0', mt);
    cv.c.setAttribute('data-cell', cell);
    var g = cv.g, status = el('p', { cls: 'status', 'aria-live': 'polite' }), hl = null;
    function draw() {
      g.clearRect(0, 0, w, h);
      for (var i = 0; i < R; i++)
        for (var j = 0; j < C; j++) {
          var v = V[i][j];
          g.fillStyle = css(v === null ? MASKED : rgbAt(map, cindex((v - lo) / (hi - lo))));
          g.fillRect(ml + j * cell, mt + i * cell, cell, cell);
        }
      g.fillStyle = '#222';
      g.font = '12px sans-serif';
      g.textAlign = 'right';
      var every = Math.max(1, Math.ceil(13 / cell));
      for (var r = 0; r < R; r += every) g.fillText(rl[r], ml - 4, mt + r * cell + cell / 2 + 4);
      g.save();
      g.translate(ml, mt - 4);
      g.rotate(-Math.PI / 2);
      g.textAlign = 'left';
      for (var c = 0; c < C; c += every) g.fillText(cl[c], 0, c * cell + cell / 2 + 4);
      g.restore();
      if (hl) {
        g.strokeStyle = '#c0392b';
        g.lineWidth = 2;
        hl.forEach(function (r) { g.strokeRect(ml - 1, mt + r * cell - 1, C * cell + 2, cell + 2); });
      }
      if (document.activeElement === cv.c) cursorFrame(g, ml + cur.c * cell, mt + cur.r * cell, cell);
    }
    function say(i, j, ev) {
      var v = V[i][j];
      var text = rl[i] + ' · ' + cl[j] + ': ' + (v === null ? 'not reported' : fmt(v));
      status.textContent = text;
      if (ev) tip(text, ev.clientX, ev.clientY);
    }
    var cur = { r: 0, c: 0 };
    cv.c.addEventListener('mousemove', perFrame(function (ev) {
      var r = cv.c.getBoundingClientRect();
      var j = Math.floor((ev.clientX - r.left - ml) / cell), i = Math.floor((ev.clientY - r.top - mt) / cell);
      if (i >= 0 && j >= 0 && i < R && j < C) say(i, j, ev); else tip(null);
    }));
    cv.c.addEventListener('mouseleave', function () { tip(null); });
    cv.c.addEventListener('keydown', function (ev) {
      if (arrowKey(ev, cur, R, C)) { say(cur.r, cur.c, null); draw(); }
    });
    onFocusChange(cv.c, draw);
    draw();
    var fig = el('figure', { cls: 'panel' }, [el('h3', { text: file.title || stem }),
      el('div', { cls: 'scroll' }, [cv.c]), status,
      colourBar(map, lo, hi, signed ? 'signed, 0 = white' : 'value'),
      el('figcaption', { text: [file.ylabel ? 'rows: ' + file.ylabel : '', file.xlabel ? 'columns: ' + file.xlabel : '',
        caption || ''].filter(Boolean).join('. ') })]);
    fig.highlight = function (rows) { hl = rows; draw(); };
    return fig;
  }

  /* Line plots over a shared x ({"x", "panels": [{"title", "ylabel",
   * "series": [{"label", "y"}]}]}, e.g. timeline): one SVG per panel, the
   * static figure's series colours, each point's value on hover/focus. */
  var SERIES = table(PAGE.colormaps.series);
  function lines(file, caption) {
    var NS = 'http://www.w3.org/2000/svg', x = file.x, W = 520, Hh = 180, ml = 50, mr = 110, mt = 8, mb = 30;
    /* "x_scale": "log" (e.g. faithfulness over circuit size): x in decades, ticks at powers of ten */
    var lx = file.x_scale === 'log' ? Math.log10 : function (v) { return v; };
    var xmin = lx(x[0]), xmax = lx(x[x.length - 1]) === xmin ? xmin + 1 : lx(x[x.length - 1]);
    var xticks = [x[0], x[x.length - 1]], mark = typeof file.mark_y === 'number' ? file.mark_y : null;
    if (file.x_scale === 'log')
      for (var e = Math.ceil(xmin - 1e-6), xticks = []; e <= xmax + 1e-6; e++) xticks.push(Math.pow(10, e));
    var box = el('figure', { cls: 'panel' }, [el('h3', { text: file.title || '' })]);
    function sv(tag, attrs) {
      var e = document.createElementNS(NS, tag);
      Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
      return e;
    }
    file.panels.forEach(function (p) {
      var lo = Infinity, hi = -Infinity;
      p.series.forEach(function (s) { s.y.forEach(function (v) { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
      if (mark !== null) { lo = Math.min(lo, mark, 0); hi = Math.max(hi, mark); } /* the figure's y_cover */
      if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
      var pad = 0.05 * (hi - lo); lo -= pad; hi += pad;
      var X = function (v) { return ml + (lx(v) - xmin) / (xmax - xmin) * (W - ml - mr); };
      var Y = function (v) { return mt + (hi - v) / (hi - lo) * (Hh - mt - mb); };
      var svg = sv('svg', { width: W, height: Hh, role: 'img', 'aria-label': (p.title || '') + ': ' + p.series.length + ' lines over ' + (file.xlabel || 'x') });
      svg.appendChild(sv('rect', { x: ml, y: mt, width: W - ml - mr, height: Hh - mt - mb, fill: 'none', stroke: '#888' }));
      [lo + pad, (lo + hi) / 2, hi - pad].forEach(function (v) {
        var t = sv('text', { x: ml - 4, y: Y(v) + 4, 'text-anchor': 'end', 'font-size': 11 });
        t.textContent = fmt(v, 2);
        svg.appendChild(t);
      });
      if (mark !== null) svg.appendChild(sv('line', { x1: ml, x2: W - mr, y1: Y(mark), y2: Y(mark), stroke: '#909090', 'stroke-dasharray': '5 4' }));
      xticks.forEach(function (v) {
        var t = sv('text', { x: X(v), y: Hh - mb + 14, 'text-anchor': 'middle', 'font-size': 11 });
        t.textContent = String(v);
        svg.appendChild(t);
      });
      p.series.forEach(function (s, k) {
        var col = css(rgbAt(SERIES, k % 10)), d = '', up = true;
        s.y.forEach(function (v, i) {
          if (v === null) { up = true; return; }
          d += (up ? 'M' : 'L') + X(x[i]).toFixed(1) + ' ' + Y(v).toFixed(1) + ' ';
          up = false;
          var c = sv('circle', { cx: X(x[i]), cy: Y(v), r: 3, fill: col, tabindex: '0' });
          var t = sv('title', {});
          t.textContent = word(s.label) + ' at ' + (file.xlabel || 'x') + ' ' + x[i] + ': ' + fmt(v);
          c.appendChild(t);
          svg.appendChild(c);
        });
        svg.insertBefore(sv('path', { d: d, fill: 'none', stroke: col, 'stroke-width': 1.5 }), svg.children[1]);
        var lg = sv('text', { x: W - mr + 8, y: mt + 12 + 13 * k, 'font-size': 11, fill: col });
        lg.textContent = short(s.label);
        svg.appendChild(lg);
      });
      box.appendChild(el('h3', { text: p.title || '' }));
      box.appendChild(svg);
    });
    box.appendChild(el('figcaption', { text: [file.xlabel ? 'x: ' + file.xlabel : '', caption || ''].filter(Boolean).join('. ') }));
    return box;
  }

  return { bars: bars, predictions: predictions, matrix: matrix, lines: lines };
};
