// The page against a dashcam without --auth-file (loopback, the default), in
// a real Chromium: it searches at once and never asks for a key, because no
// answer is a 401 (the key form is not merely hidden: it is never opened).
import { hitMessages, ingest, run, waitUntil } from './harness.mjs';

const now = Date.now();
const events = [1, 2].map((i) => ({
  '@timestamp': new Date(now - i * 1000).toISOString(),
  message: `open page event ${i}`,
}));

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, events);
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  // Count every opening of any <dialog> on the page.
  await page.addInitScript(() => {
    window.dialogOpenings = 0;
    for (const name of ['show', 'showModal']) {
      const original = HTMLDialogElement.prototype[name];
      HTMLDialogElement.prototype[name] = function (...args) {
        window.dialogOpenings++;
        return original.apply(this, args);
      };
    }
  });
  await page.goto(`${server.url}/`);
  await waitUntil('2 hits', async () => (await hitMessages(page)).length === 2);
  const messages = (await hitMessages(page)).sort();
  t.check('the page lists the events without a key',
          JSON.stringify(messages) === JSON.stringify(events.map((e) => e.message).sort()),
          JSON.stringify(messages));
  t.check('the key form never opened',
          (await page.evaluate(() => window.dialogOpenings)) === 0 &&
          !(await page.locator('#key-dialog').evaluate((d) => d.open)));
  t.check('no answer was a 401', seen.responses.every((r) => r.status() !== 401),
          seen.responses.map((r) => r.status()).join(','));
  t.check('no Authorization header is sent without a key',
          seen.responses.every((r) => !('authorization' in r.request().headers())));
  t.check('"Forget key" is not offered', !(await page.locator('#forget-key').isVisible()));

  // A search typed in the box works the same.
  await page.locator('#q').fill('"event 2"');
  await page.locator('#q').press('Enter');
  await waitUntil('1 hit', async () => (await hitMessages(page)).length === 1);
  t.check('a typed search finds its event',
          (await hitMessages(page)).join() === 'open page event 2');
  t.check('still no key form', (await page.evaluate(() => window.dialogOpenings)) === 0);
  t.check('no JavaScript dialog', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
