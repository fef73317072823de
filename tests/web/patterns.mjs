// The Patterns tab against the real binary's /api/v1/patterns, on
// training_corpus.mjs: opened from the Hits tab by keyboard (← wraps round
// to the last tab), it lists templates most frequent first with counts,
// masks styled as placeholders, a sparkline per template, "new" on all but
// the heartbeat (also logged the hour before); a message with markup stays
// text; clicking the checkpoint template goes back to the hits, narrowed to
// its lines, and back returns to the patterns; placeholders and badges are
// AA in both themes. Screenshot: the tab.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hitMessages, ingest, run, waitUntil } from './harness.mjs';
import { contrasts } from './contrast.mjs';
import { trainingCorpus } from './training_corpus.mjs';

const shotDir = process.env.DASHCAM_SCREENSHOT_DIR || join(process.cwd(), 'web-screenshots');

run(async (t) => {
  const server = await t.startDashcam();
  await ingest(server, trainingCorpus(Date.now()), { index: 'fleet' });
  const browser = await t.launchBrowser();
  const { page, seen } = await t.openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/#from=now-1h&to=now`);
  await page.locator('#hits li').first().waitFor();

  await page.locator('#tab-view-hits').focus();
  await page.keyboard.press('ArrowLeft');  // wraps round to the last tab
  const rows = page.locator('#view-patterns tbody tr');
  await waitUntil('patterns listed', async () => (await rows.count()) > 0);
  t.check('← from Hits wraps round to Patterns, in the URL',
          page.url().includes('view=patterns') && await page.locator('#view-hits').isHidden() &&
          await page.locator('#tab-view-patterns').evaluate((b) => b === document.activeElement));
  const patterns = await rows.evaluateAll((trs) => trs.map((tr) => ({
    template: tr.querySelector('.pattern-template').textContent,
    placeholders: tr.querySelectorAll('.placeholder').length,
    count: Number(tr.querySelector('.pattern-count').textContent.replace(/\D/g, '')),
    isNew: !!tr.querySelector('.pattern-new'),
    spark: !!tr.querySelector('svg.sparkline path'),
  })));
  const find = (re) => patterns.find((p) => re.test(p.template));
  const steps = find(/step num loss num/);
  t.check('the 50 step lines are one template, masks as placeholders, first',
          steps && steps.count === 50 && steps.placeholders >= 3 && patterns[0] === steps,
          JSON.stringify(patterns));
  t.check('counts are most frequent first',
          patterns.every((p, i) => i === 0 || patterns[i - 1].count >= p.count));
  t.check('every template has a sparkline', patterns.every((p) => p.spark));
  const heartbeat = find(/^heartbeat ok$/);
  t.check('the heartbeat (also logged the hour before) is not new; the step lines are',
          heartbeat && heartbeat.count === 6 && !heartbeat.isNew && steps.isNew, JSON.stringify(heartbeat));
  t.check('a template with markup renders as text', await page.locator('#injected').count() === 0 &&
          !!find(/<img src=x/) && await page.evaluate(() => window.__xss === undefined));
  for (const scheme of ['dark', 'light']) {
    await page.emulateMedia({ colorScheme: scheme });
    const low = (await contrasts(page, '.placeholder, .pattern-new')).filter((c) => c.ratio < 4.5);
    t.check(`placeholders and "new" badges are AA in the ${scheme} theme`, low.length === 0, JSON.stringify(low));
  }
  mkdirSync(shotDir, { recursive: true });
  const shot = join(shotDir, 'patterns-tab.png');
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  await page.locator('#view-patterns .pattern-template', { hasText: 'Checkpoint saved' }).click();
  await waitUntil('the hits of the checkpoint template', async () => {
    if (await page.locator('#view-hits').isHidden()) return false;
    const m = await hitMessages(page);
    return m.length === 2 && m.every((x) => x.startsWith('Checkpoint saved to'));
  });
  const q = await page.locator('#q').inputValue();
  t.check('clicking a template shows its lines in the hits', q === '"Checkpoint saved to"', q);
  await page.goBack();
  await waitUntil('back on the patterns', async () => page.url().includes('view=patterns') &&
    await page.locator('#view-patterns').isVisible() && (await rows.count()) > 0);
  t.check('back returns to the patterns', await page.locator('#q').inputValue() === '');

  await page.setViewportSize({ width: 820, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  t.check('at 820 px nothing overflows sideways', overflow <= 0, `${overflow}px`);

  t.check('no uncaught error', seen.errors.length === 0, JSON.stringify(seen.errors));
  t.check('no CSP violation', seen.cspViolations.length === 0, JSON.stringify(seen.cspViolations));
});
