// Behaviours a review found missing, each checked in a real Chromium against
// the real binary:
//   - Enter on the unchanged query searches again (a relative range moves on);
//   - a new search from the sidebar closes the expanded hit (it is no longer
//     in the URL, so a stale hit is not pinned over the new results);
//   - a failed next page ("Load more") is not retried in a loop: the page
//     makes one failing request and waits for Retry, which loads the page.
import { ingest, run, waitUntil } from './harness.mjs';

const now = Date.now();
const events = Array.from({ length: 450 }, (_, i) => ({
  '@timestamp': new Date(now - (i + 1) * 1000).toISOString(),
  message: `review line ${i}`,
  level: i % 10 === 0 ? 'ERROR' : 'INFO',
  host: { name: i % 2 ? 'gpu-node-a' : 'gpu-node-b' },
}));
const fragment = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, events);
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  const searches = () => seen.responses.filter((r) => new URL(r.url()).pathname === '/api/v1/search');

  await page.goto(`${server.url}/#q=review`);
  await waitUntil('the first page', async () => (await page.locator('#hits li').count()) > 0);

  // Enter on the same query runs it again.
  const before = searches().length;
  await page.locator('#q').press('Enter');
  await waitUntil('a new search request', async () => searches().length > before)
    .catch(() => {});
  t.check('Enter on the unchanged query searches again', searches().length > before,
          `${before} -> ${searches().length}`);

  // Expand a hit (its id goes to the URL), then narrow from the sidebar.
  await page.locator('#hits li summary').first().click();
  await waitUntil('the hit in the URL', async () => (fragment(page).get('hit') ?? '') !== '');
  const hostField = page.locator('#sidebar .field[data-field="host.name"]');
  await hostField.locator('.value-include').first().click();
  await waitUntil('the facet in the query', async () => /gpu-node/.test(fragment(page).get('q') ?? ''));
  t.check('a facet click closes the expanded hit', (fragment(page).get('hit') ?? '') === '',
          fragment(page).toString());

  // A failing next page: one request, no loop, then Retry loads it.
  await page.goto(`${server.url}/#q=review&from=now-24h&to=now`);
  await page.reload();
  await waitUntil('the first page again', async () => (await page.locator('#hits li').count()) > 0);
  let failed = 0;
  const nextPages = (url) => url.pathname === '/api/v1/search' && url.searchParams.has('cursor');
  await page.route(nextPages, (route) => {
                     failed++;
                     return route.fulfill({ status: 500, contentType: 'application/json',
                                            body: '{"error":{"type":"x","reason":"injected failure"}}' });
                   });
  await page.mouse.wheel(0, 100000);
  await waitUntil('the failed page', async () => failed > 0);
  await waitUntil('the error notice', async () => page.locator('.notice-error').isVisible());
  // Nothing to wait for: the check is that nothing more happens. A loop
  // would have made dozens of requests in this time.
  await page.waitForTimeout(1500);
  t.check('a failed next page is requested once, not in a loop', failed === 1, `${failed} requests`);
  await page.unroute(nextPages);
  const cursorPages = () => searches().filter((r) => new URL(r.url()).searchParams.has('cursor') &&
                                                  r.status() === 200).length;
  await page.locator('.notice-error button', { hasText: 'Retry' }).click();
  await waitUntil('the next page after Retry', async () => cursorPages() > 0).catch(() => {});
  t.check('Retry loads the next page', cursorPages() > 0 &&
          !(await page.locator('.notice-error').isVisible()), `${cursorPages()} pages`);

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  await context.close();
});
