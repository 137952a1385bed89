#!/usr/bin/env node
/*
 * tests/browser/check_viewer.js -- what a reader does with the viewer's
 * pointer, keyboard and hostile vocabulary words, in Debian's chromium
 * (headless, puppeteer-core; nothing is downloaded). One page, the checks
 * asked for:
 *   --tokens: every destination token, aimed at where it is drawn before the
 *     pointer moves (as a reader aims), hovered and then clicked after moving
 *     from another token, becomes the active token and the chosen one;
 *     nothing above the list moves meanwhile.
 *   --bidi POS: token POS holds U+202E (RIGHT-TO-LEFT OVERRIDE); the numbers
 *     after it in the status lines still read left to right (each
 *     character's rendered x grows), and every title and aria-label holding
 *     the token holds it isolated (U+2068 ... U+2069).
 *   --focus: Tab reaches the large head and a matrix figure; the focus
 *     outline is drawn on all four sides (a screenshot, decoded by the
 *     browser), and after arrow keys the cell under the keyboard cursor is
 *     framed in the focus colour on the canvas.
 *   --long POS: token POS is too long to show whole: the head panel starts
 *     where it starts on a page of short words (--max-shift px), the token
 *     list shows it shortened with "…" and its title holds it whole.
 *   --csp: the page (with an inline script, an onerror and an onclick
 *     handler injected on purpose, the last on #hs-injected) runs its own
 *     scripts, and the three injected are blocked by the
 *     Content-Security-Policy (securitypolicyviolation events, no effect).
 *   --keys: the token list is one Tab stop (Home and arrows move inside,
 *     Tab leaves, Shift+Tab returns to the token last focused), and the
 *     large head's status names the head shown, with its value, after the
 *     head changes.
 *   --heading TEXT: the page's <h1> says TEXT.
 *   --pin L1H1[,missing:I:J][;L0H0...]: pinning L1H1 in the first folder
 *     shows L1H1 in every compare panel, matched by name; panels I, J say
 *     "not in this folder" instead (each spec after ';' pinned in turn).
 *   --select SPECS: the same with each head selected, before any pin (the
 *     compare panels without a pin follow the selected head by name too,
 *     never the head at the same position).
 *   --models N: the folders are of N models, compared only within a model,
 *     each compare section named by its model, one line naming them all.
 *   --circuit REPORT.json (a Winograd circuit with an adjective-key route):
 *     the evidence table's ablation drops are the report's in points, and
 *     exactly the heads the route's adjective-key rule names have that role.
 * Usage: node check_viewer.js --exe CHROMIUM --page P.html [--tokens]
 *        [--bidi POS] [--focus] [--long POS --max-shift PX] [--csp]
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
  const v = process.argv[i + 1] && !process.argv[i + 1].startsWith('--') ? process.argv[++i] : true;
  args[a.slice(2)] = v;
}
function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}
if (!args.page) fail('usage: --page FILE');

const FOCUS = [0xf3, 0x9c, 0x12]; /* viewer.css's focus colour, #f39c12 */
const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/* --tokens: aim at each token where it is drawn now, coming from another */
async function checkTokens(page, result) {
  const T = await page.$$eval('.tokcol.dest .tok', (es) => es.length);
  if (T < 4) fail(`the token list has ${T} tokens`);
  await page.$eval('.tokview', (e) => e.scrollIntoView({ block: 'center', behavior: 'instant' }));
  await page.mouse.move(0, 0);
  await frames(page);
  const boxes = await page.$$eval('.tokcol.dest .tok', (es) => es.map((e) => {
    const r = e.getBoundingClientRect();
    return [r.x + r.width / 2, r.y + r.height / 2];
  }));
  const listTop = () => page.$eval('.tokview', (e) => e.getBoundingClientRect().top);
  const top0 = await listTop();
  /* every token from a far one and from its neighbour */
  const order = [];
  for (let i = 0; i < T; i++) order.push([(i + Math.floor(T / 2)) % T, i], [i === 0 ? 1 : i - 1, i]);
  let n = 0;
  for (const [from, to] of order) {
    await page.mouse.move(boxes[from][0], boxes[from][1]);
    await frames(page);
    await page.mouse.move(boxes[to][0], boxes[to][1]);
    await frames(page);
    await frames(page);
    const active = await page.$eval('.tokcol.dest', (c) => {
      const a = c.querySelector('.tok.active');
      return a ? +a.dataset.pos : -1;
    });
    if (active !== to) fail(`pointing at token ${to} (coming from ${from}) made token ${active} the active one`);
    await page.mouse.down();
    await page.mouse.up();
    await frames(page);
    const chosen = await page.evaluate(() => window.hsViewer.views[0].dest);
    if (chosen !== to) fail(`clicking token ${to} (coming from ${from}) chose token ${chosen}`);
    const top = await listTop();
    if (top !== top0) fail(`the token list moved from y ${top0} to ${top} while pointing at tokens`);
    n++;
  }
  result.tokens_pointed = n;
}

/* rendered x of each character of node's text from offset a to b */
async function charXs(page, sel, needle) {
  return page.$eval(sel, (p, needle) => {
    const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
    let full = '', nodes = [];
    for (let t = walker.nextNode(); t; t = walker.nextNode()) { nodes.push([t, full.length]); full += t.data; }
    const at = full.indexOf(needle);
    if (at < 0) return { text: full, xs: null };
    const xs = [];
    for (let k = at; k < at + needle.length; k++) {
      const [node, off] = nodes.filter((x) => x[1] <= k).pop();
      const r = document.createRange();
      r.setStart(node, k - off);
      r.setEnd(node, k - off + 1);
      const b = r.getBoundingClientRect();
      xs.push([b.left, b.top]);
    }
    return { text: full, xs };
  }, needle);
}
function leftToRight(what, got, needle) {
  if (!got.xs) fail(`${what} '${got.text}' does not hold '${needle}'`);
  for (let k = 1; k < got.xs.length; k++)
    if (!(got.xs[k][0] > got.xs[k - 1][0]) && got.xs[k][1] === got.xs[k - 1][1])
      fail(`${what} '${got.text}': '${needle}' is drawn out of order (x ${got.xs.map((x) => x[0].toFixed(1)).join(', ')})`);
}

/* --bidi POS: the numbers after a U+202E word read left to right */
async function checkBidi(page, pos, result) {
  const v = await page.evaluate(() => { const v = window.hsViewer.views[0]; return { T: v.T, tokens: v.tokens, first: v.first }; });
  const tok = v.tokens[pos];
  if (!tok || tok.indexOf('\u202e') < 0) fail(`token ${pos} '${tok}' holds no U+202E`);
  /* the token view's status from the word itself: "..., from TOK (POS): a (0) 0.12, TOK (POS) 0.88" */
  const d = pos;
  await page.focus(`.tokcol.dest .tok[data-pos="${d}"]`);
  await frames(page);
  const st = await page.$eval('.attview .tokcol.dest', (c) => c.closest('figure').querySelector('.status').textContent);
  const m = new RegExp('\\((' + (pos + v.first) + ')\\) (\\d\\.\\d\\d)').exec(st);
  if (!m) fail(`the token status '${st}' does not give token ${pos} its weight`);
  leftToRight('the token status', await charXs(page, '.attview figure:nth-of-type(3) .status', m[0]), m[0]);
  /* the large head's status: "NAME · TOK (POS) → TOK (POS): 0.123" with POS as source */
  await page.focus('canvas.head');
  for (let k = 0; k < pos; k++) await page.keyboard.press('ArrowRight');
  const hs = await page.$eval('canvas.head', (c) => c.closest('figure').querySelector('.status').textContent);
  const m2 = new RegExp('\\((' + (pos + v.first) + ')\\): (\\d\\.\\d+)').exec(hs);
  if (!m2) fail(`the head status '${hs}' does not end in token ${pos}'s weight`);
  leftToRight('the head status', await charXs(page, '.attview figure.panel.fit:nth-of-type(2) .status', m2[0]), m2[0]);
  /* every title and aria-label holding the token holds it isolated */
  const bad = await page.evaluate((tok) => {
    const out = [];
    document.querySelectorAll('[title], [aria-label]').forEach((e) => {
      ['title', 'aria-label'].forEach((a) => {
        const s = e.getAttribute(a);
        if (!s) return;
        for (let i = s.indexOf(tok); i >= 0; i = s.indexOf(tok, i + 1))
          if (s[i - 1] !== '\u2068' || s[i + tok.length] !== '\u2069') out.push(a + ': ' + s);
      });
    });
    document.querySelectorAll('svg title, svg text').forEach((e) => {
      const s = e.textContent, i = s.indexOf(tok);
      if (i >= 0 && s !== tok && (s[i - 1] !== '\u2068' || s[i + tok.length] !== '\u2069')) out.push('svg: ' + s);
    });
    return out;
  }, tok);
  if (bad.length) fail(`${bad.length} titles or labels hold the U+202E word unisolated, e.g. ${JSON.stringify(bad[0])}`);
  result.bidi_status = [m[0], m2[0]];
}

/* the screenshot of rect (page coordinates, grown by pad) as RGB rows,
   decoded by the browser itself (an <img> drawn on a canvas) */
async function shot(browser, page, rect, pad) {
  const clip = { x: Math.max(0, rect.x - pad), y: Math.max(0, rect.y - pad), width: rect.width + 2 * pad, height: rect.height + 2 * pad };
  const b64 = await page.screenshot({ clip, encoding: 'base64' });
  const dec = await browser.newPage();
  const px = await dec.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return { w: img.width, h: img.height, d: Array.from(g.getImageData(0, 0, img.width, img.height).data) };
  }, b64);
  await dec.close();
  return { x0: clip.x, y0: clip.y, at: (x, y) => { const i = 4 * (y * px.w + x); return px.d.slice(i, i + 3); }, w: px.w, h: px.h };
}
const isFocus = (rgb) => Math.abs(rgb[0] - FOCUS[0]) + Math.abs(rgb[1] - FOCUS[1]) + Math.abs(rgb[2] - FOCUS[2]) < 30;

/* --focus: the keyboard focus on a figure canvas is seen whole, and so is
   the cell its arrow keys reach */
async function checkFocus(browser, page, sel, keys, cursor, result) {
  await page.$eval(sel, (c) => c.scrollIntoView({ block: 'center', behavior: 'instant' }));
  await page.focus(sel);
  for (const k of keys) await page.keyboard.press(k);
  await frames(page);
  const r = await page.$eval(sel, (c) => { const b = c.getBoundingClientRect(); return { x: b.x + window.scrollX, y: b.y + window.scrollY, width: b.width, height: b.height }; });
  const im = await shot(browser, page, r, 8);
  /* each side: some line along it, up to 7 px outside or inside, is the focus colour over 90% of its length */
  const side = (name, line) => {
    for (let k = -7; k <= 7; k++) {
      const pts = line(k);
      if (pts.filter(([x, y]) => x >= 0 && y >= 0 && x < im.w && y < im.h && isFocus(im.at(x, y))).length >= 0.9 * pts.length) return;
    }
    fail(`${sel}: no focus outline along its ${name} side`);
  };
  const X0 = Math.round(r.x - im.x0), Y0 = Math.round(r.y - im.y0), X1 = X0 + Math.round(r.width) - 1, Y1 = Y0 + Math.round(r.height) - 1;
  const range = (a, b) => { const o = []; for (let v = a; v <= b; v++) o.push(v); return o; };
  side('top', (k) => range(X0 + 10, X1 - 10).map((x) => [x, Y0 + k]));
  side('bottom', (k) => range(X0 + 10, X1 - 10).map((x) => [x, Y1 - k]));
  side('left', (k) => range(Y0 + 10, Y1 - 10).map((y) => [X0 + k, y]));
  side('right', (k) => range(Y0 + 10, Y1 - 10).map((y) => [X1 - k, y]));
  /* the cursor's cell: framed in the focus colour on the canvas */
  const cell = await page.$eval(sel, (c, cur) => {
    const x0 = +c.dataset.x0, y0 = +c.dataset.y0, n = +c.dataset.cell, q = c.width / parseFloat(c.style.width);
    const g = c.getContext('2d');
    const px = (x, y) => Array.from(g.getImageData(Math.floor(x * q), Math.floor(y * q), 1, 1).data).slice(0, 3);
    return { top: px(x0 + (cur[1] + 0.5) * n, y0 + cur[0] * n - 1), left: px(x0 + cur[1] * n - 1, y0 + (cur[0] + 0.5) * n) };
  }, cursor);
  if (!isFocus(cell.top) || !isFocus(cell.left)) fail(`${sel}: after ${keys.join(', ')} the cell (${cursor}) is not framed in the focus colour (drawn ${cell.top} / ${cell.left})`);
  result.focus_seen = (result.focus_seen || []).concat([sel]);
}

/* the large head's pattern: its left edge on the page (x) */
const patternX = (page) => page.$eval('canvas.head', (c) => c.getBoundingClientRect().left + window.scrollX + Number(c.dataset.x0));

/* --long POS --ref PAGE: a long word moves the head's pattern at most
   --max-shift px from where the page of short words has it; the token list
   shows it shortened and its title whole */
async function checkLong(browser, page, pos, result) {
  const ref = await browser.newPage();
  await ref.setViewport({ width: 1400, height: 1000, deviceScaleFactor: 1 });
  await ref.goto('file://' + path.resolve(args.ref), { waitUntil: 'load' });
  await ref.waitForSelector('body[data-ready="1"]');
  const x0 = await patternX(ref), x = await patternX(page), bound = Number(args['max-shift'] || 200);
  await ref.close();
  if (Math.abs(x - x0) > bound) fail(`the long word moves the head's pattern ${Math.round(x - x0)} px (bound ${bound} px)`);
  const tok = await page.evaluate((pos) => window.hsViewer.views[0].tokens[pos], pos);
  const shown = await page.$eval(`.tokcol.dest .tok[data-pos="${pos}"]`, (b) => ({ text: b.lastChild.textContent, title: b.title }));
  const max = await page.evaluate(() => JSON.parse(document.getElementById('hs-data').textContent).max_label);
  if (Array.from(tok).length <= max) fail(`token ${pos} has ${Array.from(tok).length} code points, not over ${max}`);
  if (shown.text !== Array.from(tok).slice(0, max - 1).join('') + '…') fail(`token ${pos} is shown as '${shown.text}'`);
  if (shown.title.indexOf(tok) < 0) fail(`token ${pos}'s title '${shown.title}' does not hold it whole`);
  result.long_word_shift_px = Math.round(x - x0);
}

/* --keys: the token list is one Tab stop (arrows, Home, End move in it);
   the large head's status names the head shown after the head changes */
async function checkKeys(page, result) {
  const stops = await page.$$eval('.tokcol.dest .tok', (es) => es.filter((e) => e.tabIndex >= 0).length);
  if (stops !== 1) fail(`the token list has ${stops} Tab stops, expected 1`);
  await page.focus('.tokcol.dest .tok[tabindex="0"]');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  const at = await page.evaluate(() => document.activeElement.dataset.pos);
  if (at !== '2') fail(`Home, ArrowDown, ArrowDown in the token list focus token ${at}, not 2`);
  await page.keyboard.press('Tab');
  const out = await page.evaluate(() => document.activeElement.closest('.tokcol.dest') === null);
  if (!out) fail('Tab from a token goes to another token, not out of the list');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Tab');
  await page.keyboard.up('Shift');
  const back = await page.evaluate(() => document.activeElement.dataset.pos);
  if (back !== '2') fail(`Shift+Tab back into the token list focuses token ${back}, not the last one (2)`);
  /* the head's status after the head changes */
  const v = await page.evaluate(() => { const v = window.hsViewer.views[0]; return { L: v.L, H: v.H }; });
  await page.evaluate(() => window.hsViewer.select(0, 0, 'head'));
  await page.focus('canvas.head');
  await page.keyboard.press('ArrowRight');
  const l = v.L - 1, h = v.H - 1;
  await page.evaluate((l, h) => window.hsViewer.select(l, h, 'head'), l, h);
  const st = await page.$eval('canvas.head', (c) => [c.dataset.name, c.closest('figure').querySelector('.status').textContent]);
  if (!st[1].startsWith(st[0] + ' ·')) fail(`after switching to ${st[0]} the head's status says '${st[1]}'`);
  const want = await page.evaluate(() => { const v = window.hsViewer.views[0], c = v.current(); return v.value(c, v.dest, 1).toFixed(3); });
  if (!st[1].endsWith(': ' + want)) fail(`after switching to ${st[0]} the head's status says '${st[1]}', its cell holds ${want}`);
  result.keys = true;
}

/* --circuit REPORT: the Winograd evidence table gives ablation drops in
   points (the verdicts' unit), and a head the route's adjective-key rule
   names has that role in its "roles" cell */
async function checkCircuit(page, result) {
  const rep = JSON.parse(fs.readFileSync(args.circuit, 'utf8'));
  const rows = await page.$$eval('table.evidence tr', (trs) => trs.map((tr) => Array.from(tr.children).map((c) => c.textContent)));
  const hdr = rows[0], ca = hdr.indexOf('ablation drop crosser (points)'), cr = hdr.indexOf('roles');
  if (ca < 0 || cr < 0) fail(`evidence columns are ${hdr}`);
  const akd = rep.thresholds.adj_key_diff, feat = rep.verdict.route.features.adjective_key;
  let keyed = 0;
  rep.heads.forEach((h) => {
    const r = rows.find((x) => x[0] === h.name);
    if (!r) fail(`no evidence row for ${h.name}`);
    /* the page writes a negative number with U+2212, as the figures do */
    const pts = (100 * h.mean_ablation.drop.crosser).toFixed(2).replace('-', '\u2212');
    if (r[ca] !== pts) fail(`${h.name}: ablation drop shown as ${r[ca]}, the report's ${h.mean_ablation.drop.crosser} is ${pts} points`);
    const a = h.attention_at_14;
    const isKey = feat && Math.abs(a.crosser.adjective - a.crossed.adjective) >= akd;
    if (isKey !== r[cr].includes('adjective key')) fail(`${h.name}: roles '${r[cr]}', adjective-key by the route's rule: ${isKey}`);
    keyed += isKey;
  });
  if (!keyed) fail('no head of the report is an adjective-key head: the check checks nothing');
  result.adjective_key_heads = keyed;
}

/* --pin L1H1[,missing:1]: pin each head in the first folder's view; every
   compare panel shows that head by name, or says it is not in its folder
   (the folders named after "missing:" by their index on the page).
   --select (pin false): the same with the head only selected, not pinned */
async function checkPin(page, spec, result, pin = true) {
  const [name, missing] = spec.split(',');
  const miss = missing ? missing.replace(/^missing:/, '').split(':').map(Number) : [];
  const m = /^L(\d+)H(\d+)$/.exec(name);
  const what = pin ? 'pinned' : 'selected';
  if (!m) fail(`--${pin ? 'pin' : 'select'} ${spec}: not L<l>H<h>`);
  const shown = await page.evaluate((l, h, pin) => {
    window.hsViewer.select(l, h, 'head');
    if (pin) [...document.querySelectorAll('button')].find((b) => b.textContent === 'pin this head').click();
    return [...document.querySelectorAll('figure.compare canvas.head')].map((c) =>
      [c.dataset.name, c.dataset.missing, c.closest('figure').querySelector('h3').textContent]);
  }, Number(m[1]), Number(m[2]), pin);
  if (shown.length < 2) fail(`${shown.length} compare panels`);
  shown.forEach(([n, mi, cap], i) => {
    if (n !== name) fail(`compare panel ${i} shows ${n} (${cap}) with ${name} ${what}`);
    const want = miss.includes(i);
    if ((mi === '1') !== want) fail(`compare panel ${i}: ${want ? 'shows a head its folder lacks' : 'says its head is missing'} (${cap}) with ${name} ${what}`);
    if (want && !cap.includes('not in this folder')) fail(`compare panel ${i}'s caption '${cap}' does not say the head is missing`);
  });
  result[(pin ? 'pin_' : 'select_') + name] = shown.map((s) => s[2]);
}

/* --models N: the page's folders are of N models: one compare section per
   model holding two or more folders, each holding folders of one model only,
   and a line naming the N models */
async function checkModels(page, n, result) {
  const st = await page.evaluate(() => {
    const runs = window.hsViewer.views.map((v) => v.model);
    const secs = [...document.querySelectorAll('section.compare-model')].map((s) =>
      [s.dataset.model, s.querySelector('h2').textContent, s.querySelectorAll('canvas.head').length]);
    const note = document.querySelector('p.note');
    return { models: [...new Set(runs)].length, secs, note: note ? note.textContent : null };
  });
  if (st.models !== n) fail(`the views are of ${st.models} models, expected ${n}`);
  if (n > 1 && (!st.note || !st.note.includes(n + ' different models'))) fail(`no line says the folders hold ${n} models: ${st.note}`);
  for (const [key, h2, k] of st.secs) {
    const views = await page.evaluate((key) => window.hsViewer.views.filter((v) => v.model === key).length, key);
    if (views !== k) fail(`the compare section '${h2}' has ${k} panels for ${views} folders of its model`);
    if (n > 1 && !/ of .* \(\d+ layers x \d+ heads\)/.test(h2)) fail(`the compare section '${h2}' does not name its model`);
  }
  result.models = st;
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-viewer-'));
  const browser = await puppeteer.launch({
    executablePath: args.exe || '/usr/bin/chromium', headless: true, userDataDir: profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions',
      '--font-render-hinting=none'],
  });
  const result = {};
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000, deviceScaleFactor: 1 });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
    page.on('pageerror', (e) => errors.push('page error: ' + (e.stack || e.message)));
    if (args.csp) /* every CSP violation, from the first byte of the page on */
      await page.evaluateOnNewDocument(() => {
        window.__csp = [];
        document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.sample));
      });
    await page.goto('file://' + path.resolve(args.page), { waitUntil: 'load', timeout: 120000 });
    try {
      await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
    } catch (e) {
      fail('the page never became ready' + (errors.length ? ': ' + errors.join(' | ') : ''));
    }
    if (args.tokens) await checkTokens(page, result);
    if (args.focus) {
      const dest = await page.evaluate(() => window.hsViewer.views[0].dest);
      await checkFocus(browser, page, 'canvas.head', ['ArrowUp', 'ArrowRight'], [dest - 1, 1], result);
      await checkFocus(browser, page, 'canvas[id^="fig-"]', ['ArrowDown', 'ArrowRight'], [1, 1], result);
    }
    if (args.keys) await checkKeys(page, result);
    if (args.circuit) await checkCircuit(page, result);
    if (args.select) for (const spec of String(args.select).split(';')) await checkPin(page, spec, result, false);
    if (args.pin) for (const spec of String(args.pin).split(';')) await checkPin(page, spec, result);
    if (args.models) await checkModels(page, Number(args.models), result);
    if (args.heading) {
      const h1 = await page.$eval('h1', (e) => e.textContent);
      if (h1 !== args.heading) fail(`the page's heading is '${h1}', expected '${args.heading}'`);
      result.heading = h1;
    }
    if (args.csp) {
      /* the page's own scripts ran (it is ready); the injected ones did not */
      if (await page.$('#hs-injected') === null) fail('the page has no injected element #hs-injected');
      await page.click('#hs-injected');
      await frames(page);
      const st = await page.evaluate(() => ({ pwned: document.body.dataset.pwned || null, csp: window.__csp }));
      if (st.pwned) fail(`an injected inline handler ran (${st.pwned})`);
      if (st.csp.length < 3) fail(`${st.csp.length} CSP violations reported, expected the 3 injected ones: ${st.csp}`);
      /* the CSP's own complaints are what this check expects on the console */
      for (let i = errors.length - 1; i >= 0; i--) if (/Content Security Policy/.test(errors[i])) errors.splice(i, 1);
      result.csp_blocked = st.csp;
    }
    if (args.long !== undefined) await checkLong(browser, page, Number(args.long), result);
    if (args.bidi !== undefined) await checkBidi(page, Number(args.bidi), result);
    if (args.shot) await page.screenshot({ path: args.shot, fullPage: true });
    if (errors.length) fail('errors in the page: ' + errors.join(' | '));
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => fail(e.stack || String(e)));
