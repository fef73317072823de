// A small training fleet's logs for the insights, runs and patterns tests
// (insights.mjs, runs.mjs): real PyTorch failure messages the detectors
// recognise (tests/ingest/insight_detectors_test.cpp), runs named by an
// explicit `run.id` field, training metrics as explicit `train.*` fields.
//
// Relative to `now` (ms), all within the last hour:
//   r-oom    4 hosts × 2 ranks, 20 steps of loss/grad_norm, then one CUDA OOM
//            per rank within 8 s (first: gpu-node-01 [rank0]) -> failed
//   r-done   10 steps, then a finishing line (run.end: finished)
//   r-stall  10 steps ending 40 min ago, no finishing line -> stalled
//   r-live   10 steps up to now -> running
//   r-xss    a later OOM whose message carries markup (<img ... onerror>)
// plus "heartbeat ok" lines in this hour and the hour before (the only
// template not new in the patterns view) and checkpoint lines.
export const OOM = 'RuntimeError: CUDA out of memory. Tried to allocate 2.10 GiB (GPU 0; 79.35 GiB total ' +
  'capacity; 72.10 GiB already allocated; 1.20 GiB free; 74.20 GiB reserved in total by PyTorch) ' +
  'If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.';
export const XSS = '<img src=x id=injected onerror="window.__xss=1">';
export const STEPS = { 'r-oom': 20, 'r-done': 10, 'r-stall': 10, 'r-live': 10 };

export function trainingCorpus(now) {
  const events = [];
  const at = (ms) => new Date(ms).toISOString();
  const add = (t, host, run, message, extra = {}) => events.push({
    '@timestamp': at(t), host: { name: host }, user: { name: 'zhangsan' },
    log: { level: extra.level ?? 'INFO', file: { path: `/home/zhangsan/${run ?? 'sys'}.log` } },
    ...(run ? { run: { id: run, rank: extra.rank ?? 0, ...(extra.end ? { end: 'finished' } : {}) } } : {}),
    ...(extra.train ? { train: extra.train } : {}),
    message,
  });
  const steps = (run, host, start, every) => {
    for (let s = 0; s < STEPS[run]; s++) {
      const loss = +(2.5 * Math.exp(-s / 8) + 0.1).toFixed(4);
      add(start + s * every, host, run, `[rank0]: step ${s} loss ${loss}`,
          { train: { step: s, loss, grad_norm: +(1 + s / 10).toFixed(2) } });
    }
  };
  steps('r-oom', 'gpu-node-01', now - 40 * 60e3, 60e3);
  const oomAt = now - 20 * 60e3 + 30e3;
  for (let h = 1; h <= 4; h++) {
    for (let r = 0; r < 2; r++) {
      const rank = (h - 1) * 2 + r;
      const host = `gpu-node-0${h}`;
      add(oomAt + rank * 1000, host, 'r-oom', `[rank${rank}]: ${OOM}`, { level: 'ERROR', rank });
    }
  }
  steps('r-done', 'gpu-node-05', now - 50 * 60e3, 60e3);
  add(now - 39 * 60e3, 'gpu-node-05', 'r-done', 'Checkpoint saved to /ckpt/r-done/final.pt', { end: true });
  steps('r-stall', 'gpu-node-06', now - 55 * 60e3, 60e3);
  steps('r-live', 'gpu-node-07', now - 9 * 60e3, 50e3);
  add(now - 5 * 60e3, 'gpu-node-08', 'r-xss', `RuntimeError: CUDA error: out of memory ${XSS}`, { level: 'ERROR' });
  for (let i = 0; i < 6; i++) {
    add(now - 115 * 60e3 + i * 60e3, 'login-01', null, 'heartbeat ok');
    add(now - 30 * 60e3 + i * 60e3, 'login-01', null, 'heartbeat ok');
  }
  add(now - 30 * 60e3, 'gpu-node-01', 'r-oom', 'Checkpoint saved to /ckpt/r-oom/step_10.pt');
  return events;
}
