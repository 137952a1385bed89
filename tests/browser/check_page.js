#!/usr/bin/env node
/*
 * tests/browser/check_page.js -- opens one headscope HTML page in a real
 * browser (Debian's chromium, headless, over the DevTools protocol with
 * puppeteer-core; nothing is downloaded) and checks it as a reader would:
 *   - from file:// with the network cut: every request that is not file:// is
 *     failed and counted, and the count must be 0;
 *   - no console error, no page error;
 *   - the colour of known (head, dest, src) cells of the large head view is
 *     the attention value (from the folder's attention_grid.json, or decoded
 *     here from the page's packed data) through the colour table, and the
 *     table is the static figures' viridis (anchors from viz_color.c);
 *   - hovering a destination token shades every source token with that
 *     token's attention row (value and colour), masked after it;
 *   - arrow keys on the grid move the selected head;
 *   - a screenshot (the artefact) is written;
 *   - with --perf: load time (navigation start to the viewer's ready mark)
 *     and the longest hover frame, both bounded.
 *   - with --matrix STEM:FILE, every cell of that matrix figure against
 *     FILE's values through its colour_scale; on a circuit page the evidence
 *     table sorts both ways and a head's link shows its attention row;
 *   - with --report REPORT.json (the induction circuit's), its verdict and
 *     criteria, each head's detector scores, the named heads' real names;
 *   - with --graph graph.json (a circuit page; --json its attention file): the
 *     slider changes the number of edges drawn, the browser's colour of a
 *     positive and a negative edge is viz's diverging map's end, focus names
 *     an edge's score, a click (or Enter) on a head shows its pattern.
 * Usage: node check_page.js --page P.html --shot OUT.png [--json attention_grid.json]
 *        [--matrix patching:patching.json] [--report report.json] [--graph graph.json]
 *        [--perf [--max-frame-ms N] [--max-load-ms N]]
 *        [--browser chromium|firefox] [--hover mouse|focus]
 * Prints one JSON line of measurements; exits 1 on the first failed check.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

const args = {};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (!a.startsWith('--')) throw new Error('unexpected argument ' + a);
  const k = a.slice(2);
  const v = process.argv[i + 1] && !process.argv[i + 1].startsWith('--') ? process.argv[++i] : true;
  args[k] = v;
}
function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}
if (!args.page || !args.shot) fail('usage: --page FILE --shot OUT.png');

/* viz_color.c's viridis at 0, 64, 128, 192, 255 and the masked colour */
const VIRIDIS_ANCHORS = { 0: [68, 1, 84], 64: [59, 82, 139], 128: [33, 145, 140], 192: [94, 201, 98], 255: [253, 231, 37] };
const MASKED = [0xe4, 0xc8, 0xf0];

/* the page's packed attention, decoded independently of viewer.js */
function unpackNode(att) {
  const H = att.shape[0], T = att.shape[1];
  const buf = Buffer.from(att.base64, 'base64');
  const a = new Float32Array(H * T * T);
  let k = 0;
  for (let h = 0; h < H; h++)
    for (let d = 0; d < T; d++)
      for (let s = 0; s < (att.causal ? d + 1 : T); s++, k += 4) a[(h * T + d) * T + s] = buf.readFloatLE(k);
  if (k !== buf.length) fail(`packed attention has ${buf.length} bytes, expected ${k}`);
  return { H, T, a };
}

/* --graph graph.json (the circuit page, viewer_graph.js): the slider hides the
   edges under its |score| (drawn paths = the count it names = graph.json's),
   the stroke of a positive and a negative edge as the browser computes it is
   viz's diverging map's end, focus names an edge with its score, a click (and
   Enter) on a head shows its attention pattern in the --json file's colours,
   and unticking "only the circuit's edges" ranges over every edge. */
async function checkGraph(page, args, maps, table, colour, result) {
  const g = JSON.parse(fs.readFileSync(args.graph, 'utf8'));
  const all = Object.entries(g.edges).map(([name, e]) => ({ name, score: e.score, abs: Math.abs(e.score), in: e.in_graph }));
  const circ = all.filter((e) => e.in).sort((a, b) => b.abs - a.abs);
  if (circ.length < 3) fail('--graph needs a circuit of 3 edges or more');
  await page.waitForSelector('svg.circuit');
  const drawn = () => page.evaluate(() => ({
    paths: Array.from(document.querySelectorAll('svg.circuit path.edge')).map((p) => p.dataset.name),
    attr: Number(document.querySelector('svg.circuit').dataset.edges),
    text: document.querySelector('.circuitview .count').textContent,
  }));
  const expect = async (n, pool, what) => {
    const d = await drawn();
    if (d.paths.length !== n || d.attr !== n) fail(`${what}: ${d.paths.length} edges drawn (attr ${d.attr}), expected ${n}`);
    if (!d.text.includes(`${n} of ${pool}`)) fail(`${what}: the count says '${d.text}', not ${n} of ${pool}`);
    return d;
  };
  let d = await expect(circ.length, circ.length, 'at first');
  const want = new Set(circ.map((e) => e.name));
  d.paths.forEach((p) => { if (!want.has(p)) fail(`edge ${p} drawn but not in the circuit`); });
  /* the slider: Home = the strongest |score| only, then two steps down */
  await page.focus('.circuitview input[type="range"]');
  await page.keyboard.press('Home');
  const ties = (k) => circ.filter((e) => e.abs >= circ[k].abs).length;
  await expect(ties(0), circ.length, 'slider at Home');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await expect(ties(2), circ.length, 'slider two steps from Home');
  await page.keyboard.press('End');
  await expect(circ.length, circ.length, 'slider at End');
  /* colours as rendered: viz_color.c's diverging ends, also the page's table */
  const div = table(maps.diverging), POS = [103, 0, 31], NEG = [5, 48, 97];
  if (div[255].join() !== POS.join() || div[0].join() !== NEG.join()) fail(`page diverging ends ${div[255]} / ${div[0]}`);
  const pos = circ.find((e) => e.score > 0), neg = circ.find((e) => e.score < 0);
  if (!pos || !neg) fail('--graph needs a positive and a negative circuit edge');
  for (const [e, rgb] of [[pos, POS], [neg, NEG]]) {
    const st = await page.$eval(`svg.circuit path.edge[data-name="${e.name}"]`, (p) => [getComputedStyle(p).stroke, p.getAttribute('stroke-dasharray')]);
    if (st[0] !== `rgb(${rgb.join(', ')})`) fail(`edge ${e.name} (score ${e.score}) is drawn ${st[0]}, viz's map end is rgb(${rgb.join(', ')})`);
    if ((st[1] !== null) !== (e.score < 0)) fail(`edge ${e.name}: dashes '${st[1]}' for score ${e.score}`);
  }
  /* Tab from the controls reaches the graph; focus names an edge and its score */
  await page.focus('.circuitview input[type="checkbox"]');
  await page.keyboard.press('Tab');
  const tabbed = await page.evaluate(() => document.activeElement && document.activeElement.closest('svg.circuit') !== null &&
    document.activeElement.getAttribute('data-name'));
  if (!tabbed) fail('Tab from the circuit\'s controls does not reach the graph');
  await page.$eval(`svg.circuit path.edge[data-name="${pos.name}"]`, (p) => p.focus());
  const said = await page.$eval('.circuitview p.status', (p) => p.textContent);
  if (!said.includes(pos.name) || !said.includes(pos.score.toFixed(4))) fail(`focus on ${pos.name} says '${said}'`);
  /* a click on a head shows its pattern; Enter on another too */
  const A = JSON.parse(fs.readFileSync(args.json, 'utf8'));
  const heads = [...new Set(circ.map((e) => e.name.split('->')[1].replace(/<.>$/, '')).filter((n) => /^a\d+\.h\d+$/.test(n)))];
  if (heads.length < 2) fail('--graph needs two receiving heads in the circuit');
  for (const [i, name] of heads.slice(0, 2).entries()) {
    if (i === 0) await page.click(`svg.circuit g.node[data-name="${name}"]`);
    else { await page.$eval(`svg.circuit g.node[data-name="${name}"]`, (g) => g.focus()); await page.keyboard.press('Enter'); }
    const [, l, h] = /^a(\d+)\.h(\d+)$/.exec(name);
    const k = A.attention_head_names.indexOf(`L${l}H${h}`), T = A.tokens.length;
    if (k < 0) fail(`${args.json} has no pattern for ${name}`);
    const cells = [];
    for (let dd = 0; dd < T; dd++) for (let s = 0; s <= dd; s++) cells.push([dd, s]);
    const got = await page.evaluate((cells) => {
      const c = document.querySelector('canvas.graphhead');
      if (!c) return null;
      const x0 = +c.dataset.x0, y0 = +c.dataset.y0, cell = +c.dataset.cell, r = c.width / parseFloat(c.style.width);
      const g = c.getContext('2d');
      return { name: c.dataset.name, px: cells.map(([dd, s]) => Array.from(g.getImageData(Math.floor((x0 + (s + 0.5) * cell) * r), Math.floor((y0 + (dd + 0.5) * cell) * r), 1, 1).data).slice(0, 3)) };
    }, cells);
    if (!got || got.name !== name) fail(`${i ? 'Enter' : 'a click'} on ${name} shows ${got ? got.name : 'no pattern'}`);
    cells.forEach(([dd, s], n) => {
      const v = Math.fround(A.attention[k][dd][s]), exp = colour(v);
      if (got.px[n].join() !== exp.join()) fail(`${name} pattern cell (${dd}, ${s}) = ${v}: drawn ${got.px[n]}, viridis gives ${exp}`);
    });
    result.graph_pattern_cells = (result.graph_pattern_cells || 0) + cells.length;
  }
  /* every edge: the pool is the 500 strongest of the graph */
  await page.click('.circuitview input[type="checkbox"]');
  await expect(Math.min(500, all.length), Math.min(500, all.length), 'every edge');
  await page.click('.circuitview input[type="checkbox"]');
  await expect(circ.length, circ.length, 'the circuit again');
  result.graph_edges = all.length;
  result.graph_circuit_edges = circ.length;
  /* a line plot with "x_scale": "log" (the faithfulness curve): the decades
     equally spaced, ticks at the powers of ten, the dashed line at mark_y */
  const logs = await page.evaluate(() => JSON.parse(document.getElementById('hs-data').textContent).data.runs
    .flatMap((r) => Object.values(r.files)).filter((f) => f.x_scale === 'log').length);
  if (logs) {
    const plot = await page.evaluate(() => {
      const svg = Array.from(document.querySelectorAll('figure svg')).find((s) => s.querySelector('circle') && s.querySelector('line[stroke-dasharray]'));
      if (!svg) return null;
      const n = svg.querySelectorAll('circle').length / 3;
      return { ticks: Array.from(svg.querySelectorAll('text')).map((t) => t.textContent),
        cx: Array.from(svg.querySelectorAll('circle')).slice(0, n).map((c) => +c.getAttribute('cx')) };
    });
    if (!plot) fail('the log-x line plot has no dashed mark line');
    ['0.1', '1', '10', '100'].forEach((t) => { if (!plot.ticks.includes(t)) fail(`the log-x plot has no tick ${t}: ${plot.ticks}`); });
    const dec = [plot.cx[3] - plot.cx[0], plot.cx[6] - plot.cx[3], plot.cx[9] - plot.cx[6]]; /* 0.1 -> 1 -> 10 -> 100 */
    if (Math.max(...dec) - Math.min(...dec) > 0.5) fail(`decades on the log-x plot are ${dec} px wide`);
    result.log_x_plot = true;
  }
}

(async () => {
  const browserName = args.browser || 'chromium';
  const exe = args.exe || (browserName === 'firefox' ? '/usr/bin/firefox-esr' : '/usr/bin/chromium');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-browser-'));
  const launch = browserName === 'firefox'
    ? { browser: 'firefox', executablePath: exe, headless: true, userDataDir: profile }
    : {
      executablePath: exe, headless: true, userDataDir: profile,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-default-apps', '--disable-extensions', '--font-render-hinting=none'],
    };
  const browser = await puppeteer.launch(launch);
  const result = {};
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000, deviceScaleFactor: 1 });
    const errors = [], blocked = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
    page.on('pageerror', (e) => errors.push('page error: ' + (e.stack || e.message)));
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      const u = r.url();
      if (u.startsWith('file://')) r.continue();
      else { blocked.push(u); r.abort('internetdisconnected'); }
    });
    if (browserName === 'chromium') await page.setOfflineMode(true);

    const url = 'file://' + path.resolve(args.page);
    const t0 = Date.now();
    await page.goto(url, { waitUntil: 'load', timeout: 120000 });
    try {
      await page.waitForSelector('body[data-ready="1"]', { timeout: Number(args['ready-timeout-ms'] || 60000) });
    } catch (e) {
      fail('the page never became ready' + (errors.length ? ': ' + errors.join(' | ') : ' (no error reported)'));
    }
    result.load_wall_ms = Date.now() - t0;
    const timing = await page.evaluate(() => ({
      ready: window.hsViewer.readyAt, render: window.hsViewer.renderMs,
      parse: window.hsViewer.parseMs,
    }));
    result.load_ms = Math.round(timing.ready);
    result.render_ms = Math.round(timing.render);
    result.parse_ms = Math.round(timing.parse);
    result.page_bytes = fs.statSync(args.page).size;

    /* the colour table is the static figures' */
    const maps = await page.evaluate(() => JSON.parse(document.getElementById('hs-data').textContent).colormaps);
    const table = (hex) => { const t = []; for (let i = 0; i < 256; i++) t.push([0, 2, 4].map((o) => parseInt(hex.substr(6 * i + o, 2), 16))); return t; };
    const cmap = table(maps.viridis);
    for (const [i, rgb] of Object.entries(VIRIDIS_ANCHORS))
      if (cmap[i].join() !== rgb.join()) fail(`page viridis[${i}] = ${cmap[i]}, viz_color.c has ${rgb}`);
    if (table(maps.masked)[0].join() !== MASKED.join()) fail('masked colour differs from HS_VIZ_MASK_RGB');
    const colour = (v) => cmap[Math.round(Math.min(1, Math.max(0, v)) * 255)];

    /* a matrix figure (--matrix STEM:FILE.json with a fixed colour_scale):
       every cell's colour is its value through its figure's map and range */
    if (args.matrix) {
      const [stem, file] = args.matrix.split(':');
      const j = JSON.parse(fs.readFileSync(file, 'utf8'));
      const cs = j.colour_scale;
      if (!cs || cs.range !== 'fixed') fail(`${file} has no fixed colour_scale`);
      const map = table(maps[cs.cmap]);
      const px = await page.evaluate((stem, R, C) => {
        const c = document.getElementById('fig-' + stem);
        const x0 = +c.dataset.x0, y0 = +c.dataset.y0, cell = +c.dataset.cell, r = c.width / parseFloat(c.style.width);
        const g = c.getContext('2d'), out = [];
        for (let i = 0; i < R; i++) for (let k = 0; k < C; k++)
          out.push(Array.from(g.getImageData(Math.floor((x0 + (k + 0.5) * cell) * r), Math.floor((y0 + (i + 0.5) * cell) * r), 1, 1).data).slice(0, 3));
        return out;
      }, stem, j.values.length, j.values[0].length);
      let n = 0;
      j.values.forEach((row, i) => row.forEach((v, k) => {
        const exp = v === null ? MASKED : map[Math.round(Math.min(1, Math.max(0, (v - cs.vmin) / (cs.vmax - cs.vmin))) * 255)];
        const got = px[n++];
        if (got.join() !== exp.join()) fail(`${stem} cell (${i}, ${k}) = ${v}: drawn ${got}, ${cs.cmap} on [${cs.vmin}, ${cs.vmax}] gives ${exp}`);
      }));
      result.matrix_cells_checked = n;
    }
    /* the circuit's evidence table sorts, and a head links to its attention */
    if (await page.$('table.evidence')) {
      const col = await page.$$eval('table.evidence th button', (bs) => bs.map((b) => b.textContent)
        .findIndex((t) => t === 'copying' || t === 'OV copying'));
      if (col < 0) fail('evidence table has no copying column');
      const read = () => page.$$eval('table.evidence tbody tr', (trs, col) => trs.map((tr) => Number(tr.children[col].textContent)), col);
      await page.click(`table.evidence th:nth-child(${col + 1}) button`);
      const desc = await read();
      if (desc.some((v, i) => i > 0 && v > desc[i - 1])) fail(`copying column not sorted descending: ${desc}`);
      await page.click(`table.evidence th:nth-child(${col + 1}) button`);
      const asc = await read();
      if (asc.some((v, i) => i > 0 && v < asc[i - 1])) fail(`copying column not sorted ascending: ${asc}`);
      const sortAttr = await page.$eval(`table.evidence th:nth-child(${col + 1})`, (t) => t.getAttribute('aria-sort'));
      if (sortAttr !== 'ascending') fail(`aria-sort is ${sortAttr} after the second click`);
      const name = await page.$eval('table.evidence tbody tr:last-child a', (a) => { a.click(); return a.textContent; });
      const shown = await page.$eval('.headrow h3', (h) => h.textContent);
      if (!shown.startsWith(name + ':')) fail(`clicking ${name} shows '${shown}'`);
      result.evidence_sorted = asc.length;
    }
    /* --report REPORT.json of the induction circuit: its verdict and every
       criterion with its evidence, each head's scores in the evidence table,
       and the named heads' patterns under their L<l>H<h> names */
    /* a bar's value as the figures write it: U+2212, no sign on a value that rounds to 0 */
    const barVals = await page.$$eval('.bars .val', (vs) => vs.map((v) => v.textContent));
    barVals.forEach((t) => {
      if (t.includes('-') || /^[+\u2212]0(\.0+)?$/.test(t)) fail(`a bar's value '${t}' has an ASCII minus or a signed zero`);
    });
    result.bar_values = barVals.length;
    if (args.report) {
      const rep = JSON.parse(fs.readFileSync(args.report, 'utf8'));
      const verdicts = await page.$$eval('.verdict', (vs) => vs.map((v) => v.textContent));
      const want = [rep.verdict].concat(Object.values(rep.criteria).map((c) => c.evidence));
      want.forEach((w) => { if (!verdicts.some((v) => v.includes(w))) fail(`no verdict shows '${w}'`); });
      const rows = await page.$$eval('table.evidence tr', (trs) => trs.map((tr) => Array.from(tr.children).map((c) => c.textContent)));
      const hdr = rows[0], ci = hdr.indexOf('induction score'), cp = hdr.indexOf('previous-token score');
      if (ci < 0 || cp < 0) fail(`evidence columns are ${hdr}`);
      rep.heads.forEach((h) => {
        const r = rows.find((x) => x[0] === h.name);
        if (!r) fail(`no evidence row for ${h.name}`);
        if (r[ci] !== h.induction_score.toFixed(2) || r[cp] !== h.previous_token_score.toFixed(2))
          fail(`${h.name}: table shows ${r[cp]}, ${r[ci]}; report has ${h.previous_token_score}, ${h.induction_score}`);
      });
      const grid = await page.$eval('canvas.grid', (c) => c.getAttribute('aria-label'));
      [rep.previous_token_head, rep.induction_head].forEach((n) => {
        if (!grid.includes(n + ' ')) fail(`the patterns' grid does not name ${n}: ${grid}`);
      });
      result.verdicts = verdicts.length;
    }
    if (args.graph) await checkGraph(page, args, maps, table, colour, result);
    const nviews = await page.evaluate(() => window.hsViewer.views.length);
    if (nviews === 0 && args.json) fail('the page shows no attention view, but ' + args.json + ' has attention');
    if (nviews === 0) {
      result.figures = await page.evaluate(() => document.querySelectorAll('figure canvas, figure svg, figure .bars').length);
      if (result.figures === 0) fail('the page draws no figure');
      await page.screenshot({ path: args.shot, fullPage: true });
      if (errors.length) fail('errors in the page: ' + errors.join(' | '));
      if (blocked.length) fail(`the page asked the network for ${blocked.length} URL(s)`);
      result.requests_blocked = 0;
      result.console_errors = 0;
      console.log(JSON.stringify(result));
      return;
    }

    /* the attention: the folder's JSON file, or the page's packed data */
    let A;
    if (args.json) {
      const j = JSON.parse(fs.readFileSync(args.json, 'utf8'));
      const H = j.attention.length, T = j.attention[0].length, a = new Float32Array(H * T * T);
      for (let h = 0; h < H; h++) for (let d = 0; d < T; d++) a.set(j.attention[h][d], (h * T + d) * T);
      A = { H, T, a };
    } else {
      const packed = await page.evaluate(() => {
        const runs = JSON.parse(document.getElementById('hs-data').textContent).data.runs;
        return runs[0].files.attention_grid.attention;
      });
      A = unpackNode(packed);
    }
    const view = await page.evaluate(() => { const v = window.hsViewer.views[0]; return { L: v.L, H: v.H, T: v.T, names: v.names }; });
    if (view.L * view.H !== A.H || view.T !== A.T) fail(`viewer shows ${view.L}x${view.H}x${view.T}, data has ${A.H}x${A.T}`);
    const T = A.T, at = (k, d, s) => A.a[(k * T + d) * T + s];

    /* known cells: for a few heads, the cell each row puts most weight on,
       the diagonal, the first column, and one masked cell */
    const heads = [0, A.H - 1, Math.floor(A.H / 2)];
    let checked = 0;
    for (const k of heads) {
      const l = Math.floor(k / view.H), h = k % view.H;
      await page.evaluate((l, h) => window.hsViewer.select(l, h, 'head'), l, h);
      const cells = [];
      for (const d of [T - 1, Math.floor(T / 2), 1]) {
        let best = 0;
        for (let s = 0; s <= d; s++) if (at(k, d, s) > at(k, d, best)) best = s;
        cells.push([d, best], [d, d], [d, 0]);
      }
      const got = await page.evaluate((cells) => {
        const c = document.querySelector('canvas.head');
        const x0 = +c.dataset.x0, y0 = +c.dataset.y0, cell = +c.dataset.cell;
        const r = c.width / parseFloat(c.style.width);
        const g = c.getContext('2d');
        return { name: c.dataset.name, px: cells.map(([d, s]) => Array.from(g.getImageData(Math.floor((x0 + (s + 0.5) * cell) * r), Math.floor((y0 + (d + 0.5) * cell) * r), 1, 1).data).slice(0, 3)) };
      }, cells.concat([[0, 1]]));
      const want = view.names[k] || `L${l}H${h}`;
      if (got.name !== want) fail(`head view shows ${got.name}, selected ${want}`);
      cells.forEach(([d, s], i) => {
        const v = at(k, d, s), exp = colour(v);
        if (got.px[i].join() !== exp.join()) fail(`${want} cell (dest ${d}, src ${s}) = ${v}: drawn ${got.px[i]}, colour map gives ${exp}`);
        checked++;
      });
      if (got.px[cells.length].join() !== MASKED.join()) fail(`${want} masked cell (0, 1) drawn ${got.px[cells.length]}`);
    }
    result.cells_checked = checked;

    /* hover a destination token: the source column is its attention row */
    {
      const k = A.H - 1, l = Math.floor(k / view.H), h = k % view.H;
      await page.evaluate((l, h) => window.hsViewer.select(l, h, 'head'), l, h);
      const d = Math.min(T - 1, Math.max(2, Math.floor(T * 0.6)));
      const sel = `.tokcol.dest .tok[data-pos="${d}"]`;
      const twoFrames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      /* the pointer over token d, after scrolling has settled (a pointer left
         over another token while the page scrolls would hover that one) */
      let active = null;
      for (let t = 0; t < 5 && active !== String(d); t++) {
        await page.$eval(sel, (e) => e.scrollIntoView({ block: 'center', behavior: 'instant' }));
        await twoFrames();
        if (args.hover === 'focus') {
          await page.focus(sel); /* keyboard focus shows the row as hovering does */
        } else {
          /* off the tokens first: a pointer already at the spot (the layout
             moved under it) fires no mouseover when moved there again */
          await page.mouse.move(0, 0);
          await twoFrames();
          const b = await (await page.$(sel)).boundingBox();
          await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
        }
        await twoFrames();
        active = await page.evaluate(() => {
          const a = document.querySelector('.tokcol.dest .tok.active');
          return a && a.getAttribute('data-pos');
        });
      }
      if (active !== String(d)) fail(`hovering destination token ${d} made token ${active} the active one`);
      const row = await page.evaluate(() => Array.from(document.querySelectorAll('.attview')[0].querySelectorAll('.tokcol.src .tok')).map((e) => ({
        w: e.getAttribute('data-w'), bg: getComputedStyle(e).backgroundColor, text: e.lastChild.textContent,
      })));
      if (row.length !== T) fail(`token view has ${row.length} source tokens, expected ${T}`);
      for (let s = 0; s < T; s++) {
        if (s > d) {
          if (row[s].w !== null || row[s].bg !== `rgb(${MASKED.join(', ')})`) fail(`hover ${d}: source ${s} after it is not masked (${row[s].bg})`);
          continue;
        }
        const v = at(k, d, s);
        if (row[s].w === null || Math.fround(Number(row[s].w)) !== v) fail(`hover ${d}: source ${s} shows ${row[s].w}, attention row has ${v}`);
        const exp = `rgb(${colour(v).join(', ')})`;
        if (row[s].bg !== exp) fail(`hover ${d}: source ${s} background ${row[s].bg}, colour map gives ${exp}`);
        if (row[s].text !== v.toFixed(2)) fail(`hover ${d}: source ${s} shows '${row[s].text}', not ${v.toFixed(2)}`);
      }
      result.hover_row_checked = d;
    }

    /* keyboard: the grid takes arrows */
    {
      await page.evaluate(() => window.hsViewer.select(0, 0, 'head'));
      await page.focus('canvas.grid');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowDown');
      const name = await page.$eval('canvas.head', (c) => c.dataset.name);
      const l1 = Math.min(1, view.L - 1), h1 = Math.min(1, view.H - 1);
      const want = view.names[l1 * view.H + h1] || `L${l1}H${h1}`;
      if (name !== want) fail(`after ArrowRight, ArrowDown the head view shows ${name}, expected ${want}`);
    }

    if (args.perf) {
      /* one pass of hovers and clicks; returns the longest frame */
      const measure = async () => {
        /* hover frames: tokens across the sentence, and grid thumbnails.
           Event Timing: an entry's duration runs from the input event to the
           next paint after its handlers, i.e. the frame the hover produced */
        await page.evaluate(() => {
          window.__long = 0;
          window.__since = Infinity; /* set by settle() once a part is in view */
          window.__event = 0;
          window.__events = 0;
          window.__worst = null;
          if (window.__observing) return;
          window.__observing = true;
          try {
            new PerformanceObserver((l) => l.getEntries().forEach((e) => {
              if (e.startTime >= window.__since) window.__long = Math.max(window.__long, e.duration);
            }))
              .observe({ type: 'longtask', buffered: false });
          } catch (e) { /* not every browser has longtask */ }
          new PerformanceObserver((l) => l.getEntries().forEach((e) => {
            if (e.startTime < window.__since) return;
            window.__events++;
            if (e.duration > window.__event) window.__worst = [e.name, e.duration, e.processingStart - e.startTime, e.processingEnd - e.processingStart, window.__phase];
            window.__event = Math.max(window.__event, e.duration);
          })).observe({ type: 'event', durationThreshold: 16, buffered: false });
        });
        let worst = 0;
        const frame = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
        /* scrolling is not hovering: bring each part into view first, let it
           paint, then count only the entries of the hovers that follow */
        const settle = async (phase) => {
          await frame();
          await new Promise((r) => setTimeout(r, 300));
          await page.evaluate((ph) => { window.__since = performance.now(); window.__phase = ph; }, phase);
        };
        if (args.trace) await page.tracing.start({ path: args.trace, categories: ['devtools.timeline', 'blink', 'cc'] });
        await page.evaluate(() => {
          const v = document.querySelector('.tokview');
          v.parentElement.scrollTop = 0;
          v.scrollIntoView({ block: 'start' });
        });
        await settle('tokens');
        const boxes = await page.$$eval('.tokcol.dest .tok', (es) => es.map((e) => {
          const r = e.getBoundingClientRect();
          return [r.x + r.width / 2, r.y + r.height / 2];
        }).filter((p) => p[1] > 0 && p[1] < window.innerHeight - 5));
        if (boxes.length < 10) fail(`only ${boxes.length} destination tokens are in view to hover`);
        for (let i = 0; i < 30; i++) {
          const p = boxes[Math.floor(i * boxes.length / 30)];
          const s = Date.now();
          await page.mouse.move(p[0], p[1]);
          await frame();
          worst = Math.max(worst, Date.now() - s);
        }
        await page.$eval('canvas.grid', (e) => e.scrollIntoView({ block: 'start' }));
        await settle('grid');
        const gb = await (await page.$('canvas.grid')).boundingBox();
        const gh = Math.min(gb.height, 1000 - Math.max(0, gb.y)) - 30;
        for (let i = 0; i < 30; i++) {
          const s = Date.now();
          await page.mouse.move(gb.x + 40 + (i * 37) % (gb.width - 50), Math.max(0, gb.y) + 25 + (i * 53) % gh);
          await frame();
          worst = Math.max(worst, Date.now() - s);
        }
        /* a click that changes the head redraws grid, head and tokens: also one frame */
        await page.evaluate(() => { window.__phase = 'click'; });
        for (let i = 0; i < 6; i++) {
          const s = Date.now();
          await page.mouse.click(gb.x + 40 + (i * 71) % (gb.width - 50), Math.max(0, gb.y) + 25 + (i * 97) % gh);
          await frame();
          worst = Math.max(worst, Date.now() - s);
        }
        await frame();
        if (args.trace) await page.tracing.stop();
        const ev = await page.evaluate(() => [window.__event, window.__events, window.__worst, window.__long]);
        return { wall: worst, frame: Math.round(ev[0]), entries: ev[1], slowest: ev[2], long: Math.round(ev[3]) };
      };
      /* --perf alone hovers and clicks through the page and measures (the
         tests: no timed bound there; bench/html_page.sh reads the numbers);
         with --max-frame-ms a frame over it fails. Another process on a shared
         machine can steal a frame: a pass that exceeds the bound is measured
         again, up to --perf-tries passes (default 2); a slow path of the page
         exceeds it in every pass */
      const bound = args['max-frame-ms'] ? Number(args['max-frame-ms']) : Infinity;
      const tries = Number(args['perf-tries'] || 2);
      let m, passes = [];
      for (let t = 0; t < tries; t++) {
        m = await measure();
        passes.push(Math.max(m.frame, m.long));
        if (m.frame <= bound && m.long <= bound) break;
      }
      result.max_hover_wall_ms = m.wall; /* includes the protocol's round trips */
      result.slowest_event = m.slowest; /* [type, duration, input delay, handler time, phase] */
      result.max_hover_frame_ms = m.frame;
      result.slow_event_entries = m.entries;
      result.max_long_task_ms = m.long;
      result.perf_passes = passes;
      if (m.frame > bound) fail(`a hover/click frame took ${m.frame} ms from input to paint (bound ${bound} ms; passes ${passes}; slowest ${JSON.stringify(m.slowest)})`);
      if (m.long > bound) fail(`a task during hovering took ${m.long} ms (bound ${bound} ms; passes ${passes})`);
      if (args['max-load-ms'] && result.load_ms > Number(args['max-load-ms'])) fail(`load took ${result.load_ms} ms (bound ${args['max-load-ms']} ms)`);
    }

    await page.evaluate(() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); window.hsViewer.select(1 % window.hsViewer.views[0].L, 1 % window.hsViewer.views[0].H, 'head'); });
    await page.mouse.move(0, 0);
    await page.screenshot({ path: args.shot, fullPage: !args.perf && !args['shot-viewport'] });
    if (errors.length) fail('errors in the page: ' + errors.join(' | '));
    if (blocked.length) fail(`the page asked the network for ${blocked.length} URL(s): ${blocked.slice(0, 3).join(', ')}`);
    result.requests_blocked = blocked.length;
    result.console_errors = errors.length;
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => fail(e.stack || String(e)));
