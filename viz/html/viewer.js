/*
 * viz/html/viewer.js -- headscope's offline viewer. Reads the page's JSON
 * (<script id="hs-data">: {"colormaps", "data": {"runs", "cmap"}}, built by
 * viz/viz_html.c) and draws it: attention grids and heads on <canvas> (one
 * T x T image per head, precomputed once, scaled without smoothing), a token
 * view (hover or focus a token: its attention row as shading and lines, the
 * numbers beside it), bars, matrices, the circuit's verdicts and evidence
 * (viewer_report.js, hsCircuitReport), and a found circuit's graph
 * (viewer_graph.js, hsCircuitView); bars, matrices and line plots are
 * viewer_figs.js (hsFigures).
 * Plain ES2017 for current Chromium and Firefox; no library, no request.
 * Colours come only from the colour tables in the data (viz_color.c's), with
 * the PNG figures' rule: index = round(clamp(t, 0, 1) * 255).
 */
(function () {
  'use strict';

  var tParse = performance.now();
  var PAGE = JSON.parse(document.getElementById('hs-data').textContent);
  var parseMs = performance.now() - tParse;
  var DATA = PAGE.data || { runs: [] };

  /* ---- colour maps (viz_color.c via hs_viz_cmap_rgb) ---- */
  function table(hex) {
    var t = new Uint8Array(hex.length / 2);
    for (var i = 0; i < t.length; i++) t[i] = parseInt(hex.substr(2 * i, 2), 16);
    return t;
  }
  var CMAPS = {};
  ['viridis', 'greys', 'diverging'].forEach(function (n) { CMAPS[n] = table(PAGE.colormaps[n]); });
  var MASKED = table(PAGE.colormaps.masked);
  var ATT_MAP = CMAPS[DATA.cmap] || CMAPS.viridis;
  /* the bar chart's colours: viz_layout.c draws bars with diverging entries 220 (+) and 35 (-) */
  var BAR_POS = rgbAt(CMAPS.diverging, 220), BAR_NEG = rgbAt(CMAPS.diverging, 35);

  function cindex(t) {
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    return Math.round(t * 255);
  }
  function rgbAt(map, i) { return [map[3 * i], map[3 * i + 1], map[3 * i + 2]]; }
  function css(rgb) { return 'rgb(' + rgb[0] + ', ' + rgb[1] + ', ' + rgb[2] + ')'; }
  function ink(rgb) { return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140 ? '#000' : '#fff'; }
  /* a word from the data (a token, a label) as the page shows it: isolated
     (U+2068 FIRST STRONG ISOLATE ... U+2069 POP DIRECTIONAL ISOLATE), so a
     word holding a bidi control (U+202E) or right-to-left letters never
     reorders the numbers and words around it, in text, titles, canvases and
     SVG alike (Unicode Bidirectional Algorithm, UAX #9, rules X5a-X6a) */
  function whole(t) { return '\u2068' + t + '\u2069'; }
  /* ... and shown as the figures show labels: PAGE.shown holds the display
     form viz_html.c made with the figures' own function (vz_display_label)
     of every short string of the data it changes (`<|endoftext|>` as ⟨bos⟩);
     past HS_VIZ_MAX_LABEL code points the first ones and "…"; titles hold it
     whole (whole), the data is never changed */
  var MAX_LABEL = PAGE.max_label || 24, SHOWN = PAGE.shown || {};
  function short(t) {
    if (Object.prototype.hasOwnProperty.call(SHOWN, String(t))) return SHOWN[String(t)];
    var cp = Array.from(String(t));
    return cp.length > MAX_LABEL ? cp.slice(0, MAX_LABEL - 1).join('') + '…' : String(t);
  }
  function word(t) { return whole(short(t)); }
  /* a number as the page writes it: a negative one with U+2212 (the figures' minus), never ASCII "-" */
  function fmt(v, d) {
    return v === null || v === undefined ? '–' : Number(v).toFixed(d === undefined ? 3 : d).replace('-', '\u2212');
  }
  /* a signed value as the figures write it (viz's vz_minus_sign): "+" or U+2212, none on a value that rounds to 0 */
  function signed(v, d) {
    var t = fmt(v, d);
    if (/^\u2212?0(\.0+)?$/.test(t)) return t.replace('\u2212', '');
    return (v > 0 ? '+' : '') + t;
  }

  /* ---- small DOM helpers ---- */
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  var TIP = document.getElementById('hs-tip');
  function tip(text, x, y) {
    if (text === null) { TIP.hidden = true; return; }
    TIP.textContent = text;
    TIP.hidden = false;
    /* no layout read here: left of the pointer on the right half of the window */
    var right = x > window.innerWidth / 2;
    TIP.style.left = right ? 'auto' : (x + 14) + 'px';
    TIP.style.right = right ? (window.innerWidth - x + 14) + 'px' : 'auto';
    TIP.style.top = (y + 14) + 'px';
  }
  /* moves cur {r, c} inside R x C by an arrow key; true (and the key is
     consumed) when the key was an arrow */
  function arrowKey(ev, cur, R, C) {
    var k = ev.key;
    if (k === 'ArrowUp') cur.r = Math.max(0, cur.r - 1);
    else if (k === 'ArrowDown') cur.r = Math.min(R - 1, cur.r + 1);
    else if (k === 'ArrowLeft') cur.c = Math.max(0, cur.c - 1);
    else if (k === 'ArrowRight') cur.c = Math.min(C - 1, cur.c + 1);
    else return false;
    ev.preventDefault();
    return true;
  }
  /* runs fn at most once per animation frame with the latest argument */
  function perFrame(fn) {
    var pending = null, queued = false;
    return function (arg) {
      pending = arg;
      if (queued) return;
      queued = true;
      requestAnimationFrame(function () { queued = false; fn(pending); });
    };
  }
  /* the cell under a figure's keyboard cursor, framed in the focus colour
     (viewer.css) while the figure has the focus */
  var FOCUS = '#f39c12';
  function cursorFrame(g, x, y, cell) {
    g.strokeStyle = FOCUS;
    g.lineWidth = 2;
    g.strokeRect(x - 1, y - 1, cell + 2, cell + 2);
  }
  /* redraws a figure's canvas when it gains or loses the focus */
  function onFocusChange(c, draw) {
    c.addEventListener('focus', function () { draw(); });
    c.addEventListener('blur', function () { draw(); });
  }
  function canvas(w, h, label) {
    var c = el('canvas', { tabindex: '0', role: 'img', 'aria-label': label });
    var dpr = window.devicePixelRatio || 1;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    c.style.width = w + 'px';
    c.style.height = h + 'px';
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { c: c, g: g };
  }

  /* ---- attention tensors ---- */
  /* {H, T, a: Float32Array [H*T*T]} from the JSON form or the page's packed form */
  function unpack(att) {
    if (Array.isArray(att)) {
      var H0 = att.length, T0 = att[0].length, a0 = new Float32Array(H0 * T0 * T0);
      for (var h = 0; h < H0; h++)
        for (var d = 0; d < T0; d++) a0.set(att[h][d], (h * T0 + d) * T0);
      return { H: H0, T: T0, a: a0 };
    }
    var H = att.shape[0], T = att.shape[1];
    var bin = atob(att.base64), n = bin.length, bytes = new Uint8Array(n);
    for (var i = 0; i < n; i++) bytes[i] = bin.charCodeAt(i);
    var a = new Float32Array(H * T * T), k = 0;
    var le = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;
    /* little-endian machines (all current ones) view the bytes directly */
    var src = le ? new Float32Array(bytes.buffer) : null, dv = le ? null : new DataView(bytes.buffer);
    for (var hh = 0; hh < H; hh++)
      for (var dd = 0; dd < T; dd++) {
        var m = att.causal ? dd + 1 : T, base = (hh * T + dd) * T;
        if (src) a.set(src.subarray(k, k + m), base);
        else for (var s = 0; s < m; s++) a[base + s] = dv.getFloat32(4 * (k + s), true);
        k += m;
      }
    return { H: H, T: T, a: a };
  }

  /* A T x T offscreen canvas of one pattern (causal cells masked), the PNG figures' colours. */
  function patternImage(a, off, T, causal) {
    var c = document.createElement('canvas');
    c.width = T;
    c.height = T;
    var g = c.getContext('2d'), img = g.createImageData(T, T), px = img.data;
    for (var d = 0; d < T; d++)
      for (var s = 0; s < T; s++) {
        var p = 4 * (d * T + s);
        if (causal && s > d) { px[p] = MASKED[0]; px[p + 1] = MASKED[1]; px[p + 2] = MASKED[2]; }
        else {
          var i = 3 * cindex(a[off + d * T + s]);
          px[p] = ATT_MAP[i]; px[p + 1] = ATT_MAP[i + 1]; px[p + 2] = ATT_MAP[i + 2];
        }
        px[p + 3] = 255;
      }
    g.putImageData(img, 0, 0);
    return c;
  }

  function colourBar(map, lo, hi, label) {
    var w = 160, cb = canvas(w + 60, 30, label + ': colour bar from ' + lo + ' to ' + hi);
    cb.c.removeAttribute('tabindex');
    for (var x = 0; x < w; x++) {
      cb.g.fillStyle = css(rgbAt(map, cindex(x / (w - 1))));
      cb.g.fillRect(30 + x, 2, 1, 12);
    }
    cb.g.fillStyle = '#333';
    cb.g.font = '11px sans-serif';
    cb.g.textAlign = 'center';
    [0, 0.5, 1].forEach(function (t) { cb.g.fillText(fmt(lo + t * (hi - lo), 2), 30 + t * (w - 1), 27); });
    return el('div', { cls: 'legend' }, [el('span', { text: label }), cb.c]);
  }

  /* ---- the attention view of one run (inspect's attention_grid) ---- */
  /* which model a folder's patterns are of: its index's config (every field), else
     the attention file's layers x heads; folders of different models are never
     compared head for head */
  function modelKey(run, cfg) {
    var c = (run.index && run.index.config) || cfg || {};
    return JSON.stringify(Object.keys(c).sort().map(function (k) { return [k, c[k]]; }));
  }
  function modelName(v) {
    var idx = v.run.index || {}, base = idx.model ? String(idx.model).split('/').filter(Boolean).pop() : 'model';
    return base + ' (' + v.L + ' layers x ' + v.H + ' heads)';
  }
  /* chosen: per model, the head last selected in a view of it {mode, layer, name},
     which its compare panels show by name until a head is pinned */
  var SHARED = { views: [], layer: 0, head: 0, mode: 'head', pinned: null, chosen: {} };

  function AttentionView(run, file) {
    var A = unpack(file.attention);
    var names = file.attention_head_names || [];
    var cfg = file.config || {};
    var grid = cfg.n_heads && A.H % cfg.n_heads === 0 && names[0] === 'L0H0';
    var H = grid ? cfg.n_heads : A.H;
    this.L = A.H / H; this.H = H; this.T = A.T; this.A = A;
    /* not every head of the model (the circuit's named heads, sentences A and B):
       one row of patterns under their own names, no layer mean */
    this.named = !grid && names.length === A.H;
    this.names = names; this.tokens = file.tokens;
    this.show = file.tokens.map(word); /* as displayed */
    this.full = file.tokens.map(whole); /* in titles */
    this.causal = file.attention.causal !== false;
    /* a cropped pattern (inspect's window) starts at first_position */
    this.first = typeof file.first_position === 'number' ? file.first_position : 0;
    var q = typeof file.query_position === 'number' ? file.query_position - this.first : A.T - 1;
    this.dest = Math.max(0, Math.min(A.T - 1, q));
    this.run = run;
    this.model = modelKey(run, cfg);
    var T = A.T, TT = T * T;
    this.images = [];
    for (var k = 0; k < A.H; k++) this.images.push(patternImage(A.a, k * TT, T, this.causal));
    this.means = [];
    for (var l = 0; l < this.L; l++) {
      var m = new Float32Array(TT);
      for (var h = 0; h < H; h++) {
        var off = (l * H + h) * TT;
        for (var q = 0; q < TT; q++) m[q] += A.a[off + q];
      }
      for (var q2 = 0; q2 < TT; q2++) m[q2] /= H;
      this.means.push({ a: m, img: patternImage(m, 0, T, this.causal) });
    }
    this.root = el('div', { cls: 'attview' });
    this.buildGrid();
    this.buildHead();
    this.buildTokens();
    SHARED.views.push(this);
    this.update();
  }
  AttentionView.prototype.headName = function (l, h) {
    return this.names[l * this.H + h] || ('L' + l + 'H' + h);
  };
  /* the index of head NAME ("L1H1") in this view's patterns, or -1 */
  AttentionView.prototype.find = function (name) {
    if (this.named) return this.names.indexOf(name);
    var m = /^L(\d+)H(\d+)$/.exec(name);
    return m && +m[1] < this.L && +m[2] < this.H ? +m[1] * this.H + +m[2] : -1;
  };
  /* the pattern shown: {a, off, name} for the selected head or its layer's mean;
     a compare panel's (pin) is matched by name in views of one model: the pinned
     head, else the head last selected in a view of this model, else the first
     folder's selected head (this.ref), and is {missing: true, name} where this
     folder lacks that head (never the head at the same position) */
  AttentionView.prototype.current = function (pin) {
    var l = SHARED.layer, h = SHARED.head, mode = SHARED.mode, P = SHARED.pinned;
    if (pin && !(P && P.model === this.model))
      P = SHARED.chosen[this.model] || (this.ref ? { mode: mode, layer: Math.min(l, this.ref.L - 1),
        name: this.ref.current().name } : null);
    if (pin && P) {
      if (P.mode === 'mean' && !this.named && P.layer < this.L)
        return { a: this.means[P.layer].a, off: 0, img: this.means[P.layer].img, name: 'L' + P.layer + ' mean of ' + this.H + ' heads' };
      var kp = P.mode === 'mean' ? -1 : this.find(P.name);
      if (kp < 0) return { missing: true, name: P.mode === 'mean' ? 'L' + P.layer + ' mean' : P.name };
      return { a: this.A.a, off: kp * this.T * this.T, img: this.images[kp], name: this.names[kp] || P.name };
    }
    if (l >= this.L) l = this.L - 1;
    if (h >= this.H) h = this.H - 1;
    if (mode === 'mean')
      return { a: this.means[l].a, off: 0, img: this.means[l].img, name: 'L' + l + ' mean of ' + this.H + ' heads' };
    var k = l * this.H + h;
    return { a: this.A.a, off: k * this.T * this.T, img: this.images[k], name: this.headName(l, h) };
  };
  AttentionView.prototype.value = function (cur, d, s) { return cur.a[cur.off + d * this.T + s]; };

  AttentionView.prototype.buildGrid = function () {
    var self = this, L = this.L, H = this.H;
    /* thumbnails fit ~640 px on the longer side, so the grid and one head sit side by side */
    var gap = 4, s = Math.max(28, Math.min(90, Math.floor(640 / Math.max(H, L)) - gap));
    var ml = this.named ? 4 : 30, mt = this.named ? 32 : 18;
    if (this.named) gap = 12;
    this.gs = { s: s, gap: gap, ml: ml, mt: mt };
    var w = ml + H * (s + gap), h = mt + L * (s + gap);
    var what = this.named ? H + ' patterns: ' + this.names.join(', ') : L + ' layers x ' + H + ' heads of attention patterns';
    var cv = canvas(w, h, 'grid of ' + what);
    cv.c.className = 'grid';
    cv.c.setAttribute('data-thumb', s);
    this.grid = cv;
    var status = el('p', { cls: 'status', 'aria-live': 'polite' });
    this.gridStatus = status;
    function at(ev) {
      var r = cv.c.getBoundingClientRect(), x = ev.clientX - r.left - ml, y = ev.clientY - r.top - mt;
      var hh = Math.floor(x / (s + gap)), ll = Math.floor(y / (s + gap));
      if (hh < 0 || ll < 0 || hh >= H || ll >= L) return null;
      var fx = (x - hh * (s + gap)) / s, fy = (y - ll * (s + gap)) / s;
      if (fx >= 1 || fy >= 1) return null;
      return { l: ll, h: hh, d: Math.floor(fy * self.T), s: Math.floor(fx * self.T) };
    }
    var hover = perFrame(function (ev) {
      var p = at(ev);
      if (!p) { tip(null); return; }
      var k = (p.l * H + p.h) * self.T * self.T, v = self.A.a[k + p.d * self.T + p.s];
      var masked = self.causal && p.s > p.d;
      tip(self.headName(p.l, p.h) + ' · ' + self.show[p.d] + ' (' + (p.d + self.first) + ') → ' +
          self.show[p.s] + ' (' + (p.s + self.first) + '): ' + (masked ? 'masked' : fmt(v)), ev.clientX, ev.clientY);
    });
    cv.c.addEventListener('mousemove', hover);
    cv.c.addEventListener('mouseleave', function () { tip(null); });
    cv.c.addEventListener('click', function (ev) {
      var p = at(ev);
      if (p) select(p.l, p.h, 'head', self);
    });
    cv.c.addEventListener('keydown', function (ev) {
      var at = { r: SHARED.layer, c: SHARED.head };
      if (ev.key === 'Enter' || ev.key === ' ') { select(at.r, at.c, 'head', self); ev.preventDefault(); return; }
      if (arrowKey(ev, at, L, H)) select(at.r, at.c, SHARED.mode, self);
    });
    var fig = el('figure', { cls: 'panel fit' }, [
      el('h3', { text: this.named ? 'The patterns (click one)' : 'Every head (layers x heads)' }),
      cv.c, status,
      colourBar(ATT_MAP, 0, 1, 'attention weight'),
      el('figcaption', { text: 'blocks.<l>.attn.hook_pattern of each head, rows = destination (query), ' +
        'columns = source (key); lilac = masked (source after destination). Click or use the arrow keys to choose a head.' })]);
    this.row1 = el('div', { cls: 'row' }, [fig]);
    this.root.appendChild(this.row1);
  };
  AttentionView.prototype.drawGrid = function () {
    var g = this.grid.g, gs = this.gs, L = this.L, H = this.H;
    var w = gs.ml + H * (gs.s + gs.gap), h = gs.mt + L * (gs.s + gs.gap);
    if (!this.gridBase) { /* thumbnails and headers once; a selection redraws only the outline */
      this.gridBase = document.createElement('canvas');
      this.gridBase.width = this.grid.c.width;
      this.gridBase.height = this.grid.c.height;
      var bg = this.gridBase.getContext('2d'), dpr = this.grid.c.width / w;
      bg.setTransform(dpr, 0, 0, dpr, 0, 0);
      this.drawGridBase(bg, gs, L, H);
    }
    g.save();
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, this.grid.c.width, this.grid.c.height);
    g.drawImage(this.gridBase, 0, 0);
    g.restore();
    g.strokeStyle = '#c0392b';
    g.lineWidth = 3;
    var x0 = gs.ml + (SHARED.mode === 'mean' ? 0 : SHARED.head * (gs.s + gs.gap)) - 2;
    var ww = SHARED.mode === 'mean' ? H * (gs.s + gs.gap) - gs.gap + 4 : gs.s + 4;
    g.strokeRect(x0, gs.mt + SHARED.layer * (gs.s + gs.gap) - 2, ww, gs.s + 4);
    var cur = this.current();
    this.grid.c.setAttribute('aria-label', 'grid of ' + (this.named ? H + ' patterns (' + this.names.join(', ') + ')'
      : L + ' layers x ' + H + ' heads') +
      '; selected ' + cur.name +
      '. Arrow keys move, Enter selects.');
    this.gridStatus.textContent = 'selected: ' + cur.name;
  };
  AttentionView.prototype.drawGridBase = function (g, gs, L, H) {
    g.imageSmoothingEnabled = false;
    g.fillStyle = '#333';
    g.font = '12px sans-serif';
    g.textAlign = 'center';
    for (var hh = 0; hh < H; hh++) {
      var x = gs.ml + hh * (gs.s + gs.gap) + gs.s / 2;
      if (!this.named) { g.fillText('H' + hh, x, 13); continue; }
      /* a name such as "L1H2 induction": the head on the first line, the rest below */
      var nm = this.names[hh], sp = nm.indexOf(' ');
      g.fillText(sp < 0 ? nm : nm.slice(0, sp), x, 12);
      if (sp >= 0) g.fillText(nm.slice(sp + 1), x, 26);
    }
    g.textAlign = 'right';
    for (var l = 0; l < L; l++) {
      if (!this.named) g.fillText('L' + l, gs.ml - 6, gs.mt + l * (gs.s + gs.gap) + gs.s / 2 + 4);
      for (var h2 = 0; h2 < H; h2++)
        g.drawImage(this.images[l * H + h2], gs.ml + h2 * (gs.s + gs.gap), gs.mt + l * (gs.s + gs.gap), gs.s, gs.s);
    }
  };

  /* the large pattern with token labels */
  AttentionView.prototype.headCanvas = function (container, pin) {
    var self = this, T = this.T;
    var cell = Math.max(2, Math.min(24, Math.floor(560 / T)));
    var every = Math.max(1, Math.ceil(13 / cell));
    var lw = 0, probe = document.createElement('canvas').getContext('2d');
    probe.font = '12px sans-serif';
    this.show.forEach(function (t, i) { lw = Math.max(lw, probe.measureText((i + self.first) + ' ' + t).width); });
    var ml = Math.ceil(lw) + 10, mt = Math.ceil(lw) + 10, w = ml + T * cell + 4, h = mt + T * cell + 4;
    var cv = canvas(w, h, 'attention pattern');
    cv.c.className = 'head';
    cv.c.setAttribute('data-x0', ml);
    cv.c.setAttribute('data-y0', mt);
    cv.c.setAttribute('data-cell', cell);
    var status = el('p', { cls: 'status', 'aria-live': 'polite' });
    var cursor = { r: this.dest, c: 0 }, said = null; /* said: the cell the status names */
    function draw() {
      var cur = self.current(pin), g = cv.g;
      if (said) say(said.d, said.s, null); /* the cell of the head shown now */
      g.clearRect(0, 0, w, h);
      cv.c.setAttribute('data-name', cur.name);
      cv.c.setAttribute('data-missing', cur.missing ? '1' : '0');
      if (cur.missing) {
        g.fillStyle = '#222';
        g.font = '14px sans-serif';
        g.textAlign = 'center';
        g.fillText(cur.name + ': not in this folder', w / 2, h / 2);
        cv.c.setAttribute('aria-label', cur.name + ': not in this folder');
        return;
      }
      g.imageSmoothingEnabled = false;
      g.drawImage(cur.img, ml, mt, T * cell, T * cell);
      g.fillStyle = '#222';
      g.font = '12px sans-serif';
      g.textAlign = 'right';
      for (var i = 0; i < T; i += every) g.fillText((i + self.first) + ' ' + self.show[i], ml - 4, mt + i * cell + cell / 2 + 4);
      g.save();
      g.translate(ml, mt - 4);
      g.rotate(-Math.PI / 2);
      g.textAlign = 'left';
      for (var j = 0; j < T; j += every) g.fillText((j + self.first) + ' ' + self.show[j], 0, j * cell + cell / 2 + 4);
      g.restore();
      if (!pin) {
        g.strokeStyle = '#c0392b';
        g.lineWidth = 2;
        g.strokeRect(ml - 1, mt + self.dest * cell - 1, T * cell + 2, cell + 2);
      }
      if (document.activeElement === cv.c) cursorFrame(g, ml + cursor.c * cell, mt + cursor.r * cell, cell);
      cv.c.setAttribute('aria-label', cur.name + ': attention pattern over ' + T + ' tokens, rows = destination, ' +
        'columns = source. Focus and use the arrow keys to read cells.');
    }
    function say(d, s, ev) {
      var cur = self.current(pin), masked = self.causal && s > d;
      if (cur.missing) { status.textContent = cur.name + ': not in this folder'; said = null; return; }
      var text = cur.name + ' · ' + self.show[d] + ' (' + (d + self.first) + ') → ' + self.show[s] + ' (' +
        (s + self.first) + '): ' + (masked ? 'masked' : fmt(self.value(cur, d, s)));
      status.textContent = text;
      said = { d: d, s: s };
      if (ev) tip(text, ev.clientX, ev.clientY);
    }
    function at(ev) {
      var r = cv.c.getBoundingClientRect();
      var s = Math.floor((ev.clientX - r.left - ml) / cell), d = Math.floor((ev.clientY - r.top - mt) / cell);
      return d >= 0 && s >= 0 && d < T && s < T ? { d: d, s: s } : null;
    }
    cv.c.addEventListener('mousemove', perFrame(function (ev) {
      var p = at(ev);
      if (p) say(p.d, p.s, ev); else tip(null);
    }));
    cv.c.addEventListener('mouseleave', function () { tip(null); });
    cv.c.addEventListener('click', function (ev) {
      var p = at(ev);
      if (p && !pin) self.setDest(p.d);
    });
    cv.c.addEventListener('keydown', function (ev) {
      if ((ev.key === 'Enter' || ev.key === ' ') && !pin) { self.setDest(cursor.r); ev.preventDefault(); return; }
      if (arrowKey(ev, cursor, T, T)) { say(cursor.r, cursor.c, null); draw(); }
    });
    onFocusChange(cv.c, draw);
    container.appendChild(el('div', { cls: 'scroll' }, [cv.c]));
    container.appendChild(status);
    return draw;
  };

  AttentionView.prototype.buildHead = function () {
    var self = this;
    var title = el('h3', { text: 'One head' });
    var modeHead = el('button', { 'aria-pressed': 'true', text: 'per head' });
    var modeMean = el('button', { 'aria-pressed': 'false', text: 'head-averaged per layer' });
    var pinBtn = el('button', { text: 'pin this head' });
    modeHead.addEventListener('click', function () { select(SHARED.layer, SHARED.head, 'head', self); });
    modeMean.addEventListener('click', function () { select(SHARED.layer, SHARED.head, 'mean', self); });
    pinBtn.addEventListener('click', function () {
      /* by name, for the folders of this view's model (the head shown here) */
      SHARED.pinned = { layer: Math.min(SHARED.layer, self.L - 1), mode: SHARED.mode, model: self.model,
        name: self.current().name };
      SHARED.views.forEach(function (v) { v.update(); });
    });
    this.modeButtons = [modeHead, modeMean];
    var fig = el('figure', { cls: 'panel fit' }, [title,
      el('div', { cls: 'controls' }, [el('span', { text: 'show:' }), modeHead, this.named ? null : modeMean].concat(
        DATA.runs.length > 1 ? [pinBtn] : []))]);
    this.headTitle = title;
    this.drawHead = this.headCanvas(fig, false);
    fig.appendChild(el('figcaption', { text: 'Click a row (or focus the figure and press Enter) to choose the ' +
      'destination token the token view shows; the outlined row is that token.' }));
    this.row1.appendChild(fig);
  };

  /* BertViz's head view: destination tokens left, source tokens right, lines */
  AttentionView.prototype.buildTokens = function () {
    var self = this, T = this.T, rowH = 20;
    var left = el('div', { cls: 'tokcol dest', role: 'listbox', 'aria-label': 'destination tokens' });
    var right = el('div', { cls: 'tokcol src', 'aria-label': 'source tokens with the attention they receive' });
    this.srcEls = [];
    this.destEls = [];
    for (var i = 0; i < T; i++) {
      /* one Tab stop for the list (a roving tabindex: the token last
         focused, at first the chosen one); arrows, Home and End move in it */
      var b = el('button', { cls: 'tok', 'data-pos': String(i), role: 'option', 'aria-selected': 'false',
        title: (i + this.first) + ' ' + this.full[i], tabindex: i === this.dest ? '0' : '-1' },
        [el('span', { cls: 'pos', text: String(i + this.first) }), el('bdi', { text: short(this.tokens[i]) })]);
      (function (d) {
        b.addEventListener('mouseenter', function () { self.hoverDest(d); });
        b.addEventListener('focus', function () {
          self.destEls.forEach(function (e, k) { e.tabIndex = k === d ? 0 : -1; });
          self.hoverDest(d);
        });
        b.addEventListener('click', function () { self.setDest(d); });
        b.addEventListener('keydown', function (ev) {
          var k = ev.key, n = k === 'ArrowDown' ? d + 1 : k === 'ArrowUp' ? d - 1 : k === 'Home' ? 0 : k === 'End' ? T - 1 : -1;
          if (n >= 0 && n < T) { self.destEls[n].focus(); ev.preventDefault(); }
        });
      })(i);
      left.appendChild(b);
      this.destEls.push(b);
      var sp = el('span', { cls: 'tok', 'data-pos': String(i) },
        [el('span', { text: (i + this.first) + ' ' + this.show[i] }), el('span', { cls: 'w' })]);
      right.appendChild(sp);
      this.srcEls.push(sp);
    }
    left.addEventListener('mouseleave', function () { self.hoverDest(null); });
    var lines = canvas(160, T * rowH, 'lines from the destination token to each source token, ' +
      'opacity = attention weight');
    lines.c.removeAttribute('tabindex');
    this.lines = lines;
    this.tokStatus = el('p', { cls: 'status tall', 'aria-live': 'polite' });
    var fig = el('figure', { cls: 'panel' }, [
      el('h3', { text: 'Tokens: hover or focus a destination token (left)' }),
      this.tokStatus,
      el('div', { cls: 'scroll' }, [el('div', { cls: 'tokview' }, [left, lines.c, right])]),
      el('figcaption', { text: 'The right column is shaded by the chosen token\'s attention row (same ' +
        'colour map as the figures) and shows each weight; line opacity is the weight.' })]);
    this.row1.appendChild(fig);
  };
  /* shows destination d's row (null = back to the chosen destination) */
  AttentionView.prototype.hoverDest = function (d) {
    this.showRow(d === null ? this.dest : d);
  };
  AttentionView.prototype.setDest = function (d) {
    this.dest = d;
    this.update();
  };
  AttentionView.prototype.showRow = function (d) {
    var cur = this.current(), T = this.T, g = this.lines.g, rowH = 20, top = [];
    for (var i = 0; i < T; i++) {
      this.destEls[i].classList.toggle('active', i === d);
      this.destEls[i].setAttribute('aria-selected', i === d ? 'true' : 'false');
    }
    g.clearRect(0, 0, 160, T * rowH);
    for (var s = 0; s < T; s++) {
      var e = this.srcEls[s], masked = this.causal && s > d;
      if (masked) {
        e.style.background = css(MASKED);
        e.style.color = '#555';
        e.lastChild.textContent = '';
        e.removeAttribute('data-w');
        e.setAttribute('title', this.full[s] + ': masked');
        continue;
      }
      var v = this.value(cur, d, s), rgb = rgbAt(ATT_MAP, cindex(v));
      e.style.background = css(rgb);
      e.style.color = ink(rgb);
      e.lastChild.textContent = fmt(v, 2);
      e.setAttribute('data-w', String(v));
      e.setAttribute('title', this.full[d] + ' → ' + this.full[s] + ': ' + fmt(v));
      top.push([v, s]);
      if (v > 0.01) {
        g.strokeStyle = 'rgba(192, 57, 43, ' + Math.min(1, v).toFixed(3) + ')';
        g.lineWidth = 1 + 3 * v;
        g.beginPath();
        g.moveTo(2, d * rowH + rowH / 2);
        g.lineTo(158, s * rowH + rowH / 2);
        g.stroke();
      }
    }
    top.sort(function (x, y) { return y[0] - x[0]; });
    this.tokStatus.textContent = cur.name + ', from ' + this.show[d] + ' (' + (d + this.first) + '): ' +
      top.slice(0, 3).map(function (p) { return this.show[p[1]] + ' (' + (p[1] + this.first) + ') ' + fmt(p[0], 2); }, this).join(', ');
    this.shownDest = d;
  };
  AttentionView.prototype.update = function () {
    this.drawGrid();
    this.drawHead();
    this.headTitle.textContent = 'One head: ' + this.current().name;
    this.modeButtons[0].setAttribute('aria-pressed', SHARED.mode === 'head' ? 'true' : 'false');
    this.modeButtons[1].setAttribute('aria-pressed', SHARED.mode === 'mean' ? 'true' : 'false');
    this.showRow(this.dest);
    if (this.drawPinned) this.drawPinned();
  };
  /* a head (or a layer's mean) selected in view `from` (default: the first) */
  function select(l, h, mode, from) {
    SHARED.layer = l;
    SHARED.head = h;
    SHARED.mode = mode;
    var v = from || SHARED.views[0];
    if (v) SHARED.chosen[v.model] = { mode: mode, layer: Math.min(l, v.L - 1), name: v.current().name };
    SHARED.views.forEach(function (v) { v.update(); });
  }

  /* the figures of the other files (viewer_figs.js, hsFigures) */
  var FIGS = hsFigures({ el: el, css: css, fmt: fmt, signed: signed, short: short, whole: whole, word: word,
    tip: tip, canvas: canvas, CMAPS: CMAPS, BAR_NEG: BAR_NEG, BAR_POS: BAR_POS, perFrame: perFrame, arrowKey: arrowKey,
    cursorFrame: cursorFrame, onFocusChange: onFocusChange, cindex: cindex, rgbAt: rgbAt, colourBar: colourBar,
    ATT_MAP: ATT_MAP, MASKED: MASKED, DATA: DATA, PAGE: PAGE, table: table });
  var bars = FIGS.bars, predictions = FIGS.predictions, matrix = FIGS.matrix, lines = FIGS.lines;

  /* ---- one run (one output folder) ---- */
  /* the same model, as far as two configs both say: layers and heads, and
     d_model, d_vocab, n_ctx where both name them */
  function sameModel(a, b) {
    if (!a || !b || !a.n_layers || !a.n_heads) return false;
    return ['n_layers', 'n_heads', 'd_model', 'd_vocab', 'n_ctx'].every(function (k) {
      return a[k] === undefined || b[k] === undefined || a[k] === b[k];
    }) && b.n_layers !== undefined && b.n_heads !== undefined;
  }
  /* the first attention file (with head names and tokens) of any folder on
     the page whose model is CFG's (a graph's cfg) */
  function attentionOf(cfg) {
    for (var i = 0; i < DATA.runs.length; i++) {
      var r = DATA.runs[i], files = r.files || {}, stems = Object.keys(files);
      for (var j = 0; j < stems.length; j++) {
        var a = files[stems[j]];
        if (a && a.attention && a.attention_head_names && a.tokens &&
            sameModel(cfg, (r.index && r.index.config) || a.config)) return a;
      }
    }
    return null;
  }
  function shows(run, stem) {
    var files = (run.index && run.index.files) || [];
    for (var i = 0; i < files.length; i++) if (files[i].file === stem + '.json') return files[i].shows;
    return '';
  }
  function renderRun(run, app) {
    var sec = el('section', { cls: 'run' });
    var idx = run.index || {};
    var sent = idx.sentence || '', words = sent.split(' ');
    if (words.length > 24) sent = words.slice(0, 24).join(' ') + ' … (' + (idx.tokens ? idx.tokens.length : words.length) + ' tokens)';
    sec.appendChild(el('h2', { text: run.command + ' · ' + run.dir + (sent ? ' · “' + word(sent) + '”' : ''), title: word(idx.sentence || '') }));
    if (idx.model) sec.appendChild(el('p', { cls: 'sub', text: 'model ' + idx.model + (idx.config ?
      ' (' + idx.config.n_layers + ' layers x ' + idx.config.n_heads + ' heads, d_model ' + idx.config.d_model + ')' : '') }));
    var files = run.files || {}, stems = Object.keys(files), figs = {}, rest = el('div', { cls: 'row' });
    /* a circuit (graph.json, viewer_graph.js) with the attention of the folder's prompt */
    stems.forEach(function (stem) {
      var f = files[stem];
      if (!f || !f.cfg || !f.nodes || !f.edges || Array.isArray(f.nodes)) return;
      var att = null;
      stems.forEach(function (s2) { var a = files[s2]; if (!att && a.attention && a.attention_head_names && a.tokens) att = a; });
      if (!att) att = attentionOf(f.cfg); /* another folder on the page, of the same model */
      sec.appendChild(hsCircuitView(f, att, { el: el, tip: tip, fmt: fmt, word: word, css: css, rgbAt: rgbAt, CMAPS: CMAPS,
        unpack: unpack, canvas: canvas, patternImage: patternImage,
        select: function (l, h, m) { if (SHARED.views.length) select(l, h, m); } }));
    });
    var view = null;
    stems.forEach(function (stem) {
      var f = files[stem];
      if (f.attention && !view) {
        view = new AttentionView(run, f);
        run.view = view;
        sec.appendChild(view.root);
      }
    });
    var side = el('div', { cls: 'row' });
    if (files.predictions && files.predictions.predictions) side.appendChild(predictions(files.predictions));
    stems.forEach(function (stem) {
      var f = files[stem];
      if (f.attention || stem === 'predictions' || stem === 'report') return;
      if (Array.isArray(f.x) && Array.isArray(f.panels)) {
        rest.appendChild(lines(f, shows(run, stem)));
      } else if (Array.isArray(f.values) && Array.isArray(f.labels)) {
        (stem.indexOf('dla') === 0 ? side : rest).appendChild(bars(f, shows(run, stem)));
      } else if (Array.isArray(f.values) && Array.isArray(f.values[0])) {
        var fig = matrix(stem, f, shows(run, stem));
        figs[stem] = { file: f, fig: fig };
        rest.appendChild(fig);
      }
    });
    if (side.children.length) sec.appendChild(side);
    if (files.report && files.report.verdict)
      sec.appendChild(hsCircuitReport(files.report, figs, { el: el, fmt: fmt, css: css, rgbAt: rgbAt, cindex: cindex,
        ink: ink, short: short, whole: whole, ATT_MAP: ATT_MAP }));
    if (rest.children.length) {
      sec.appendChild(el('h2', { text: 'Figures' }));
      sec.appendChild(rest);
    }
    app.appendChild(sec);
  }

  /* two or more sentences of one model: the pinned head side by side, matched
     by name; folders of another model get their own section, never mixed */
  function renderCompare(app) {
    var views = DATA.runs.map(function (r) { return r.view; }).filter(Boolean), groups = [], byKey = {};
    views.forEach(function (v) {
      if (!byKey[v.model]) { byKey[v.model] = []; groups.push(byKey[v.model]); }
      byKey[v.model].push(v);
    });
    var many = groups.length > 1, at = app.firstChild;
    groups.forEach(function (g) {
      if (g.length > 1) app.insertBefore(compareSection(g, many), at);
    });
    if (many)
      app.insertBefore(el('p', { cls: 'sub note', text: 'These folders hold ' + groups.length + ' different models (' +
        groups.map(function (g) { return modelName(g[0]); }).join('; ') + '): heads are compared only between folders of one model.' }), app.firstChild);
  }
  function compareSection(views, many) {
    var row = el('div', { cls: 'row' });
    var sec = el('section', { cls: 'run compare-model', 'data-model': views[0].model },
      [el('h2', { text: 'Compare sentences' + (many ? ' of ' + modelName(views[0]) : '') + ': the pinned head' }),
      el('p', { cls: 'sub', text: 'Pin a head with “pin this head” below; until then the head last selected is shown. Either is matched by name in each folder.' }), row]);
    views.forEach(function (v) {
      v.ref = views[0];
      var fig = el('figure', { cls: 'panel compare' });
      var cap = el('h3');
      fig.appendChild(cap);
      var draw = v.headCanvas(fig, true);
      v.drawPinned = function () {
        draw();
        var cur = v.current(true);
        cap.textContent = cur.name + (cur.missing ? ' · not in this folder' : '') + ' · ' + v.show.join(' ');
      };
      v.drawPinned();
      row.appendChild(fig);
    });
    return sec;
  }

  var t0 = performance.now();
  var app = document.getElementById('hs-app');
  /* the page names what it is: its title ("headscope view · tired, wet", "headscope inspect · tired") */
  document.getElementById('hs-title').textContent = document.title;
  document.getElementById('hs-sub').textContent = DATA.runs.map(function (r) { return r.dir; }).join(' · ') +
    ' — made by ' + PAGE.generator + '; layers, heads and positions count from 0.';
  DATA.runs.forEach(function (r) { renderRun(r, app); });
  renderCompare(app);
  /* for tests and the bench: readyAt is ms since navigation start */
  window.hsViewer = { ready: true, parseMs: parseMs, renderMs: performance.now() - t0,
    readyAt: performance.now(), views: SHARED.views, select: select };
  document.body.setAttribute('data-ready', '1');
})();
