// Time series of several runs of one experiment on one chart: which runs to overlay (one per
// configuration at a sweep point, or one per sweep value of a configuration; the first succeeded
// repetition each time), which quantity (from the series names the API stores, see runCharts.ts),
// and the bucket means of each run on one shared time grid. Every run's `t` counts from its own
// senders' start (docs/run-result.md, `t0_monotonic`), so the runs line up at t = 0 as stored.
import type { RunOut, SeriesBuckets, SweepValue } from '../api/client.ts';
import type { ChartSeries } from '../components/TimeChart.tsx';
import { fmtSweep } from './format.ts';

export interface OverlayRun {
  id: number;
  label: string;
}

export interface OverlayGroup {
  key: string;
  label: string;
  runs: OverlayRun[];
}

export interface OverlayMetric {
  key: string;
  label: string;
  yLabel: string;
  /** the run's series that carry it (several for a TCP field: one per connection) */
  pick: (names: string[]) => string[];
  scale?: number;
  stepped?: boolean;
}

const one = (name: string) => (names: string[]) => (names.includes(name) ? [name] : []);
const tcp = (field: string) => (names: string[]) => names.filter((n) => n.startsWith('tcp.') && n.endsWith(`.${field}`));

// Forward direction only: the one both link backends report (OpenSAND's probes give the
// terminal's received MODCOD and C/N, api/satlab/opensand/probes.py).
export const OVERLAY_METRICS: OverlayMetric[] = [
  { key: 'modcod', label: 'MODCOD (forward)', yLabel: 'MODCOD id', pick: one('link.forward.modcod'), stepped: true },
  { key: 'esn0', label: 'Es/N0 (forward; C/N on OpenSAND)', yLabel: 'dB', pick: one('link.forward.esn0_db') },
  { key: 'delivery', label: 'TCP delivery rate', yLabel: 'Mbit/s', pick: tcp('delivery_rate_bps'), scale: 1e-6 },
  { key: 'srtt', label: 'TCP smoothed RTT (one-way delay ≈ half its minimum)', yLabel: 'ms', pick: tcp('srtt_us'), scale: 1e-3 },
  { key: 'retrans', label: 'TCP retransmissions (cumulative)', yLabel: 'segments', pick: tcp('retrans_total') },
  { key: 'useful', label: 'Link useful rate (forward)', yLabel: 'Mbit/s', pick: one('link.forward.useful_rate_bps'), scale: 1e-6 },
  { key: 'queue', label: 'Queue depth (forward)', yLabel: 'packets', pick: one('link.forward.queue_packets') },
];

function sweepKey(v: SweepValue): string {
  return JSON.stringify(v);
}

/** The first succeeded repetition of each (configuration, sweep value). */
function firstRuns(runs: RunOut[]): RunOut[] {
  const best = new Map<string, RunOut>();
  for (const r of runs) {
    if (r.state !== 'succeeded') continue;
    const k = `${r.configuration}\u0000${sweepKey(r.sweep_value)}`;
    const cur = best.get(k);
    if (!cur || r.repetition < cur.repetition) best.set(k, r);
  }
  return [...best.values()];
}

/** The choices of runs to overlay, the largest group first (ties in matrix order). */
export function overlayGroups(runs: RunOut[], paths: string[]): OverlayGroup[] {
  const first = firstRuns(runs);
  const sweeps = [...new Map(first.map((r) => [sweepKey(r.sweep_value), r.sweep_value])).values()];
  const configs = [...new Set(first.map((r) => r.configuration))];
  const groups: OverlayGroup[] = sweeps.map((v) => ({
    key: `sweep:${sweepKey(v)}`,
    label: v === null ? 'every configuration' : `every configuration at ${fmtSweep(v, paths)}`,
    runs: first.filter((r) => sweepKey(r.sweep_value) === sweepKey(v)).map((r) => ({ id: r.id, label: r.configuration })),
  }));
  if (sweeps.length > 1) {
    for (const c of configs) {
      groups.push({
        key: `config:${c}`,
        label: `every sweep value of ${c}`,
        runs: first.filter((r) => r.configuration === c).map((r) => ({ id: r.id, label: fmtSweep(r.sweep_value, paths) })),
      });
    }
  }
  return groups.map((g, i) => ({ g, i })).sort((a, b) => b.g.runs.length - a.g.runs.length || a.i - b.i).map(({ g }) => g);
}

/** One fetched series of one run. */
export interface RunLine {
  run: OverlayRun;
  /** the series name (`tcp.<conn>.<field>` tells the connection apart when a run has several) */
  series: string;
  buckets: SeriesBuckets['buckets'];
}

export interface OverlayGrid {
  xs: number[];
  series: ChartSeries[];
}

function connection(name: string): string {
  return name.replace(/^tcp\./, '').replace(/\.[a-z_]+$/, '');
}

/** Each line's bucket means on `n` equal buckets from `lo` to `hi` (the grid the API was asked for). */
export function overlayGrid(lines: RunLine[], metric: OverlayMetric, lo: number, hi: number, n: number): OverlayGrid {
  const width = (hi - lo) / n;
  const xs = Array.from({ length: n }, (_, b) => lo + (b + 0.5) * width);
  const perRun = new Map<number, number>();
  for (const l of lines) perRun.set(l.run.id, (perRun.get(l.run.id) ?? 0) + 1);
  const series = lines.map((l): ChartSeries => {
    const values = new Array<number | null>(n).fill(null);
    for (const b of l.buckets) {
      const i = Math.min(n - 1, Math.max(0, Math.round((b.t0 - lo) / width)));
      values[i] = b.mean * (metric.scale ?? 1);
    }
    const several = (perRun.get(l.run.id) ?? 0) > 1;
    const label = `${l.run.label} (run #${l.run.id})${several ? ` ${connection(l.series)}` : ''}`;
    return { label, values, ...(metric.stepped ? { stepped: true } : {}) };
  });
  return { xs, series };
}
