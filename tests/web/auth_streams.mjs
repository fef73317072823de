// Export and live tail when dashcam requires keys (--auth-file): the user
// enters a read key in the key form; then the NDJSON download has the
// query's events, the tail shows an event ingested (with an ingest key) after
// it was turned on, and no request the page made after the key was entered
// was refused (401) or went without the key. Both streams are fetched through
// api.js, which adds the key header (EventSource and a plain <a href> could
// not).
import { readFileSync } from 'node:fs';
import { base64, ingest, run, waitUntil } from './harness.mjs';

const reader = { id: 'reader', role: 'read', key: 'read-secret-5b1e' };
const ingester = { id: 'ingester', role: 'ingest', key: 'ingest-secret-c27d' };
const readAuth = `ApiKey ${base64(`${reader.id}:${reader.key}`)}`;
const ingestAuth = `ApiKey ${base64(`${ingester.id}:${ingester.key}`)}`;

const now = Date.now();
const events = Array.from({ length: 5 }, (_, i) => ({
  '@timestamp': new Date(now - (i + 1) * 1000).toISOString(),
  message: `authstream line ${i}`,
  host: { name: 'gpu-node-07' },
}));

run(async (t) => {
  const server = await t.startDashcam({ keys: [reader, ingester] });
  await ingest(server, events, { auth: ingestAuth, readAuth, index: 'auth' });
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  const requests = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) requests.push(r);
  });

  await page.goto(`${server.url}/#q=authstream`);
  await page.locator('#key-dialog').waitFor({ state: 'visible' });
  const keyed = requests.length;
  await page.locator('#key-input').fill(`${reader.id}:${reader.key}`);
  await page.locator('#key-input').press('Enter');
  const first = () => page.locator('#hits .message').first().textContent();
  await waitUntil('the hits', async () => (await first()) === 'authstream line 0');
  t.check('the read key opens the page', !(await page.locator('#key-dialog').evaluate((d) => d.open)));

  // Export: NDJSON of the query.
  await page.locator('#export-format').selectOption('ndjson');
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-button').click()]);
  const text = readFileSync(await download.path(), 'utf8');
  const exported = text.trim().split('\n').map((l) => JSON.parse(l)._source.message);
  t.check('the NDJSON download has the events',
          JSON.stringify(exported.sort()) === JSON.stringify(events.map((e) => e.message).sort()),
          text.slice(0, 300));

  // Tail: an event ingested with the ingest key appears on top.
  await page.locator('.tail-toggle').click();
  await waitUntil('the tail connected', async () => (await page.locator('.tail-state').textContent()) === 'live');
  const body = `{"create":{"_index":"auth"}}\n${JSON.stringify({ message: 'authstream live one' })}\n`;
  const r = await fetch(`${server.url}/_bulk`, {
    method: 'POST', body, headers: { 'Content-Type': 'application/x-ndjson', Authorization: ingestAuth },
  });
  t.check('the ingest key ingests', r.status === 200, String(r.status));
  await waitUntil('the live event on top', async () => (await first()) === 'authstream live one', 15000);
  t.check('the tail shows the new event', true);
  t.check('the tail is still live', (await page.locator('.tail-state').textContent()) === 'live');
  await page.locator('.tail-toggle').click();

  // Every request since the key was entered: sent with it, never refused.
  const after = requests.slice(keyed);
  const paths = after.map((q) => new URL(q.url()).pathname);
  t.check('the export and the tail were requested after the key',
          paths.includes('/api/v1/export') && paths.includes('/api/v1/tail'), JSON.stringify(paths));
  const unkeyed = after.filter((q) => q.headers().authorization !== readAuth).map((q) => q.url());
  t.check('every request after the key carries it', unkeyed.length === 0, JSON.stringify(unkeyed));
  const statuses = await Promise.all(after.map(async (q) => [new URL(q.url()).pathname, (await q.response())?.status()]));
  const refused = statuses.filter(([, s]) => s === 401);
  t.check('no 401 after the key was entered', refused.length === 0, JSON.stringify(statuses));
  t.check('the key form stays closed', !(await page.locator('#key-dialog').evaluate((d) => d.open)));

  t.check('no JavaScript dialog', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
