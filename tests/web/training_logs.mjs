// Generated training-job logs for the browser tests: deterministic (a seeded
// generator), spread over the last `hours`, across hosts, ranks' files,
// levels and users, with numeric fields (gpu_util, gpu_mem_mb, loss).
const HOSTS = ['gpu-node-1', 'gpu-node-2', 'gpu-node-3', 'gpu-node-4', 'gpu-node-5', 'gpu-node-6'];
const USERS = ['zhangsan', 'alice', 'bob'];

function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// `count` events, newest last; every event's timestamp is in
// [now - hours, now - 1 min).
export function trainingLogs(count, { hours = 6, now = Date.now(), seed = 7 } = {}) {
  const random = prng(seed);
  const span = hours * 3600e3 - 60e3;
  const events = [];
  for (let i = 0; i < count; i++) {
    // More events on the first hosts, and more towards the end of the range.
    const host = HOSTS[Math.floor(random() ** 1.5 * HOSTS.length)];
    const rank = Math.floor(random() * 4);
    const r = random();
    const level = r < 0.08 ? 'ERROR' : r < 0.2 ? 'WARN' : r < 0.9 ? 'INFO' : 'DEBUG';
    const step = 1000 + i;
    const util = Math.round(40 + random() * 60);
    const message = level === 'ERROR'
      ? `CUDA out of memory. Tried to allocate ${Math.round(random() * 4000)} MiB (step ${step})`
      : level === 'WARN' ? `NCCL watchdog: slow collective on rank ${rank} (step ${step})`
        : `step ${step} loss ${(2 - i / count).toFixed(4)} gpu_util ${util}`;
    events.push({
      '@timestamp': new Date(now - 60e3 - span * (1 - Math.sqrt((i + random()) / count))).toISOString(),
      host: { name: host },
      log: { level, file: { path: `/var/log/train/rank${rank}.log` } },
      user: USERS[Math.floor(random() * USERS.length)],
      gpu_util: util,
      gpu_mem_mb: Math.round(20000 + random() * 60000),
      message,
    });
  }
  return events.sort((a, b) => a['@timestamp'].localeCompare(b['@timestamp']));
}
