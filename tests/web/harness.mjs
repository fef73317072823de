// What every browser test needs: the real dashcam on a free loopback port with
// a temporary data directory, a real Chromium driven by playwright-core, and
// events ingested over HTTP. One topic per file (tests/web/*.mjs), each
// run by ctest as
//
//   node tests/web/<topic>.mjs <path to dashcam> [<path to chromium>]
//
// A test file calls run(async (t) => { ... }): `t.check(name, ok, detail)`
// records a result; run prints "N passed, M failed", stops every server and
// browser it started, and exits non-zero on any failure or exception.
//
// Never sleep: wait for a condition (waitUntil, or playwright's waits) with a
// generous timeout; under ASan the server is several times slower.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const kTimeoutMs = 30000;
// A whole test file's budget: below ctest's TIMEOUT (300 s), so a test that
// hangs (a page.evaluate whose promise never settles, say) fails with what it
// was doing and still stops its servers, instead of being killed silently.
const kTestBudgetMs = Number(process.env.DASHCAM_BROWSER_BUDGET_MS || 240000);

const binary = process.argv[2];
const chromiumPath = process.argv[3] || process.env.DASHCAM_CHROMIUM || '/usr/bin/chromium';

export function base64(text) {
  return Buffer.from(text, 'utf8').toString('base64');
}

// A dashcam process: `url` ends without a slash; stop() sends SIGTERM and
// resolves to the exit code.
class Dashcam {
  constructor(child, port, log) {
    this.child = child;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.log = log;
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }
  async stop() {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}

function spawnDashcam(dataDir, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['--listen', '127.0.0.1:0', '--beats-listen', '',
                                 '--data-dir', dataDir, '--threads', '2',
                                 '--compress-after', '8', ...args],
                        { stdio: ['ignore', 'ignore', 'pipe'] });
    const log = { text: '' };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dashcam printed no listening line:\n${log.text}`));
    }, kTimeoutMs);
    child.stderr.on('data', (chunk) => {
      log.text += chunk;
      const m = log.text.match(/"event":"listening","addr":"127\.0\.0\.1:(\d+)"/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        clearTimeout(timer);
        resolve(new Dashcam(child, child.port, log));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dashcam exited with ${code}:\n${log.text}`));
    });
  });
}

// An --auth-file entry from the real `dashcam hash-key` (few iterations:
// tests verify many keys).
export function keyEntry(id, role, key) {
  const r = spawnSync(binary, ['hash-key', '--id', id, '--role', role, '--iterations', '1000'],
                      { input: `${key}\n`, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hash-key failed: ${r.stderr}`);
  return r.stdout;
}

// Helpers of one test file; everything they start is stopped by run().
class TestRun {
  constructor() {
    this.passed = 0;
    this.failed = 0;
    this.cleanups = [];
    this.dir = mkdtempSync(join(tmpdir(), 'dashcam-browser-'));
  }

  check(name, ok, detail = '') {
    if (ok) this.passed++;
    else this.failed++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ` ${detail}`}`);
  }

  // `keys`: [{id, role, key}] written to an --auth-file; `args`: more flags.
  async startDashcam({ keys = null, args = [] } = {}) {
    const dir = mkdtempSync(join(this.dir, 'server-'));
    const extra = [...args];
    if (keys) {
      const file = join(dir, 'keys.yml');
      writeFileSync(file, `keys:\n${keys.map((k) => keyEntry(k.id, k.role, k.key)).join('')}`);
      extra.push('--auth-file', file);
    }
    const server = await spawnDashcam(join(dir, 'data'), extra);
    this.cleanups.push(async () => {
      const code = await server.stop();
      this.check('dashcam stops cleanly on SIGTERM', code === 0, `exit ${code}:\n${server.log.text}`);
    });
    return server;
  }

  async launchBrowser() {
    const browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
                                            args: ['--no-sandbox'] });
    this.cleanups.push(() => browser.close());
    return browser;
  }

  // A new page in a new context, watched: every JavaScript dialog (alert,
  // confirm, prompt: none is expected), uncaught error, CSP violation and
  // API response is recorded in the returned `seen`.
  async openPage(browser) {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(kTimeoutMs);
    const seen = { dialogs: [], errors: [], cspViolations: [], responses: [] };
    page.on('dialog', (d) => {
      seen.dialogs.push(`${d.type()}: ${d.message()}`);
      d.dismiss().catch(() => {});
    });
    page.on('pageerror', (e) => seen.errors.push(String(e)));
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) seen.cspViolations.push(m.text());
    });
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/')) seen.responses.push(r);
    });
    return { context, page, seen };
  }
}

// Posts `events` (objects) to `index` with _bulk and waits until a search
// finds that many events in it (so use a new index for each call). `auth` and
// `readAuth`: Authorization header values for the two, when auth is on.
export async function ingest(server, events, { auth, readAuth = auth, index = 'web' } = {}) {
  const body = events.map((e) => `{"create":{"_index":"${index}"}}\n${JSON.stringify(e)}\n`);
  const headers = { 'Content-Type': 'application/x-ndjson' };
  if (auth) headers.Authorization = auth;
  const r = await fetch(`${server.url}/_bulk`, { method: 'POST', headers, body: body.join('') });
  const answer = await r.json();
  if (r.status !== 200 || answer.errors) {
    throw new Error(`_bulk answered ${r.status}: ${JSON.stringify(answer).slice(0, 500)}`);
  }
  await waitUntil(`${events.length} events searchable in ${index}`,
                  async () => (await searchTotal(server, `_index:${index}`, readAuth)) >= events.length);
}

export async function searchTotal(server, q, auth) {
  const headers = auth ? { Authorization: auth } : {};
  const r = await fetch(`${server.url}/api/v1/search?q=${encodeURIComponent(q)}&limit=1`,
                        { headers });
  if (r.status !== 200) throw new Error(`search answered ${r.status}: ${await r.text()}`);
  const total = (await r.json()).total;
  return typeof total === 'object' ? total.value : total;
}

// Polls `condition` (async, truthy when met) every 50 ms up to `timeoutMs`.
export async function waitUntil(what, condition, timeoutMs = kTimeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// The texts of the hit rows' message cells on `page`.
export function hitMessages(page) {
  return page.locator('#hits .message').allTextContents();
}

export async function run(body) {
  if (!binary) {
    console.error('usage: node <test>.mjs DASHCAM_BINARY [CHROMIUM]');
    process.exit(2);
  }
  const t = new TestRun();
  let crashed = null;
  let watchdog;
  const overBudget = new Promise((_, reject) => {
    watchdog = setTimeout(() => reject(new Error(`the test ran past its ${kTestBudgetMs / 1000} s budget`)),
                          kTestBudgetMs);
  });
  try {
    await Promise.race([body(t), overBudget]);
  } catch (e) {
    crashed = e;
  }
  clearTimeout(watchdog);
  for (const cleanup of t.cleanups.reverse()) {
    try {
      await cleanup();
    } catch (e) {
      crashed ??= e;
    }
  }
  rmSync(t.dir, { recursive: true, force: true });
  if (crashed) {
    t.check('the test ran to its end', false, crashed.stack ?? String(crashed));
  }
  console.log(`${t.passed} passed, ${t.failed} failed`);
  process.exit(t.failed === 0 && t.passed > 0 ? 0 : 1);
}
