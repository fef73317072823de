// The context dialog and the query text the page writes.
//
// Context: two rank files on one host and a third file on another host, 60
// lines each, interleaved in time; opening the context of line 40 of one
// file shows that file's lines around it (none of the others), the anchor
// marked and in view; "More before" loads the rest; Escape closes it and the
// focus returns to the opener. The dialog is opened as a user does: the
// hit's row expanded, its "Show context" button clicked.
//
// Insights panel: hidden while there is no incident (insights.mjs has them).
//
// Query text: for host names full of the query language's specials (and
// values that contain one another), filterClause('host.name', v)
// (query_text.js, run in the page) finds exactly the event with that host,
// against the real server; numbers likewise.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ingest, run, waitUntil } from './harness.mjs';

const shotDir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');
const LINES = 60;
const now = Date.now();
const SOURCES = [
  { host: 'gpu-node-1', file: '/var/log/train/rank0.log', tag: 'r0' },
  { host: 'gpu-node-1', file: '/var/log/train/rank1.log', tag: 'r1' },
  { host: 'gpu-node-2', file: '/var/log/train/rank0.log', tag: 'n2' },
];
const contextEvents = [];
for (let i = 0; i < LINES; i++) {
  SOURCES.forEach((s, k) => contextEvents.push({
    '@timestamp': new Date(now - 3600e3 + i * 10e3 + k * 1000).toISOString(),
    host: { name: s.host },
    log: { level: i === 40 ? 'ERROR' : 'INFO', file: { path: s.file } },
    message: `${s.tag} line ${i}`,
  }));
}
const TRICKY = ['gpu-node-1', 'a"b', 'C:\\data\\x', 'not', 'x OR y', '张三', 'a b', 'a b c',
                'x', 'host.name:*', '(a)', 'AND', 'a*', '-x', 'a\\', 'new\nline'];

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, contextEvents, { index: 'ctx' });
  await ingest(server, TRICKY.map((h, i) => ({
    '@timestamp': new Date(now - 60e3 + i).toISOString(), host: { name: h }, message: `tricky ${i}`,
  })), { index: 'tricky' });
  const NUMBERS = [3, 30, -1, 0.5];
  await ingest(server, NUMBERS.map((n, i) => ({
    '@timestamp': new Date(now - 50e3 + i).toISOString(), gpu_id: n, message: `number ${i}`,
  })), { index: 'numbers' });
  const browser = await t.launchBrowser();
  const { context, page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/#from=now-2h&to=now`);
  await page.locator('#hits li').first().waitFor();

  // query_text.js: each tricky host found exactly by its clause.
  const clauses = await page.evaluate(async (hosts) => {
    const { filterClause } = await import('/query_text.js');
    return hosts.map((h) => filterClause('host.name', h));
  }, TRICKY);
  for (const [i, host] of TRICKY.entries()) {
    const q = `_index:tricky AND ${clauses[i]}`;
    const r = await fetch(`${server.url}/api/v1/search?${new URLSearchParams({ q, limit: 5 })}`);
    const body = await r.json();
    const hosts = (body.hits ?? []).map((h) => h._source.host.name);
    t.check(`filterClause finds exactly host ${JSON.stringify(host)} (${clauses[i]})`,
            r.status === 200 && hosts.length === 1 && hosts[0] === host,
            `${r.status} ${JSON.stringify(body).slice(0, 300)}`);
  }

  // Numbers, as the sidebar gives them (text and the field's types).
  const numberClauses = await page.evaluate(async (numbers) => {
    const { filterClause, typedValue } = await import('/query_text.js');
    return numbers.map((n) => filterClause('gpu_id', typedValue(String(n), ['number'])));
  }, NUMBERS);
  for (const [i, n] of NUMBERS.entries()) {
    const q = `_index:numbers AND ${numberClauses[i]}`;
    const r = await fetch(`${server.url}/api/v1/search?${new URLSearchParams({ q, limit: 5 })}`);
    const body = await r.json();
    const found = (body.hits ?? []).map((h) => h._source.gpu_id);
    t.check(`filterClause finds exactly gpu_id ${n} (${numberClauses[i]})`,
            r.status === 200 && found.length === 1 && found[0] === n,
            `${r.status} ${JSON.stringify(body).slice(0, 300)}`);
  }

  // Context of r0 line 40: find it, expand its row, click "Show context".
  await page.locator('#q').fill('"r0 line 40"');
  await page.locator('#q').press('Enter');
  await waitUntil('the one hit', async () =>
    JSON.stringify(await page.locator('#hits .message').allTextContents()) === '["r0 line 40"]');
  const row = page.locator('#hits > li').first();
  await row.locator('summary').click();
  const showContext = row.locator('.hit-actions button', { hasText: 'Show context' });
  await showContext.click();
  const dialog = page.locator('#context-dialog');
  await dialog.locator('.context-line.anchor').waitFor();
  const messages = () => dialog.locator('.context-line .message').allTextContents();
  let lines = await messages();
  const anchorText = await dialog.locator('.context-line.anchor .message').textContent();
  t.check('the anchor line is marked', anchorText === 'r0 line 40', anchorText);
  t.check('only lines of the same host and file', lines.every((m) => m.startsWith('r0 ')),
          JSON.stringify(lines));
  const index = lines.indexOf('r0 line 40');
  t.check('25 lines before and the 19 after, in order',
          index === 25 && lines.length === 45 && lines[0] === 'r0 line 15' && lines.at(-1) === 'r0 line 59',
          JSON.stringify(lines));
  t.check('the anchor is scrolled into view',
          await dialog.locator('.context-line.anchor').evaluate((row) => {
            const box = row.getBoundingClientRect();
            const view = row.parentElement.getBoundingClientRect();
            return box.top >= view.top && box.bottom <= view.bottom;
          }));
  t.check('"More after" is hidden at the end of the file', !(await dialog.getByText('More after').isVisible()));
  const scope = await dialog.locator('.context-scope').textContent();
  t.check('the dialog says which source', scope.includes('gpu-node-1') && scope.includes('rank0.log'), scope);
  mkdirSync(shotDir, { recursive: true });
  const path = join(shotDir, 'context.png');
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);

  await dialog.getByText('More before').click();
  await waitUntil('more lines before', async () => (await messages()).length > lines.length);
  lines = await messages();
  t.check('"More before" loads the earlier lines', lines[0] === 'r0 line 0' && lines.length === 60,
          JSON.stringify(lines));
  t.check('"More before" is hidden once the file starts', !(await dialog.getByText('More before').isVisible()));

  await page.keyboard.press('Escape');
  await waitUntil('the dialog closed', async () => !(await dialog.evaluate((d) => d.open)));
  t.check('focus returns to the "Show context" button',
          await showContext.evaluate((b) => b === document.activeElement));

  // The insights panel: hidden while there is nothing to show (these
  // lines hold no incident); insights.mjs shows it with real incidents.
  t.check('the insights panel is hidden without incidents', await page.locator('#insights').isHidden());

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
  await context.close();
});
