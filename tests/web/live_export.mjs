// Live tail and export. Tail: turned on, an event ingested with _bulk
// appears on top within seconds (one that does not match the query does
// not), the rate is shown, scrolling down pauses it ("paused — N new,
// resume"), resume puts the waiting events on top, turning it off closes
// the stream. Export: NDJSON and CSV of the current query and range, checked
// through playwright's download event.
import { readFileSync } from 'node:fs';
import { ingest, run, waitUntil } from './harness.mjs';
import { screenshot } from './screenshots.mjs';

const now = Date.now();
const base = Array.from({ length: 120 }, (_, i) => ({
  '@timestamp': new Date(now - (i + 1) * 1000).toISOString(),
  message: `tailtest base line ${i}`,
  level: i % 10 === 0 ? 'ERROR' : 'INFO',
  host: { name: `gpu-node-${i % 4}` },
}));

async function post(server, events) {
  const body = events.map((e) => `{"create":{"_index":"live"}}\n${JSON.stringify(e)}\n`).join('');
  const r = await fetch(`${server.url}/_bulk`, { method: 'POST', body,
                                               headers: { 'Content-Type': 'application/x-ndjson' } });
  if (r.status !== 200) throw new Error(`_bulk: ${r.status}`);
}

async function tailSubscribers(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = text.match(/^dashcam_tail_subscribers (\d+)/m);
  return m ? Number(m[1]) : -1;
}

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, base, { index: 'base' });
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/#q=tailtest`);
  const first = () => page.locator('#hits .message').first().textContent();
  await waitUntil('the base lines', async () => (await first()) === 'tailtest base line 0');

  // Tail on: a matching event appears on top, a non-matching one does not.
  await page.locator('.tail-toggle').click();
  t.check('the toggle is pressed', await page.locator('.tail-toggle').getAttribute('aria-pressed') === 'true');
  await waitUntil('the tail connected', async () => (await page.locator('.tail-state').textContent()) === 'live');
  await waitUntil('the server has the subscriber', async () => (await tailSubscribers(server)) === 1);
  const sent = Date.now();
  await post(server, [{ message: 'unrelated line' }, { message: 'tailtest live one', level: 'WARN' }]);
  await waitUntil('the live event on top', async () => (await first()) === 'tailtest live one', 10000);
  console.log(`live event shown ${Date.now() - sent} ms after _bulk was sent`);
  t.check('a live event appears on top', true);
  t.check('a non-matching event does not',
          !(await page.locator('#hits .message').allTextContents()).includes('unrelated line'));
  await waitUntil('a rate', async () => /ev\/s$/.test(await page.locator('.tail-rate').textContent()));
  t.check('the rate is shown', true);
  await screenshot(page, 'live-tail');

  // Scrolling down pauses; events wait; resume puts them on top.
  await page.mouse.move(640, 500);
  await page.mouse.wheel(0, 1500);
  await page.locator('.tail-resume').waitFor({ state: 'visible' });
  t.check('scrolling down pauses the tail', true);
  await post(server, [{ message: 'tailtest while paused' }]);
  await waitUntil('1 new while paused', async () =>
    (await page.locator('.tail-resume').textContent()) === 'paused — 1 new, resume', 10000);
  const listed = () => page.locator('#hits > li').first().getAttribute('aria-setsize').then(Number);
  t.check('paused: the new events are counted, not inserted', (await listed()) === base.length + 1,
          String(await listed()));
  await page.locator('.tail-resume').click();
  await waitUntil('resumed', async () => (await first()) === 'tailtest while paused');
  t.check('resume puts them on top', await page.evaluate(() => scrollY) === 0);

  // Off: the stream is closed.
  await page.locator('.tail-toggle').click();
  await waitUntil('no subscriber', async () => (await tailSubscribers(server)) === 0);
  t.check('turning the tail off closes the stream', true);

  // Export: NDJSON of the query and range.
  await page.locator('#q').fill('tailtest AND level:ERROR');
  await page.locator('#q').press('Enter');
  await waitUntil('12 hits', async () => (await page.locator('#hits li').count()) === 12);
  const download = async (format) => {
    await page.locator('#export-format').selectOption(format);
    const [d] = await Promise.all([page.waitForEvent('download'), page.locator('#export-button').click()]);
    return { name: d.suggestedFilename(), text: readFileSync(await d.path(), 'utf8') };
  };
  const ndjson = await download('ndjson');
  const lines = ndjson.text.trim().split('\n').map((l) => JSON.parse(l));
  t.check('NDJSON export: a .ndjson file', /^dashcam-.*\.ndjson$/.test(ndjson.name), ndjson.name);
  t.check('NDJSON export: every hit of the query, one per line',
          lines.length === 12 && lines.every((h) => h._source.level === 'ERROR' && h._source.message.startsWith('tailtest')),
          ndjson.text.slice(0, 300));
  const csv = await download('csv');
  const rows = csv.text.trim().split('\r\n');
  t.check('CSV export: header and rows', /\.csv$/.test(csv.name) && rows[0] === '@timestamp,level,host.name,message' &&
          rows.length === 13, rows.slice(0, 2).join(' | '));
  await waitUntil('export status', async () => /^Exported/.test(await page.locator('.export-status').textContent()));
  t.check('the export says it is done', true);

  t.check('no JavaScript dialog', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
