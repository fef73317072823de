// The incidents panel (#insights) against the real binary's
// /api/v1/insights, on training_corpus.mjs: the burst of CUDA OOM lines
// across 4 hosts and 8 ranks of run r-oom is one card (×8, 4 hosts, 8
// ranks), newest first after the later r-xss incident; its explanation and
// fixes are collapsed until asked for; the run's record is linked
// (--run-link); "First event in context" opens the context dialog on the
// burst's first line ([rank0] on gpu-node-01), "Run's curves" the Runs
// view on r-oom (back returns); a message carrying markup
// renders as text; a search without incidents hides the panel; the panel
// works at 820 px. Screenshot: the panel.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ingest, run, waitUntil } from './harness.mjs';
import { XSS, trainingCorpus } from './training_corpus.mjs';

const shotDir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');

run(async (t) => {
  const server = await t.startDashcam({ args: ['--run-link', 'https://wandb.example/runs/{run.id}'] });
  const now = Date.now();
  await ingest(server, trainingCorpus(now), { index: 'fleet' });
  const browser = await t.launchBrowser();
  const { page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/#from=now-1h&to=now`);

  const cards = page.locator('#insights .incident');
  await waitUntil('two incident cards', async () => (await cards.count()) === 2);
  const titles = await cards.locator('.incident-title').allTextContents();
  t.check('newest incident first (r-xss, then the r-oom burst)',
          titles[0].includes(XSS) || (await cards.nth(0).locator('.incident-where').textContent()).includes('r-xss'),
          JSON.stringify(titles));
  const oom = cards.nth(1);
  const count = await oom.locator('.incident-count').textContent();
  t.check('the OOM burst across ranks is one incident of 8 lines', count === '×8', count);
  const where = await oom.locator('.incident-where').textContent();
  t.check('hosts, ranks and the run are summarised', /4 hosts/.test(where) && /8 ranks/.test(where) &&
          /run r-oom/.test(where) && /user zhangsan/.test(where), where);
  t.check('the card is marked by severity', /sev-(error|critical)/.test(await oom.getAttribute('class')));
  const first = await oom.locator('time').first();
  t.check('first seen in local time, UTC on hover',
          /\(UTC\)$/.test(await first.getAttribute('title')) &&
          new Date(await first.getAttribute('datetime')).getTime() === now - 20 * 60e3 + 30e3,
          await first.getAttribute('datetime'));
  const why = oom.locator('details.incident-why');
  t.check('the explanation is collapsed at first', !(await why.evaluate((d) => d.open)));
  await why.locator('summary').focus();
  await page.keyboard.press('Enter');
  const explanation = await why.locator('p').textContent();
  t.check('the explanation opens from the keyboard, with the extracted numbers',
          await why.evaluate((d) => d.open) && /2\.1/.test(explanation), explanation);
  t.check('fixes are listed', (await why.locator('.incident-fixes li').count()) > 0);
  t.check('the run\'s record is linked (--run-link)',
          await oom.locator('a.run-link').getAttribute('href') === 'https://wandb.example/runs/r-oom');

  // Screenshot with the explanation open.
  mkdirSync(shotDir, { recursive: true });
  const shot = join(shotDir, 'insights-panel.png');
  await page.locator('#insights').screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  // The first event in context: the burst's first line, marked.
  const open = oom.locator('.incident-context');
  await open.focus();
  await page.keyboard.press('Enter');
  const anchor = page.locator('#context-dialog .context-line.anchor .message');
  await anchor.waitFor();
  const anchorText = await anchor.textContent();
  t.check('"First event in context" opens the first OOM line ([rank0], gpu-node-01)',
          anchorText.startsWith('[rank0]: RuntimeError: CUDA out of memory'), anchorText);
  await page.keyboard.press('Escape');
  await page.locator('#context-dialog').waitFor({ state: 'hidden' });
  t.check('closing the context gives the focus back to the button',
          await open.evaluate((b) => document.activeElement === b));

  // Markup in log data is text.
  t.check('markup from a message renders as text, never as an element',
          await page.locator('#injected').count() === 0 &&
          await page.evaluate(() => window.__xss === undefined) &&
          (await cards.nth(0).textContent()).includes('r-xss'));

  // "Run's curves": the Runs view on the incident's run.
  await oom.locator('.incident-run').click();
  await page.locator('#view-runs .line-chart path.series').waitFor();
  t.check('"Run\'s curves" opens the Runs view on the incident\'s run',
          /view=runs/.test(page.url()) && /run=r-oom/.test(page.url()) &&
          await page.locator('.run-row[aria-selected="true"]').getAttribute('data-run') === 'r-oom');
  await page.goBack();
  await page.locator('#view-hits').waitFor();

  // Narrow: the card stays within the page.
  await page.setViewportSize({ width: 820, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  t.check('at 820 px nothing overflows sideways', overflow <= 0, `${overflow}px`);

  // A search without incidents hides the panel.
  await page.locator('#q').fill('heartbeat');
  await page.locator('#q').press('Enter');
  await page.locator('#insights').waitFor({ state: 'hidden' });
  t.check('a search without incidents hides the panel', true);

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
});
