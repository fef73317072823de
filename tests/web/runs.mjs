// The Runs view against the real binary (/api/v1/runs,
// /api/v1/runs/{id}/metrics, /api/v1/insights) on training_corpus.mjs: a
// link with view=runs opens the view; the runs are listed with the right
// statuses (r-oom failed, r-done finished, r-stall stalled, r-live
// running), each linked to its record (--run-link); selecting r-oom
// (keyboard) draws its loss curve with one point per logged step and a
// marker at its OOM incident, its values walked with ←/→; grad_norm
// likewise; a metric it never logged is an empty state; back returns to
// the list; nothing overflows at 820 px; badges are AA in light and dark.
// Screenshots: the runs view, and dark at 820 px.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ingest, run, waitUntil } from './harness.mjs';
import { contrasts } from './contrast.mjs';
import { STEPS, trainingCorpus } from './training_corpus.mjs';

const shotDir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');

run(async (t) => {
  const server = await t.startDashcam({ args: ['--run-link', 'https://mlflow.example/#/runs/{run.id}'] });
  await ingest(server, trainingCorpus(Date.now()), { index: 'fleet' });
  const browser = await t.launchBrowser();
  const { page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  mkdirSync(shotDir, { recursive: true });

  // -- runs -----------------------------------------------------------------
  await page.goto(`${server.url}/#from=now-1h&to=now&view=runs`);
  const rows = page.locator('#view-runs .run-row');
  await waitUntil('the runs listed', async () => (await rows.count()) >= 4);
  const statuses = Object.fromEntries(await rows.evaluateAll((trs) => trs.map((tr) =>
    [tr.dataset.run, tr.querySelector('.run-status').textContent])));
  t.check('runs have the right statuses',
          statuses['r-oom'] === 'failed' && statuses['r-done'] === 'finished' &&
          statuses['r-stall'] === 'stalled' && statuses['r-live'] === 'running', JSON.stringify(statuses));
  const link = page.locator('.run-row[data-run="r-oom"] a.run-link');
  t.check('a run links to its record (--run-link), in a new tab without an opener',
          await link.getAttribute('href') === 'https://mlflow.example/#/runs/r-oom' &&
          await link.getAttribute('target') === '_blank' && /noopener/.test(await link.getAttribute('rel')),
          await link.getAttribute('href'));
  t.check('the Runs tab is the selected one',
          await page.locator('#tab-view-runs').getAttribute('aria-selected') === 'true' &&
          await page.locator('#view-hits').isHidden());

  await page.locator('.run-row[data-run="r-oom"] .run-id').focus();
  await page.keyboard.press('Enter');
  const curve = page.locator('#view-runs .line-chart path.series');
  await curve.waitFor();
  t.check('the loss curve has one point per logged step',
          Number(await curve.getAttribute('data-points')) === STEPS['r-oom'],
          await curve.getAttribute('data-points'));
  t.check('the run\'s OOM incident is marked on the curve',
          await page.locator('#view-runs .line-chart line.marker').count() === 1);
  t.check('the selected run is in the URL', page.url().includes('run=r-oom'));
  await page.locator('#view-runs .line-chart svg').focus();
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  const readout = await page.locator('#view-runs .run-chart .view-state').first().textContent();
  t.check('the curve\'s values are readable from the keyboard', /^step 1 · loss 2\.3062/.test(readout), readout);
  const shot = join(shotDir, 'runs-view.png');
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  await page.locator('#view-runs .metric-select').selectOption('grad_norm');
  await waitUntil('the grad_norm curve', async () => page.url().includes('metric=grad_norm') &&
    (await page.locator('#view-runs .line-chart svg').getAttribute('aria-label'))?.startsWith('grad_norm'));
  t.check('grad_norm has one point per step',
          Number(await curve.getAttribute('data-points')) === STEPS['r-oom']);
  await page.locator('#view-runs .metric-select').selectOption('tokens_per_s');
  const empty = page.locator('#view-runs .run-chart .view-state');
  await waitUntil('the empty state', async () => /no tokens_per_s values/.test(await empty.first().textContent()));
  t.check('a metric the run never logged is an empty state', true);
  await page.goBack();  // metric changes replace the entry; the run was pushed
  await waitUntil('back to the list without a run', async () =>
    !page.url().includes('run=') && await page.locator('#view-runs .run-detail').isHidden());
  t.check('back walks out of the selected run', true);

  await page.setViewportSize({ width: 820, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  t.check('at 820 px nothing overflows sideways', overflow <= 0, `${overflow}px`);

  // Badges keep AA contrast in both themes; the dark one at 820 px is shown.
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    const low = (await contrasts(page, '.run-status, .incident-severity')).filter((c) => c.ratio < 4.5);
    t.check(`status and severity badges are AA in the ${scheme} theme`, low.length === 0, JSON.stringify(low));
  }
  await page.locator('.run-row[data-run="r-oom"] .run-id').click();
  await page.locator('#view-runs .line-chart path.series').waitFor();
  const dark = join(shotDir, 'runs-view-dark-820px.png');
  await page.locator('#view-runs').screenshot({ path: dark });
  console.log(`screenshot: ${dark}`);

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
});
