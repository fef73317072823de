// An expanded hit: the key/value table (dotted keys) and the JSON, the
// "filter for" / "filter out" buttons (the query and the hits change), copy,
// the redaction badge, "Show context" (hidden unless the context part is
// there), keyboard (Enter expands, Escape collapses) and the expanded hit's
// _id in the URL without a new history entry.
import { ingest, run, waitUntil } from './harness.mjs';
import { screenshot } from './screenshots.mjs';
// The clause text itself is query_text.js's business (and is checked against
// the real server in context.mjs); here what matters is that the buttons use
// it and that the hits follow.
import { addClause, filterClause } from '../../web/static/query_text.js';

const now = Date.now();
const at = (s) => new Date(now - s * 1000).toISOString();
const events = [
  { '@timestamp': at(1), message: 'open http://gpu-node-01:8888/lab?token=0123456789abcdef0123', level: 'WARN',
    host: { name: 'gpu-node-01' }, user: 'zhangsan', gpu: { id: 0, mem_mb: 71234 }, tags: ['a', 'b'] },
  { '@timestamp': at(2), message: 'CUDA out of memory', level: 'ERROR', host: { name: 'gpu-node-01' }, user: 'lisi' },
  { '@timestamp': at(3), message: 'step 7 done', level: 'INFO', host: { name: 'gpu-node-02' }, user: 'zhangsan' },
];

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, events);
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/`);
  const messages = () => page.locator('#hits .message').evaluateAll((cells) => cells.map((c) =>
    [...c.childNodes].filter((n) => !n.classList?.contains('redacted')).map((n) => n.textContent).join('')));
  await waitUntil('3 hits', async () => (await messages()).length === 3);
  const redactedMessage = (await messages())[0];
  t.check('the token was redacted by the server', redactedMessage.includes('[REDACTED:jupyter_token]'), redactedMessage);

  const row = page.locator('#hits li').first();
  t.check('a redaction marker names the rule',
          await row.locator('.redacted').textContent() === 'redacted: jupyter_token');
  const historyBefore = await page.evaluate(() => history.length);
  await row.locator('summary').click();
  const table = row.locator('table.kv');
  await table.waitFor();
  const kv = await table.locator('tr').evaluateAll((trs) => trs.map((tr) =>
    [tr.querySelector('th').textContent, tr.querySelector('.kv-value').textContent]));
  const has = (k, v) => kv.some(([a, b]) => a === k && b === v);
  t.check('the table has dotted keys and their values',
          has('host.name', 'gpu-node-01') && has('gpu.id', '0') && has('gpu.mem_mb', '71234') &&
          has('redacted', 'jupyter_token') && has('tags', 'a') && has('tags', 'b') && has('_index', 'web'),
          JSON.stringify(kv));
  const json = JSON.parse(await row.locator('pre.json').textContent());
  t.check('the JSON is the whole hit', json._source?.gpu?.mem_mb === 71234 && json._id);
  const id = json._id;
  t.check('the expanded hit is in the URL', new URL(page.url()).hash.includes(`hit=${id}`), page.url());
  t.check('without a new history entry', await page.evaluate(() => history.length) === historyBefore);
  await screenshot(page, 'expanded-hit');

  // Copy a value.
  const copyButton = table.locator('tr', { hasText: 'gpu.mem_mb' }).locator('button.copy');
  await copyButton.click();
  await waitUntil('the copy button says Copied', async () =>
    (await copyButton.getAttribute('data-copied')) === 'yes');
  t.check('copy puts the value on the clipboard',
          await page.evaluate(() => navigator.clipboard.readText()) === '71234');

  // "Show context": offered only when the context part of the page is there.
  const showContext = row.locator('.hit-actions button', { hasText: 'Show context' });
  if (await showContext.isVisible()) {
    await showContext.click();
    await waitUntil('the context dialog opens', () => page.locator('#context-dialog').evaluate((d) => d.open));
    t.check('"Show context" opens the context', true);
    await page.keyboard.press('Escape');
  } else {
    t.check('"Show context" is hidden without the context part', true);
  }

  // Keyboard: Escape collapses (focus back on the row), Enter expands.
  await row.locator('.kv-tools button').first().focus();
  await page.keyboard.press('Escape');
  await waitUntil('collapsed', async () => !(await row.locator('details').evaluate((d) => d.open)));
  t.check('Escape collapses the hit', true);
  t.check('and focuses its row', await row.locator('summary').evaluate((s) => s === document.activeElement));
  // The URL follows the details' toggle event, which the browser queues after
  // `open` changes, so it is waited for, not read at once.
  const hitInUrl = () => new URL(page.url()).hash.includes('hit=');
  const urlDropped = await waitUntil('the URL drops the hit', () => !hitInUrl(), 5000).catch(() => false);
  t.check('a collapsed hit leaves the URL', urlDropped, page.url());
  await page.keyboard.press('Enter');
  await waitUntil('expanded again', () => row.locator('details').evaluate((d) => d.open));
  t.check('Enter expands the focused row', true);

  // Filter for a value, then filter out another.
  await table.locator('tr', { hasText: 'host.name' }).locator('button.filter-for').click();
  await waitUntil('the query has the clause', async () => (await page.locator('#q').inputValue()) !== '');
  const hostClause = filterClause('host.name', 'gpu-node-01');
  t.check('"filter for" writes the clause', await page.locator('#q').inputValue() === hostClause,
          await page.locator('#q').inputValue());
  await waitUntil('2 hits of gpu-node-01', async () => (await messages()).length === 2);
  t.check('"filter for" narrows the hits',
          JSON.stringify(await messages()) === JSON.stringify([redactedMessage, 'CUDA out of memory']),
          JSON.stringify(await messages()));
  const second = page.locator('#hits li').nth(1);
  await second.locator('summary').click();
  await second.locator('table.kv tr', { hasText: 'user' }).locator('button.filter-out').click();
  await waitUntil('1 hit', async () => (await messages()).length === 1);
  t.check('"filter out" adds a negated clause',
          await page.locator('#q').inputValue() ===
              addClause(hostClause, filterClause('user', 'lisi', { negate: true })),
          await page.locator('#q').inputValue());
  t.check('"filter out" removes those hits', (await messages())[0] === redactedMessage);
  await page.goBack();
  await waitUntil('back: 2 hits', async () => (await messages()).length === 2);
  t.check('back undoes a filter', await page.locator('#q').inputValue() === hostClause);

  t.check('no JavaScript dialog', seen.dialogs.length === 0, JSON.stringify(seen.dialogs));
  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
