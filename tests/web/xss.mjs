// Log events are attacker-controlled: markup in a message, in other fields,
// or in the query of the page's URL must show as literal text and run
// nothing. Checked in a real Chromium against the real binary: no element is
// made from event text (so this does not rely on the CSP, which would block
// inline handlers anyway), no JavaScript dialog opens, and no CSP violation is
// reported (a violation would mean markup got far enough to try).
import { hitMessages, ingest, run, waitUntil } from './harness.mjs';

const imgPayload = '<img src=x onerror=alert(1)>';
const scriptPayload = '<script>alert(2)</script>';
const svgPayload = '<svg onload=alert(3)>';
const now = Date.now();
const events = [
  { '@timestamp': new Date(now - 1000).toISOString(), message: imgPayload },
  {
    '@timestamp': new Date(now - 2000).toISOString(),
    message: 'markup in fields',
    host: { name: scriptPayload },
    log: { level: svgPayload },
    user: imgPayload,
  },
];
const injected = '#hits img, #hits script, #hits svg, #hits iframe, #error img, #error svg';

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, events);
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.goto(`${server.url}/`);
  await waitUntil('2 hits', async () => (await hitMessages(page)).length === 2);

  const messages = await hitMessages(page);
  t.check('a message with markup shows as literal text', messages.includes(imgPayload),
          JSON.stringify(messages));
  const row = page.locator('#hits li', { hasText: 'markup in fields' });
  t.check('a host name with markup shows as literal text',
          (await row.locator('.host').textContent()) === scriptPayload);
  t.check('a level with markup shows as literal text',
          (await row.locator('.level').textContent()) === svgPayload);

  // The expanded JSON of every hit.
  for (const summary of await page.locator('#hits summary').all()) await summary.click();
  await waitUntil('both hits expanded', async () =>
    (await page.locator('#hits details pre').count()) === 2);
  const json = (await page.locator('#hits details pre').allTextContents()).join('\n');
  t.check('the expanded JSON shows the markup as text',
          json.includes(JSON.stringify(imgPayload)) && json.includes(JSON.stringify(scriptPayload)),
          json);
  t.check('no element was made from event text', (await page.locator(injected).count()) === 0);

  // Markup in the URL's query: it goes to the search box and, as the query
  // does not parse, to the error and its caret.
  await page.goto('about:blank');
  await page.goto(`${server.url}/#q=${encodeURIComponent(`(${imgPayload}`)}`);
  await page.locator('#error').waitFor({ state: 'visible' });
  t.check('a query with markup is shown as text in the error',
          (await page.locator('#error-caret').textContent()).includes(imgPayload));
  t.check('no element was made from the query', (await page.locator(injected).count()) === 0);

  t.check('no script ran: no JavaScript dialog', seen.dialogs.length === 0,
          JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
