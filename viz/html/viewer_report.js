/*
 * viz/html/viewer_report.js -- the viewer's circuit report: a report.json of
 * the Winograd circuit (tasks/circuit.c: verdict {step1, step2, route},
 * held-out accuracy, per-head evidence at position 14) or of the induction
 * circuit (tasks/induction_circuit.c: holds, verdict, criteria, per-head
 * detector scores, K-composition, OV copying, accuracy with the head
 * mean-ablated) as its verdicts and a sortable per-head evidence table; a
 * head's link shows its attention row. Loaded before viewer.js in the page;
 * viewer.js calls hsCircuitReport(report, figs, ctx) with its helpers (ctx)
 * and places the element it returns.
 */
var hsCircuitReport = function (report, figs, ctx) {
  'use strict';
  var el = ctx.el, fmt = ctx.fmt, css = ctx.css, rgbAt = ctx.rgbAt, cindex = ctx.cindex, ink = ctx.ink;
  var short = ctx.short, whole = ctx.whole, ATT_MAP = ctx.ATT_MAP;

  function g(o, path) { return path.reduce(function (x, k) { return x && x[k] !== undefined ? x[k] : null; }, o); }
  function verdictRow(label, holds, reason, applicable) {
    var st = applicable === false ? 'not applicable' : holds ? 'holds' : 'does not hold';
    return el('div', { cls: 'verdict ' + (holds ? 'holds' : 'fails') }, [
      el('b', { text: label + ': ' + st }), el('span', { text: reason || '' })]);
  }
  /* Winograd (tasks/circuit.c): verdict {step1, step2, route}, held-out accuracy, evidence at position 14 */
  function winogradVerdicts(report, box) {
    var v = report.verdict || {};
    /* the route's adjective-key heads, by its rule (circuits/circuit_verdict.c, route_features):
       the weight on the adjective differs between the roles by >= adj_key_diff */
    var akd = g(report, ['thresholds', 'adj_key_diff']);
    function adjKey(h) {
      var a = g(h, ['attention_at_14', 'crosser', 'adjective']), b = g(h, ['attention_at_14', 'crossed', 'adjective']);
      return g(v, ['route', 'features', 'adjective_key']) === true && akd !== null && a !== null && b !== null &&
        Math.abs(a - b) >= akd;
    }
    /* accuracy drops in percentage points, the unit of the verdicts */
    function points(x) { return x === null ? null : 100 * x; }
    [['step 1 (candidate push, layer 0)', v.step1], ['step 2 (decision, layer >= 1)', v.step2]].forEach(function (p) {
      if (p[1]) box.appendChild(verdictRow(p[0], p[1].holds, p[1].reason, p[1].applicable));
    });
    if (v.route) box.appendChild(el('div', { cls: 'verdict' }, [el('b', { text: 'route: ' + v.route.name }),
      el('span', { text: v.route.evidence || '' })]));
    if (report.heldout && report.heldout.accuracy)
      box.appendChild(el('p', { text: 'held-out accuracy (' + report.heldout.n + ' sentences): all ' +
        fmt(100 * report.heldout.accuracy.all, 1) + '%, crosser ' + fmt(100 * report.heldout.accuracy.crosser, 1) +
        '%, crossed ' + fmt(100 * report.heldout.accuracy.crossed, 1) + '%' }));
    return { fig: 'attention_14', caption: 'per-head evidence (held-out means; click a column to sort, a head to see its attention)',
      cols: [
        ['head', function (h) { return h.name; }, 'text'],
        ['roles', function (h) { return (h.roles || []).concat(adjKey(h) ? ['adjective key'] : []).join(', '); }, 'text'],
        ['attn@14 crosser: x', function (h) { return g(h, ['attention_at_14', 'crosser', 'x']); }],
        ['crosser: adj', function (h) { return g(h, ['attention_at_14', 'crosser', 'adjective']); }],
        ['crossed: y', function (h) { return g(h, ['attention_at_14', 'crossed', 'y']); }],
        ['crossed: adj', function (h) { return g(h, ['attention_at_14', 'crossed', 'adjective']); }],
        ['DLA ref−other', function (h) { return g(h, ['dla_at_14', 'all', 'ref_minus_other']); }],
        ['copying', function (h) { return h.copying_score; }],
        ['patching@14', function (h) { return g(h, ['patching', 'pos14', 'both']); }],
        ['ablation drop crosser (points)', function (h) { return points(g(h, ['mean_ablation', 'drop', 'crosser'])); }],
        ['ablation drop crossed (points)', function (h) { return points(g(h, ['mean_ablation', 'drop', 'crossed'])); }]] };
  }
  /* induction (tasks/induction_circuit.c): "holds", "verdict" (text), "criteria" {name: {holds, evidence}},
     per-head detector scores, OV copying and the accuracy with the head mean-ablated */
  function inductionVerdicts(report, box, figs) {
    box.appendChild(verdictRow('induction circuit', report.holds, report.verdict));
    var cr = report.criteria || {};
    Object.keys(cr).forEach(function (k) {
      box.appendChild(verdictRow(k.replace(/_/g, ' '), cr[k].holds, cr[k].evidence));
    });
    if (typeof report.accuracy === 'number')
      box.appendChild(el('p', { text: 'held-out repeated-segment accuracy (' + report.n_seqs + ' sequences, ' +
        report.n_scored + ' tokens scored): ' + fmt(100 * report.accuracy, 1) + '% (chance ' +
        fmt(100 * report.chance, 1) + '%); previous-token heads ' + (report.previous_token_heads || []).join(', ') +
        ', induction heads ' + (report.induction_heads || []).join(', ') }));
    var acc = report.accuracy;
    /* K-composition from the named previous-token head (composition_K.json: rows = layer-0 senders,
       columns = later receivers, minus the random baseline) */
    var ck = figs.composition_K && figs.composition_K.file, pr = report.previous_token_head;
    var kRow = ck && pr ? ck.row_labels.indexOf(pr) : -1;
    function kcomp(h) {
      var c = kRow >= 0 ? ck.col_labels.indexOf(h.name) : -1;
      return c >= 0 ? ck.values[kRow][c] : null;
    }
    return { fig: 'heads', caption: 'per-head evidence (held-out sequences; click a column to sort, a head to see its scores)',
      cols: [
        ['head', function (h) { return h.name; }, 'text'],
        ['roles', function (h) { return [h.previous_token_head ? 'previous-token' : '', h.induction_head ? 'induction' : '']
          .filter(Boolean).join(', '); }, 'text'],
        ['previous-token score', function (h) { return g(h, ['previous_token_score']); }],
        ['induction score', function (h) { return g(h, ['induction_score']); }],
        ['TL induction score', function (h) { return g(h, ['tl_induction_score']); }],
        ['K-comp. from ' + (pr || 'prev.') + ' − baseline', kcomp],
        ['OV copying', function (h) { return g(h, ['copying']); }],
        ['copying eigenvalues > 0', function (h) { return g(h, ['copying_positive_fraction']); }],
        ['ablated: accuracy change (points)', function (h) {
          var a = g(h, ['accuracy_ablated']);
          return a === null || typeof acc !== 'number' ? null : 100 * (a - acc); }]] };
  }
  function circuit(report, figs) {
    var box = el('div', {});
    box.appendChild(el('h2', { text: 'Verdicts' }));
    var spec = report.task === 'induction' ? inductionVerdicts(report, box, figs) : winogradVerdicts(report, box);
    var heads = report.heads || [], cols = spec.cols;
    var table = el('table', { cls: 'evidence' });
    table.appendChild(el('caption', { text: spec.caption }));
    var trh = el('tr');
    var sort = { col: -1, dir: 1 }, body = el('tbody'), ths = [];
    cols.forEach(function (c, ci) {
      var b = el('button', { text: c[0] });
      var th = el('th', { scope: 'col', 'aria-sort': 'none' }, [b]);
      ths.push(th);
      b.addEventListener('click', function () {
        sort.dir = sort.col === ci ? -sort.dir : (c[2] ? 1 : -1);
        sort.col = ci;
        ths.forEach(function (t, k) { t.setAttribute('aria-sort', k === ci ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none'); });
        fill();
      });
      trh.appendChild(th);
    });
    table.appendChild(el('thead', {}, [trh]));
    table.appendChild(body);
    var strip = el('div', { cls: 'headrow', 'aria-live': 'polite' });
    function showHead(h) {
      Array.prototype.forEach.call(body.children, function (tr) { tr.classList.toggle('sel', tr.getAttribute('data-head') === h.name); });
      strip.textContent = '';
      var att = figs[spec.fig];
      strip.appendChild(el('h3', { text: h.name + (h.mean_pattern_row_14 ? ': mean attention row at position 14 (held-out)'
        : ': its row is outlined in “' + (att ? att.file.title : spec.fig) + '”') }));
      var labels = att && att.file.col_labels;
      ['crosser', 'crossed'].forEach(function (role) {
        var row = g(h, ['mean_pattern_row_14', role]);
        if (!row) return;
        var s = el('div', { cls: 'strip', role: 'list', 'aria-label': h.name + ' ' + role });
        s.appendChild(el('span', { cls: 'lab', text: role + ':' }));
        row.forEach(function (w, i) {
          var rgb = rgbAt(ATT_MAP, cindex(w));
          var t = el('span', { cls: 'tok', role: 'listitem', title: (labels ? whole(labels[i]) + ': ' : '') + fmt(w) }, [
            el('bdi', { text: labels ? short(labels[i]) : String(i) }), el('span', { cls: 'w', text: fmt(w, 2) })]);
          t.style.background = css(rgb);
          t.style.color = ink(rgb);
          s.appendChild(t);
        });
        strip.appendChild(s);
      });
      if (att) {
        var rows = [];
        att.file.row_labels.forEach(function (l, i) { if (l.split(' ')[0] === h.name) rows.push(i); });
        att.fig.highlight(rows);
      }
    }
    function fill() {
      var hs = heads.slice();
      if (sort.col >= 0) {
        var f = cols[sort.col][1];
        hs.sort(function (a, b) {
          var x = f(a), y = f(b);
          if (x === y) return 0;
          if (x === null) return 1;
          if (y === null) return -1;
          return (x < y ? -1 : 1) * sort.dir;
        });
      }
      body.textContent = '';
      hs.forEach(function (h) {
        var tr = el('tr', { 'data-head': h.name });
        cols.forEach(function (c, ci) {
          var x = c[1](h);
          if (ci === 0) {
            var a = el('a', { href: '#fig-' + spec.fig, text: x });
            a.addEventListener('click', function () { showHead(h); });
            tr.appendChild(el('td', {}, [a]));
          } else tr.appendChild(el('td', { cls: c[2] ? 'text' : '', text: c[2] ? x : fmt(x, 2) }));
        });
        body.appendChild(tr);
      });
    }
    fill();
    box.appendChild(el('h2', { text: 'Evidence per head' }));
    box.appendChild(el('div', { cls: 'scroll' }, [table]));
    box.appendChild(strip);
    return box;
  }

  return circuit(report, figs);
};
