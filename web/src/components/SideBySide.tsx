// The comparison's "Time series side by side": one quantity of several runs (one per
// configuration, or one per sweep value) overlaid on one chart from t = 0 (the senders' start),
// with each run's link loss counters next to it. Built for cross-validating the two link backends
// (a sweep over `link.backend`), and useful for any experiment.
import { useState } from 'react';
import { api, ok, rawJson, type RunOut } from '../api/client.ts';
import type { RunDocument } from '../api/types.ts';
import { OVERLAY_METRICS, overlayGrid, overlayGroups, type OverlayMetric, type OverlayRun, type RunLine } from '../lib/overlay.ts';
import { useAsync } from '../lib/useAsync.ts';
import { ErrorBox } from './bits.tsx';
import { num, Table } from './Table.tsx';
import { TimeChart } from './TimeChart.tsx';

const MAX_BUCKETS = 1000;

function fetchBuckets(runId: number, name: string, buckets: number, range?: [number, number]) {
  const query = range ? { buckets, from: range[0], to: range[1] } : { buckets };
  return ok(api.GET('/api/runs/{run_id}/series/{name}', { params: { path: { run_id: runId, name }, query } }));
}

export interface OverlayData {
  lines: RunLine[];
  /** end of the shared grid (s); it starts at 0 */
  hi: number;
  buckets: number;
  /** runs that stored none of the metric's series */
  missing: OverlayRun[];
}

/** The metric's series of every run on one grid from t = 0 to the last sample of any of them. */
async function loadOverlay(runs: OverlayRun[], metric: OverlayMetric): Promise<OverlayData> {
  const infos = await Promise.all(runs.map((r) => ok(api.GET('/api/runs/{run_id}/series', { params: { path: { run_id: r.id } } }))));
  const wanted = runs.flatMap((run, k) => {
    const list = infos[k] ?? [];
    return metric.pick(list.map((s) => s.name)).map((series) => ({ run, series, points: list.find((s) => s.name === series)?.points ?? 0 }));
  });
  const missing = runs.filter((r) => !wanted.some((w) => w.run.id === r.id));
  const spans = await Promise.all(wanted.map((w) => fetchBuckets(w.run.id, w.series, 1)));
  const hi = Math.max(0, ...spans.map((s) => s.buckets[0]?.t1 ?? 0));
  const buckets = Math.max(10, Math.min(MAX_BUCKETS, Math.max(0, ...wanted.map((w) => w.points))));
  if (hi <= 0) return { lines: [], hi, buckets, missing };
  const data = await Promise.all(wanted.map((w) => fetchBuckets(w.run.id, w.series, buckets, [0, hi])));
  const lines = wanted.map((w, k): RunLine => ({ run: w.run, series: w.series, buckets: data[k]?.buckets ?? [] }));
  return { lines, hi, buckets, missing };
}

export function OverlayChart({ data, metric, name }: { data: OverlayData; metric: OverlayMetric; name: string }) {
  const grid = overlayGrid(data.lines, metric, 0, data.hi, data.buckets);
  return (
    <>
      {grid.series.length ? (
        <TimeChart title={metric.label} name={name} xLabel="time since the senders started (s)" yLabel={metric.yLabel} xs={grid.xs} series={grid.series} />
      ) : (
        <p className="muted">None of these runs stored this series.</p>
      )}
      {data.missing.length ? (
        <p className="muted small" data-testid="overlay-missing">
          Not recorded by {data.missing.map((r) => `${r.label} (run #${r.id})`).join(', ')}.
        </p>
      ) : null}
    </>
  );
}

/** Each run's link events (`direction.kind`) and TCP retransmissions over the whole run. */
function LossTable({ runs }: { runs: OverlayRun[] }) {
  const docs = useAsync(() => Promise.all(runs.map((r) => rawJson<RunDocument>(`/api/runs/${r.id}/result`))), [runs.map((r) => r.id).join(',')]);
  if (docs.error) return <ErrorBox error={docs.error} title="Cannot load the run results" />;
  if (!docs.data) return null;
  const all = docs.data;
  const kinds = [...new Set(all.flatMap((d) => Object.keys(d.link_events ?? {})))].sort();
  const retrans = (d: RunDocument) => Object.values(d.hosts ?? {}).reduce((a, h) => a + (h['Tcp.RetransSegs'] ?? 0), 0);
  return (
    <Table caption="Losses over the whole run" testId="overlay-losses" columns={['Count', ...runs.map((r) => num(`${r.label} (#${r.id})`))]}>
      {kinds.map((k) => (
        <tr key={k}>
          <th scope="row">link {k.replace('.', ': ').replace(/_/g, ' ')}</th>
          {all.map((d, i) => <td key={runs[i]?.id} className="num">{d.link_events?.[k] ?? '—'}</td>)}
        </tr>
      ))}
      <tr>
        <th scope="row">TCP retransmitted segments</th>
        {all.map((d, i) => <td key={runs[i]?.id} className="num">{retrans(d)}</td>)}
      </tr>
    </Table>
  );
}

export function SideBySide({ experimentId, runs, paths }: { experimentId: number; runs: RunOut[]; paths: string[] }) {
  const groups = overlayGroups(runs, paths);
  const [groupKey, setGroupKey] = useState<string>();
  const [metricKey, setMetricKey] = useState(OVERLAY_METRICS[0]?.key ?? '');
  const group = groups.find((g) => g.key === groupKey) ?? groups[0];
  const metric = OVERLAY_METRICS.find((m) => m.key === metricKey) ?? OVERLAY_METRICS[0];
  const ids = group?.runs.map((r) => r.id).join(',') ?? '';
  const data = useAsync(async () => (group && metric ? loadOverlay(group.runs, metric) : undefined), [ids, metric?.key]);
  if (!group || !metric) return null;
  return (
    <div className="side-by-side" aria-labelledby="overlay-title">
      <h4 id="overlay-title">Time series side by side</h4>
      <p className="muted">
        One run of each (its first repetition) overlaid, every one from its senders' start (t = 0). Open a run for all its series.
      </p>
      <div className="form-row">
        <label htmlFor="overlay-runs">Runs</label>
        <select id="overlay-runs" value={group.key} onChange={(e) => { setGroupKey(e.target.value); }}>
          {groups.map((g) => (
            <option key={g.key} value={g.key}>{g.label} ({g.runs.length})</option>
          ))}
        </select>
        <label htmlFor="overlay-series">Series</label>
        <select id="overlay-series" value={metric.key} onChange={(e) => { setMetricKey(e.target.value); }}>
          {OVERLAY_METRICS.map((m) => (
            <option key={m.key} value={m.key}>{m.label}</option>
          ))}
        </select>
      </div>
      <ErrorBox error={data.error} title="Cannot load the series" />
      {data.data ? <OverlayChart data={data.data} metric={metric} name={`experiment-${experimentId}-${metric.key}`} /> : data.loading ? <p className="muted">Loading…</p> : null}
      <LossTable runs={group.runs} />
    </div>
  );
}
