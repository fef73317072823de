// The page against a dashcam that requires keys (--auth-file with a read key
// and an ingest key), in a real Chromium: the key form on a 401 (and never the
// browser's own credentials dialog), wrong, ingest-only and right keys, the
// key kept in sessionStorage only (a reload keeps it, a new context does not),
// "Forget key", and the failure limiter's 429 shown in the form.
import { base64, hitMessages, ingest, run, waitUntil } from './harness.mjs';

const reader = { id: 'reader', role: 'read', key: 'read-secret-7f3a' };
const ingester = { id: 'ingester', role: 'ingest', key: 'ingest-secret-91c2' };
const readerToken = base64(`${reader.id}:${reader.key}`);
const ingestAuth = `ApiKey ${base64(`${ingester.id}:${ingester.key}`)}`;

const now = Date.now();
const events = [1, 2, 3].map((i) => ({
  '@timestamp': new Date(now - i * 1000).toISOString(),
  message: `webauth canary ${i}`,
  host: { name: 'gpu-node-01' },
}));

const keyFormOpen = (page) => page.locator('#key-dialog').evaluate((d) => d.open);
const keyErrorText = (page) => page.locator('#key-error').textContent();

// Types `value` into the key form and submits it with Enter.
async function submitKey(page, value) {
  await page.locator('#key-input').fill(value);
  await page.locator('#key-input').press('Enter');
}

// Waits until the key form shows an error matching `pattern`.
async function keyErrorMatching(page, pattern) {
  await waitUntil(`a key error matching ${pattern}`, async () =>
    pattern.test((await keyErrorText(page)) ?? '') && await page.locator('#key-error').isVisible());
  return keyErrorText(page);
}

function searchResponses(seen, status) {
  return seen.responses.filter((r) => r.status() === status &&
                                      new URL(r.url()).pathname === '/api/v1/search');
}

async function storage(page) {
  return page.evaluate(() => ({
    session: Object.fromEntries(Object.entries(sessionStorage)),
    localCount: localStorage.length,
    cookie: document.cookie,
  }));
}

async function keyPromptFlow(t, browser, server) {
  const { context, page, seen } = await t.openPage(browser);
  await page.goto(`${server.url}/`);
  await page.locator('#key-dialog').waitFor({ state: 'visible' });

  // The form is a real, accessible form with the focus in it.
  const form = await page.evaluate(() => {
    const input = document.getElementById('key-input');
    return {
      inForm: input.form?.id === 'key-form',
      type: input.type,
      label: input.labels?.[0]?.textContent ?? '',
      focused: document.activeElement === input,
      submit: !!input.form?.querySelector('button[type=submit]'),
      help: document.getElementById('key-help').textContent,
    };
  });
  t.check('a 401 opens the key form', form.inForm && form.submit, JSON.stringify(form));
  t.check('the key input is a labelled password field', form.type === 'password' &&
          /API key/i.test(form.label), JSON.stringify(form));
  t.check('the focus moves to the key input', form.focused);
  t.check('the form explains the id:key format', form.help.includes('id:key'), form.help);

  const refused = searchResponses(seen, 401);
  const challenges = refused.map((r) => r.headers()['www-authenticate'] ?? '');
  t.check('the page saw a 401 for its search', refused.length >= 1);
  t.check('its 401 offers only the ApiKey challenge (no Basic: no native dialog)',
          challenges.length > 0 && challenges.every((c) => c === 'ApiKey realm="dashcam"'),
          JSON.stringify(challenges));
  t.check('the page marks its requests as its own',
          refused.every((r) => r.request().headers()['x-dashcam-client'] === 'web'));
  t.check('no hits without a key', (await hitMessages(page)).length === 0);

  // Escape keeps the form and what was typed.
  await page.locator('#key-input').fill('reader:half-typ');
  await page.keyboard.press('Escape');
  t.check('Escape keeps the form open', await keyFormOpen(page));
  t.check('Escape keeps what was typed',
          (await page.locator('#key-input').inputValue()) === 'reader:half-typ');

  await submitKey(page, 'no colon here');
  const format = await keyErrorMatching(page, /id:key/);
  t.check('a key without id: is explained in the form', /id:key/.test(format), format);

  const before401 = searchResponses(seen, 401).length;
  await submitKey(page, `${reader.id}:not-the-key`);
  const wrong = await keyErrorMatching(page, /refused/i);
  t.check('a wrong key shows an error in the form', /invalid API key/i.test(wrong), wrong);
  t.check('the wrong key was sent and refused with 401',
          searchResponses(seen, 401).length === before401 + 1);
  t.check('still no hits after a wrong key', (await hitMessages(page)).length === 0);
  t.check('the form stays open after a wrong key', await keyFormOpen(page));

  await submitKey(page, `${ingester.id}:${ingester.key}`);
  const forbidden = await keyErrorMatching(page, /may not search/i);
  t.check('an ingest-only key is told it may not search', /ingest/.test(forbidden), forbidden);
  t.check('the ingest key got 403', searchResponses(seen, 403).length === 1);
  t.check('no hits for an ingest key', (await hitMessages(page)).length === 0);
  const afterRefusals = await storage(page);
  t.check('refused keys are not kept', Object.keys(afterRefusals.session).length === 0,
          JSON.stringify(afterRefusals));

  await submitKey(page, `${reader.id}:${reader.key}`);
  await page.locator('#key-dialog').waitFor({ state: 'hidden' });
  await waitUntil('3 hits', async () => (await hitMessages(page)).length === 3);
  const messages = (await hitMessages(page)).sort();
  t.check('the right key shows the ingested events',
          JSON.stringify(messages) === JSON.stringify(events.map((e) => e.message).sort()),
          JSON.stringify(messages));
  const ok = searchResponses(seen, 200).at(-1);
  t.check('the search carries the key as ApiKey base64(id:key)',
          ok?.request().headers().authorization === `ApiKey ${readerToken}`);
  const kept = await storage(page);
  t.check('sessionStorage holds the key',
          Object.values(kept.session).includes(readerToken), JSON.stringify(kept.session));
  t.check('localStorage and cookies do not', kept.localCount === 0 && kept.cookie === '' &&
          (await context.cookies()).length === 0, JSON.stringify(kept));
  t.check('"Forget key" is offered', await page.locator('#forget-key').isVisible());

  // A reload keeps the key (the tab's session) and asks nothing.
  const refusedBeforeReload = searchResponses(seen, 401).length;
  await page.reload();
  await waitUntil('3 hits after the reload', async () => (await hitMessages(page)).length === 3);
  t.check('a reload keeps the key: no prompt', !(await keyFormOpen(page)));
  t.check('a reload sends no unauthenticated request',
          searchResponses(seen, 401).length === refusedBeforeReload);

  // Another context (another browser profile's session) must ask again.
  const other = await t.openPage(browser);
  await other.page.goto(`${server.url}/`);
  await other.page.locator('#key-dialog').waitFor({ state: 'visible' });
  t.check('a new browser context is asked for the key', (await hitMessages(other.page)).length === 0);
  t.check('no JavaScript dialog in the other context', other.seen.dialogs.length === 0);
  await other.context.close();

  await page.locator('#forget-key').click();
  await page.locator('#key-dialog').waitFor({ state: 'visible' });
  const forgotten = await storage(page);
  t.check('"Forget key" asks again', await keyFormOpen(page));
  t.check('"Forget key" clears sessionStorage', Object.keys(forgotten.session).length === 0,
          JSON.stringify(forgotten.session));
  t.check('"Forget key" clears the hits', (await hitMessages(page)).length === 0);
  const lastChallenge = searchResponses(seen, 401).at(-1)?.headers()['www-authenticate'];
  t.check('after "Forget key" the 401 still has no Basic challenge',
          lastChallenge === 'ApiKey realm="dashcam"', lastChallenge);

  t.check('no JavaScript or credentials dialog ever opened', seen.dialogs.length === 0,
          JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
}

// The failure limiter: after its burst of wrong keys the form shows the 429.
async function lockoutFlow(t, browser) {
  const server = await t.startDashcam({
    keys: [reader],
    args: ['--auth-failure-burst', '2', '--auth-failure-refill-ms', '600000'],
  });
  const { context, page, seen } = await t.openPage(browser);
  await page.goto(`${server.url}/`);
  await page.locator('#key-dialog').waitFor({ state: 'visible' });
  for (let i = 1; i <= 2; i++) {
    await submitKey(page, `${reader.id}:wrong-${i}`);
    await waitUntil(`wrong key ${i} refused`, async () => searchResponses(seen, 401).length > i);
  }
  await submitKey(page, `${reader.id}:wrong-3`);
  const limited = await keyErrorMatching(page, /too many/i);
  t.check('the 429 of the failure limiter is shown in the form',
          /too many failed authentication attempts/.test(limited) && /\d+ s\)/.test(limited),
          limited);
  t.check('the limited key is not kept',
          Object.keys((await storage(page)).session).length === 0);
  t.check('no JavaScript dialog during the lockout', seen.dialogs.length === 0);
  await context.close();
}

run(async (t) => {
  const server = await t.startDashcam({ keys: [reader, ingester] });
  await ingest(server, events, { auth: ingestAuth, readAuth: `ApiKey ${readerToken}` });
  const browser = await t.launchBrowser();
  await keyPromptFlow(t, browser, server);
  await lockoutFlow(t, browser);
});
