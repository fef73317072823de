// The histogram and the field sidebar against a dashcam seeded with a few
// thousand generated training-log events over the last 6 hours: the bars
// add up to the search's total; hover shows a bucket; a drag narrows the
// range (URL, hits and total follow); the sidebar lists host.name with
// counts, a click filters for a value and the minus button filters it out;
// "Split histogram" makes the legend the host values. Screenshots: split
// histogram with the sidebar, and the dark theme.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ingest, run, waitUntil } from './harness.mjs';
import { trainingLogs } from './training_logs.mjs';

const EVENTS = 3000;
const shotDir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');

async function total(server, params) {
  const r = await fetch(`${server.url}/api/v1/search?${new URLSearchParams({ ...params, limit: 1 })}`);
  const body = await r.json();
  return typeof body.total === 'object' ? body.total.value : body.total;
}

const fragment = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
const histogramTotal = (page) => page.locator('#histogram').evaluate((s) => s.dataset.total ?? null);

// The clause the page writes for field:value (query_text.js, in the page).
function clause(page, field, value, negate = false) {
  return page.evaluate(async ([f, v, n]) => (await import('/query_text.js')).filterClause(f, v, { negate: n }),
                       [field, value, negate]);
}

async function shot(page, name) {
  mkdirSync(shotDir, { recursive: true });
  const path = join(shotDir, `${name}.png`);
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);
}

// Waits until the hits list shows only rows for which `ok(host)` holds.
async function hostsOfHits(page) {
  return page.locator('#hits .host').allTextContents();
}

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, trainingLogs(EVENTS), { index: 'train' });
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/#from=now-6h&to=now`);

  // Bars add up to the search total of the range.
  await waitUntil('histogram bars', () => page.locator('#histogram .bars path').count());
  const rangeTotal = await total(server, { from: 'now-6h', to: 'now' });
  t.check('the histogram counts every hit of the range',
          Number(await histogramTotal(page)) === rangeTotal && rangeTotal === EVENTS,
          `${await histogramTotal(page)} vs ${rangeTotal}`);
  const legend = await page.locator('#histogram .legend-label').allTextContents();
  t.check('stacked by level by default', ['ERROR', 'WARN', 'INFO', 'DEBUG'].every((l) => legend.includes(l)),
          JSON.stringify(legend));
  t.check('one path per level, not one node per bar',
          (await page.locator('#histogram .bars path').count()) === 4);

  // Hover shows a bucket's time and count.
  const box = await page.locator('#histogram svg').boundingBox();
  await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
  await page.locator('#histogram .histogram-tooltip').waitFor({ state: 'visible' });
  const tip = await page.locator('#histogram .histogram-tooltip').textContent();
  t.check('hover shows the bucket\'s count and levels', /\d+ hits/.test(tip) && /INFO/.test(tip), tip);

  // A drag across the plot narrows the range.
  await page.mouse.move(box.x + box.width * 0.55, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await waitUntil('an absolute range in the URL', () => /^\d{4}-/.test(fragment(page).get('from') ?? ''));
  const from = fragment(page).get('from'), to = fragment(page).get('to');
  const zoomed = await total(server, { from, to });
  t.check('the zoomed range is narrower and still has hits', zoomed > 0 && zoomed < rangeTotal,
          `${from}..${to}: ${zoomed}`);
  await waitUntil('the histogram of the zoomed range',
                  async () => Number(await histogramTotal(page)) === zoomed);
  await waitUntil('the hits of the zoomed range', async () => {
    const times = await page.locator('#hits .time').evaluateAll((n) => n.map((e) => e.title));
    return times.length > 0 && times.every((x) => x >= from && x < to);
  });
  t.check('hits and histogram follow the zoom', true);
  await page.goBack();
  await waitUntil('back to 6 h', () => fragment(page).get('from') === 'now-6h');
  // The plot must be the 6 h one again (5 min buckets) before the keys walk
  // it: on a loaded machine the zoomed plot (1 min buckets) can linger.
  await waitUntil('the 6 h histogram again',
                  async () => Number(await histogramTotal(page)) === rangeTotal);

  // Keyboard: focus the plot, walk to a bucket, Enter zooms into it.
  await page.locator('#histogram svg').focus();
  await page.keyboard.press('ArrowLeft');
  const keyTip = await page.locator('#histogram .histogram-tooltip').textContent();
  t.check('arrow keys show a bucket', /\d+ hits/.test(keyTip), keyTip);
  await page.keyboard.press('Enter');
  await waitUntil('Enter zooms into the bucket', () => /^\d{4}-/.test(fragment(page).get('from') ?? ''));
  const bucketMs = Date.parse(fragment(page).get('to')) - Date.parse(fragment(page).get('from'));
  t.check('Enter zooms into one bucket (5 min)', bucketMs === 300e3, String(bucketMs));
  await page.goBack();
  await waitUntil('back to 6 h', () => fragment(page).get('from') === 'now-6h');
  // The plot must be the 6 h one again (5 min buckets) before the keys walk
  // it: on a loaded machine the zoomed plot (1 min buckets) can linger.
  await waitUntil('the 6 h histogram again',
                  async () => Number(await histogramTotal(page)) === rangeTotal);

  // The sidebar: host.name with counts, sampled.
  const hostField = page.locator('#sidebar .field[data-field="host.name"]');
  await hostField.locator('.value-include').first().waitFor();
  const note = await page.locator('#sidebar .sidebar-note').textContent();
  t.check('the sidebar says it samples', /newest 500 hits/.test(note), note);
  const values = await hostField.locator('.value-text').allTextContents();
  const counts = await hostField.locator('.value-count').allTextContents();
  t.check('host.name with its top values and counts',
          values.length >= 3 && values.every((v) => /^gpu-node-\d$/.test(v)) &&
          counts.every((c) => Number(c) > 0), JSON.stringify([values, counts]));

  // Click a value: the query filters for it.
  const host = values[0];
  const only = await clause(page, 'host.name', host);
  const without = await clause(page, 'host.name', host, true);
  await hostField.locator('.value-include').first().click();
  await waitUntil('the query filters for the host', () => fragment(page).get('q') === only);
  await waitUntil('only that host\'s hits', async () => {
    const hosts = await hostsOfHits(page);
    return hosts.length > 0 && hosts.every((h) => h === host);
  });
  t.check('a clicked value filters the hits', true);
  t.check('the histogram counts only that host',
          Number(await histogramTotal(page)) ===
          await total(server, { q: only, from: 'now-6h', to: 'now' }));

  // The minus button: NOT host.name:value.
  await page.goBack();
  await waitUntil('back to all hosts', () => !fragment(page).get('q'));
  await page.locator('#sidebar .field[data-field="host.name"] .value-exclude').first().click();
  await waitUntil('the query filters the host out', () => fragment(page).get('q') === without);
  await waitUntil('no hit of that host', async () => {
    const hosts = await hostsOfHits(page);
    return hosts.length > 0 && hosts.every((h) => h !== host);
  });
  t.check('the minus button excludes the value', true);
  await page.goBack();
  await waitUntil('back to all hosts', () => !fragment(page).get('q'));

  // Split by host.name: the legend lists host values.
  await page.locator('#sidebar .field[data-field="host.name"] .field-actions button',
                     { hasText: 'Split histogram' }).click();
  await waitUntil('by=host.name', () => fragment(page).get('by') === 'host.name');
  await waitUntil('a legend of hosts', async () => {
    const labels = await page.locator('#histogram .legend-label').allTextContents();
    return labels.length >= 6 && labels.every((l) => /^gpu-node-\d$/.test(l));
  });
  t.check('"Split histogram" makes the legend the host values', true);
  const colours = await page.locator('#histogram .bars path').evaluateAll((p) => p.map((e) => e.getAttribute('fill')));
  t.check('each host has its own colour', new Set(colours).size === colours.length && colours.length >= 6,
          JSON.stringify(colours));
  await page.mouse.move(0, 0);
  await shot(page, 'histogram-split-sidebar');

  // A numeric field's average over time, per host.
  await page.locator('#sidebar .sidebar-filter').fill('gpu_util');
  await page.locator('#sidebar .field[data-field="gpu_util"] summary').click();  // measurements start closed
  await page.locator('#sidebar .field[data-field="gpu_util"] button', { hasText: 'Average over time' }).click();
  await waitUntil('value=avg:gpu_util', () => fragment(page).get('value') === 'avg:gpu_util');
  await waitUntil('lines per host', async () => (await page.locator('#histogram .lines path').count()) >= 6);
  t.check('"Average over time" draws a line per host', true);

  // Clicking a legend entry filters for that host.
  const entry = page.locator('#histogram button.legend-entry').nth(1);
  const label = await entry.locator('.legend-label').textContent();
  const expected = await clause(page, 'host.name', label);
  await entry.click();
  await waitUntil('legend click filters', () => fragment(page).get('q') === expected);
  t.check('a legend entry filters for its value', true);

  // Dark theme, narrow width.
  const dark = await browser.newContext({ colorScheme: 'dark', viewport: { width: 820, height: 900 } });
  const darkPage = await dark.newPage();
  await darkPage.goto(`${server.url}/#from=now-6h&to=now&by=host.name`);
  await waitUntil('dark histogram', () => darkPage.locator('#histogram .bars path').count());
  await darkPage.locator('#sidebar .field').first().waitFor();  // closed on a narrow screen
  const bg = await darkPage.evaluate(() => getComputedStyle(document.body).backgroundColor);
  t.check('the dark theme follows the system', bg === 'rgb(21, 23, 26)', bg);
  await shot(darkPage, 'dark-820px');
  await dark.close();

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
