// The official Elasticsearch JavaScript client (@elastic/elasticsearch 8)
// against the real dashcam binary: info(), helpers.bulk of 100 000 documents
// (all acknowledged, all counted), search() with query_string, a
// date_histogram aggregation and search_after paging.
//
//   node es_client_test.mjs <path to dashcam>
//
// Starts dashcam on a free loopback port with a temporary data directory and
// stops it (SIGTERM, expecting exit 0). Prints "N passed, M failed" and exits
// non-zero on any failure.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@elastic/elasticsearch';

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node es_client_test.mjs DASHCAM_BINARY');
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ` ${detail}`}`);
}

function startServer(dataDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['--listen', '127.0.0.1:0', '--beats-listen', '',
                                 '--data-dir', dataDir, '--threads', '2'],
                        { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${log}`)), 30000);
    child.stderr.on('data', (chunk) => {
      log += chunk;
      const m = log.match(/"event":"listening","addr":"127\.0\.0\.1:(\d+)"/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]) });
      }
    });
    child.on('exit', (code) => reject(new Error(`dashcam exited with ${code}:\n${log}`)));
  });
}

const kDocs = 100000;
const kStart = Date.parse('2026-11-29T10:00:00.000Z');
const users = ['zhangsan', 'lisi', 'alice'];
async function* documents() {
  for (let i = 0; i < kDocs; i++) {
    yield {
      '@timestamp': new Date(kStart + i * 60).toISOString(),  // 100 000 events over 100 minutes
      message: i % 50 === 0 ? `RuntimeError: CUDA out of memory (doc ${i})`
                            : `epoch 1 step ${i} loss=${(1 / (i + 1)).toFixed(4)}`,
      user: users[i % 3],
      host: { name: `gpu-node-${String(i % 16).padStart(2, '0')}` },
      doc: i,
    };
  }
}
// Expected: doc i has the phrase when i % 50 == 0, user zhangsan when i % 3 == 0.
const expectedOom = Array.from({ length: kDocs }, (_, i) => i)
  .filter((i) => i % 50 === 0 && i % 3 === 0).length;

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'dashcam-esjs-'));
  const { child, port } = await startServer(dataDir);
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    // helpers.bulk keeps 5 bulks of ~5 MB in flight; under ASan on a busy
    // 2-core machine the last one waits for the writer longer than the
    // client's 30 s default. The test is about compatibility, not latency.
    const client = new Client({ node: `http://127.0.0.1:${port}`, requestTimeout: 600000 });

    const info = await client.info();
    check('info() reads the version', /^8\.\d+\.\d+$/.test(info.version.number), info.version.number);

    const result = await client.helpers.bulk({
      datasource: documents(),
      onDocument: () => ({ create: { _index: 'training-logs' } }),
      refreshOnCompletion: true,
      // A full ingest queue answers 429 per document, which the helper
      // resends after `wait`; its default 3 tries can run out on a loaded
      // machine, where Filebeat would keep retrying. Keep retrying for ~2 min.
      retries: 40,
      wait: 3000,
      onDrop: (d) => console.error('dropped', JSON.stringify(d).slice(0, 300)),
    });
    check('helpers.bulk: every document acknowledged',
          result.successful === kDocs && result.failed === 0, JSON.stringify(result));

    const count = await client.count({ index: 'training-logs' });
    check('count() finds all of them', count.count === kDocs, `${count.count}`);

    const q = await client.search({
      index: 'training-*',
      query: { query_string: { query: 'message:"CUDA out of memory" AND user:zhangsan' } },
      size: 10000,
      track_total_hits: true,
    });
    const docs = q.hits.hits.map((h) => h._source.doc);
    check('search() with query_string: exact hits',
          q.hits.total.value === expectedOom && docs.length === expectedOom &&
            docs.every((d) => d % 50 === 0 && d % 3 === 0),
          `total ${q.hits.total.value}, expected ${expectedOom}`);

    const agg = await client.search({
      index: 'training-logs',
      size: 0,
      aggs: { per_10m: { date_histogram: { field: '@timestamp', fixed_interval: '10m' } } },
    });
    const buckets = agg.aggregations.per_10m.buckets;
    check('date_histogram: 10 buckets of 10 000',
          buckets.length === 10 && buckets.every((b) => b.doc_count === 10000) &&
            buckets[0].key === kStart,
          JSON.stringify(buckets.slice(0, 2)));

    const seen = new Set();
    let after;
    let previous = Infinity;
    let ordered = true;
    for (;;) {
      const page = await client.search({
        index: 'training-logs',
        size: 5000,
        sort: [{ '@timestamp': 'desc' }],
        ...(after ? { search_after: after } : {}),
      });
      const hits = page.hits.hits;
      if (hits.length === 0) break;
      for (const h of hits) {
        seen.add(h._source.doc);
        if (h.sort[0] > previous) ordered = false;
        previous = h.sort[0];
      }
      after = hits[hits.length - 1].sort;
    }
    check('search_after pages through every document once, newest first',
          seen.size === kDocs && ordered, `${seen.size} seen, ordered ${ordered}`);
  } finally {
    child.kill('SIGTERM');
    const code = await exited;
    check('dashcam exits 0 on SIGTERM', code === 0, `exit ${code}`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main()
  .catch((e) => {
    failed++;
    console.error(e);
  })
  .finally(() => {
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  });
