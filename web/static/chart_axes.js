// Ticks and labels for the histogram's axes: round numbers for counts, and
// round local times (the browser's time zone) for the time axis.

// Up to about `count` round ticks from 0 to at least `max`: {step, top, ticks}.
// With `integer` (counts of hits) no step is a fraction: 1 hit, not 0.25.
export function countTicks(max, count = 4, { integer = false } = {}) {
  if (!(max > 0)) return { step: 1, top: 1, ticks: [0, 1] };
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  if (integer) step = Math.max(1, step === 2.5 ? 2 : Math.round(step));
  const top = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
  return { step, top, ticks };
}

// 1234 -> "1.2k"; small numbers as they are (fractions kept short).
export function shortNumber(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(0)}k`;
  if (a >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return String(+v.toFixed(a < 10 ? 2 : 1));
}

const S = 1000, M = 60 * S, H = 60 * M, D = 24 * H;
const STEPS = [S, 2 * S, 5 * S, 10 * S, 15 * S, 30 * S, M, 2 * M, 5 * M, 10 * M, 15 * M, 30 * M,
               H, 2 * H, 3 * H, 6 * H, 12 * H, D, 2 * D, 7 * D, 14 * D, 30 * D, 91 * D, 365 * D];

// Offset of local time from UTC at `t`, in ms.
const localOffset = (t) => -new Date(t).getTimezoneOffset() * M;

// Round local times in [from, to], at most about `count` of them:
// [{t, label}], labels as short as the step allows (a date at midnight).
export function timeTicks(from, to, count) {
  const span = Math.max(1, to - from);
  const step = STEPS.find((s) => span / s <= count) ?? 365 * D;
  const ticks = [];
  let t;
  if (step < D) {
    const offset = localOffset(from);
    t = Math.ceil((from + offset) / step) * step - offset;
  } else {
    const d = new Date(from);
    d.setHours(0, 0, 0, 0);
    t = d.getTime();
  }
  for (let i = 0; t <= to && i < 1000; i++) {
    if (t >= from) ticks.push({ t, label: tickLabel(t, step) });
    if (step < D) {
      t += step;
    } else {
      const d = new Date(t);
      d.setDate(d.getDate() + Math.round(step / D));  // whole local days, across DST
      t = d.getTime();
    }
  }
  return ticks;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const secondFmt = new Intl.DateTimeFormat(undefined,
                                          { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });

function tickLabel(t, step) {
  const d = new Date(t);
  const midnight = d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0;
  if (step >= D || (midnight && step >= M)) return dayFmt.format(d);
  return step < M ? secondFmt.format(d) : timeFmt.format(d);
}

const fullFmt = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric",
  hour: "2-digit", minute: "2-digit", second: "2-digit",
});

// "Nov 30, 2026, 14:05:00 – 14:10:00": a bucket's range, the date once.
export function rangeLabel(from, to) {
  const a = fullFmt.format(new Date(from));
  const sameDay = new Date(from).toDateString() === new Date(to - 1).toDateString();
  const b = sameDay ? secondFmt.format(new Date(to)) : fullFmt.format(new Date(to));
  return `${a} – ${b}`;
}
