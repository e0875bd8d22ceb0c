// Number formatting for people: SI rates, durations, short decimals.

export function fmtBps(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(2)} Gbit/s`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(2)} Mbit/s`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)} kbit/s`;
  return `${v.toFixed(0)} bit/s`;
}

export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  const r = Math.round(s - m * 60);
  if (m < 60) return `${m} min ${r} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function fmtNum(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(digits)).toString();
}

export function fmtMetric(metric: string, v: number | null | undefined): string {
  if (metric.endsWith('_bps')) return fmtBps(v);
  if (metric.endsWith('_s')) return fmtDuration(v);
  return fmtNum(v);
}

export const METRIC_LABELS: Record<string, string> = {
  goodput_bps: 'Goodput',
  total_goodput_bps: 'Total goodput',
  completion_s: 'Completion time',
  mean_fct_s: 'Mean flow completion time',
  retransmissions: 'Retransmissions',
  jain_fairness: "Jain's fairness index",
};

export function fmtWhen(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** A sweep value as people write it: 1e-6 rather than 0.000001. */
type SweepCoordinate = number | string | boolean;

function fmtCoordinate(v: SweepCoordinate): string {
  if (typeof v !== 'number') return String(v);
  return v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6) ? v.toExponential() : String(v);
}

// A run's sweep value: one dimension's value, or (two dimensions) the list of both, labelled
// by the last key of each path when the paths are given: "ber=1e-5, rack=false".
export function fmtSweep(v: SweepCoordinate | SweepCoordinate[] | null, paths: string[] = []): string {
  if (v === null) return '';
  if (!Array.isArray(v)) return fmtCoordinate(v);
  return v.map((x, i) => (paths[i] ? `${paths[i].split('.').pop() ?? ''}=${fmtCoordinate(x)}` : fmtCoordinate(x))).join(', ');
}
