// The search page's core against a seeded dashcam: a query's hits with the
// matched words marked (and the text otherwise literal), a syntax error
// shown under the bar with a caret (never an alert), quick and absolute
// time ranges, the URL round trip (a link with q/from/to/hit reopens the
// view; back/forward restore searches), the empty state's "widen the
// range", the syntax help, `/`, the query history, the loading and error
// states (slow, query timeout, 429, unreachable: answers faked with
// page.route), colour contrast in both themes, and screenshots (results,
// error, empty, dark theme, narrow width).
import { hitMessages, ingest, run, waitUntil } from './harness.mjs';
import { screenshot } from './screenshots.mjs';

const now = Date.now();
const ago = (ms) => new Date(now - ms).toISOString();
const MIN = 60e3, HOUR = 60 * MIN, DAY = 24 * HOUR;
const oom = 'CUDA out of memory on cuda:0 <b>not bold</b> & more';
const events = [
  { '@timestamp': ago(5 * MIN), message: oom, level: 'ERROR', host: { name: 'gpu-node-01' }, user: 'zhangsan', gpu_mem_mb: 79000 },
  { '@timestamp': ago(30 * MIN), message: 'step 100 loss 0.5', level: 'INFO', host: { name: 'gpu-node-02' }, user: 'lisi' },
  { '@timestamp': ago(3 * HOUR), message: 'NCCL watchdog timeout', level: 'WARN', host: { name: 'gpu-node-01' }, user: 'zhangsan' },
  { '@timestamp': ago(3 * DAY), message: 'checkpoint saved', level: 'INFO', host: { name: 'gpu-node-03' }, user: 'wangwu' },
  { '@timestamp': ago(20 * DAY), message: 'ancient event', level: 'DEBUG', host: { name: 'gpu-node-03' } },
];

const sorted = (a) => JSON.stringify([...a].sort());

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, events);
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  const hitsAre = async (what, messages) => {
    await waitUntil(what, async () => sorted(await hitMessagesPlain(page)) === sorted(messages))
      .catch(() => {});
    const got = await hitMessagesPlain(page);
    t.check(what, sorted(got) === sorted(messages), JSON.stringify(got));
  };
  const search = async (q) => {
    await page.locator('#q').fill(q);
    await page.locator('#q').press('Enter');
  };

  const started = Date.now();
  await page.goto(`${server.url}/`);
  await hitsAre('the default range (24 h) lists the last day, newest first',
                [oom, 'step 100 loss 0.5', 'NCCL watchdog timeout']);
  console.log(`first search rendered in ${Date.now() - started} ms (page load included)`);
  const order = await hitMessagesPlain(page);
  t.check('newest first', order[0] === oom && order[2] === 'NCCL watchdog timeout', JSON.stringify(order));
  t.check('the level badge is coloured by class',
          await page.locator('#hits li', { hasText: 'NCCL' }).locator('.level.lvl-warn').count() === 1);
  t.check('the time is local with UTC on hover',
          /\(UTC\)$/.test(await page.locator('#hits .time').first().getAttribute('title')));
  t.check('the 24 h quick range is shown pressed',
          await page.locator('.quick-ranges button[aria-pressed="true"]').textContent() === '24 h');
  await screenshot(page, 'results');

  // The example query's hits, with the phrase marked and the rest literal.
  await search('"out of memory"');
  await hitsAre('a phrase query finds its event', [oom]);
  const message = page.locator('#hits .message').first();
  const marks = await message.locator('mark').allTextContents();
  t.check('the matched words are in <mark>', JSON.stringify(marks) === '["out of memory"]', JSON.stringify(marks));
  t.check('the rest of the message is literal text',
          await message.textContent() === oom && await message.locator('b').count() === 0);

  // A syntax error: the reason and a caret under its position, no alert.
  await search('level:(ERROR OR');
  await page.locator('#error').waitFor({ state: 'visible' });
  const caret = (await page.locator('#error-caret').textContent()).split('\n');
  t.check('a syntax error shows the query and a caret under the position',
          caret[0] === 'level:(ERROR OR' && /^ +\^$/.test(caret[1]) && caret[1].length - 1 === 15,
          JSON.stringify(caret));
  t.check('the reason names the position', /position 15/.test(await page.locator('#error-reason').textContent()));
  t.check('the box is marked invalid', await page.locator('#q').getAttribute('aria-invalid') === 'true');
  await screenshot(page, 'error');
  t.check('no alert for a syntax error', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));

  // Quick ranges.
  await search('');
  await page.locator('#error').waitFor({ state: 'hidden' });
  await page.locator('.quick-ranges button', { hasText: '15 m' }).click();
  await hitsAre('15 m: the last quarter hour', [oom]);
  t.check('the URL holds the quick range', /from=now-15m/.test(page.url()), page.url());
  await page.locator('.quick-ranges button', { hasText: '7 d' }).click();
  await hitsAre('7 d: the last week', [oom, 'step 100 loss 0.5', 'NCCL watchdog timeout', 'checkpoint saved']);
  await page.locator('.quick-ranges button', { hasText: 'all' }).click();
  await hitsAre('all: every event', events.map((e) => e.message));
  const title = await page.locator('.range-label').getAttribute('title');
  t.check('the range label has a hover text', !!title, String(title));

  // An absolute range, typed in local time: 4 days ago to 2 days ago.
  const local = (ms) => page.evaluate((at) => {
    const d = new Date(at);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  }, ms);
  await page.locator('.custom-range > summary').click();
  await page.locator('#range-from').fill(await local(now - 4 * DAY));
  await page.locator('#range-to').fill(await local(now - 2 * DAY));
  await page.locator('.absolute-range button[type="submit"]').click();
  await hitsAre('an absolute range finds what is in it', ['checkpoint saved']);
  const label = await page.locator('.range-label').textContent();
  t.check('the absolute range is shown in local time', label.includes('→') && label.includes(':'), label);
  t.check('with UTC on hover', /UTC: .*Z → .*Z/.test(await page.locator('.range-label').getAttribute('title')));

  // A link reproduces the view, the expanded hit included.
  const checkpoint = await (await fetch(`${server.url}/api/v1/search?q=checkpoint&limit=1`)).json();
  const id = checkpoint.hits[0]._id;
  await page.goto('about:blank');
  await page.goto(`${server.url}/#q=checkpoint&from=now-7d&to=now&hit=${id}`);
  await hitsAre('a link runs its query over its range', ['checkpoint saved']);
  await page.locator(`#hits li[data-id="${id}"] details[open] table.kv`).waitFor();
  t.check('a link reopens its hit', true);
  t.check('the box shows the link\'s query', await page.locator('#q').inputValue() === 'checkpoint');
  t.check('the link\'s range is pressed',
          await page.locator('.quick-ranges button[aria-pressed="true"]').textContent() === '7 d');
  await search('NCCL');
  await hitsAre('a new search replaces it', ['NCCL watchdog timeout']);
  t.check('the new search closed the hit', !/hit=/.test(page.url()), page.url());
  await page.goBack();
  await hitsAre('back restores the previous search', ['checkpoint saved']);
  t.check('back restores the box', await page.locator('#q').inputValue() === 'checkpoint');
  await page.goForward();
  await hitsAre('forward restores the next one', ['NCCL watchdog timeout']);

  // The empty state offers to widen the range.
  await page.locator('.quick-ranges button', { hasText: '24 h' }).click();
  await search('ancient');
  await page.locator('#notice', { hasText: 'No hits — widen the range?' }).waitFor();
  t.check('no hits: the empty state shows', true);
  await screenshot(page, 'empty');
  await page.locator('#notice button', { hasText: 'All time' }).click();
  await hitsAre('"All time" widens the range and finds it', ['ancient event']);
  t.check('and hides the empty state', await page.locator('#notice').isHidden());

  // Syntax help: an example goes into the box.
  await page.locator('#q-help-button').click();
  await page.locator('#q-help').waitFor({ state: 'visible' });
  t.check('the help button says it is expanded', await page.locator('#q-help-button').getAttribute('aria-expanded') === 'true');
  await page.locator('#q-help .example', { hasText: 'level:(ERROR OR WARN)' }).click();
  t.check('a clicked example goes into the box', await page.locator('#q').inputValue() === 'level:(ERROR OR WARN)');
  t.check('and the help closes', await page.locator('#q-help').isHidden());
  await page.locator('#q').press('Enter');
  await hitsAre('the example runs', [oom, 'NCCL watchdog timeout']);

  // `/` focuses the box from anywhere but another field.
  await page.locator('#status').click();
  await page.keyboard.press('/');
  t.check('"/" focuses the query box', await page.evaluate(() => document.activeElement?.id === 'q'));
  const history = await page.locator('#q-history option').evaluateAll((o) => o.map((x) => x.value));
  t.check('recent queries are offered, newest first, once each',
          history[0] === 'level:(ERROR OR WARN)' && history.includes('"out of memory"') &&
          new Set(history).size === history.length, JSON.stringify(history));

  // Loading: nothing for a fast answer, "Searching…" for a slow one.
  await page.evaluate(() => {
    window.statusTexts = [];
    new MutationObserver(() => window.statusTexts.push(document.getElementById('status').textContent))
      .observe(document.getElementById('status'), { childList: true, characterData: true, subtree: true });
  });
  const fastStart = Date.now();
  await search('NCCL');
  await hitsAre('a fast search', ['NCCL watchdog timeout']);
  const fastMs = Date.now() - fastStart;
  // Only meaningful when the answer was faster than the page's 250 ms delay
  // (a loaded machine or an ASan server may be slower).
  t.check('a fast answer shows no "Searching…"',
          fastMs > 200 || !(await page.evaluate(() => window.statusTexts)).includes('Searching…'), `${fastMs} ms`);
  const searchUrl = '**/api/v1/search?*';
  await page.route(searchUrl, async (route) => {
    await new Promise((r) => setTimeout(r, 1200));
    await route.continue();
  });
  await search('step');
  await page.locator('#status.loading', { hasText: 'Searching…' }).waitFor();
  t.check('a slow answer shows "Searching…"', true);
  await hitsAre('and then its hits', ['step 100 loss 0.5']);
  await page.unroute(searchUrl);

  // Errors: a query timeout, too many requests (retried by itself), and
  // dashcam unreachable (retried by the button).
  const answer = (status, body, headers = {}) => page.route(searchUrl, (route) => route.fulfill({
    status, contentType: 'application/json', headers, body: JSON.stringify(body) }));
  await answer(503, { error: { type: 'query_timeout', reason: 'the query ran past 5000 ms' } });
  await search('loss');
  await page.locator('#notice.notice-error', { hasText: 'The query took too long' }).waitFor();
  t.check('a query timeout says so, with a retry', await page.locator('#notice button', { hasText: 'Retry' }).isVisible());
  await screenshot(page, 'error-timeout');
  await page.unroute(searchUrl);
  await answer(429, { error: { type: 'too_many_requests', reason: 'too many requests' } }, { 'Retry-After': '1' });
  await page.locator('#notice button', { hasText: 'Retry' }).click();
  await page.locator('#notice', { hasText: 'retrying in 1 s' }).waitFor();
  t.check('429: says when it retries', true);
  await page.unroute(searchUrl);
  await hitsAre('429: retried by itself after Retry-After', ['step 100 loss 0.5']);
  t.check('and the notice is gone', await page.locator('#notice').isHidden());
  await page.route(searchUrl, (route) => route.abort('connectionrefused'));
  await search('NCCL');
  await page.locator('#notice', { hasText: 'dashcam cannot be reached' }).waitFor();
  t.check('unreachable: says so', true);
  await page.unroute(searchUrl);
  await page.locator('#notice button', { hasText: 'Retry' }).click();
  await hitsAre('unreachable: Retry searches again', ['NCCL watchdog timeout']);

  // Contrast (WCAG AA, 4.5:1) of the row texts in both themes.
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    const worst = await page.evaluate(contrastOfRows);
    t.check(`${scheme} theme: row texts pass AA contrast`, worst.ratio >= 4.5, JSON.stringify(worst));
  }
  await screenshot(page, 'results-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 820, height: 900 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  t.check('820 px wide: nothing overflows sideways', overflow <= 0, `${overflow} px`);
  await screenshot(page, 'narrow');

  t.check('no JavaScript dialog', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});

// The messages as shown, without a redaction badge.
function hitMessagesPlain(page) {
  return page.locator('#hits .message').evaluateAll((cells) => cells.map((c) =>
    [...c.childNodes].filter((n) => !n.classList?.contains('redacted')).map((n) => n.textContent).join('')));
}

// In the page: the lowest contrast ratio of the hits' texts to the page.
function contrastOfRows() {
  const rgb = (s) => s.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bg = lum(rgb(getComputedStyle(document.body).backgroundColor));
  let worst = { ratio: Infinity };
  for (const el of document.querySelectorAll('#hits .time, #hits .level, #hits .host, #hits .user, #hits .message, #status, .range-label')) {
    const l = lum(rgb(getComputedStyle(el).color));
    const ratio = (Math.max(l, bg) + 0.05) / (Math.min(l, bg) + 0.05);
    if (ratio < worst.ratio) worst = { ratio: Math.round(ratio * 100) / 100, what: el.className, color: getComputedStyle(el).color };
  }
  return worst;
}
