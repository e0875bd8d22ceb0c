// One experiment: live progress and link charts over SSE while it runs; then the comparison
// (metric vs sweep per configuration with 95% bands, ratios against a baseline with Fieller
// intervals, fairness, one run per configuration's time series overlaid) with CSV/SVG/PNG exports, and
// the scenario's expectations with their verdicts.
import { useMemo, useState } from 'react';
import { api, canSubmit, ok, raw, type Comparison, type RunOut } from '../api/client.ts';
import { METRICS, type Metric } from '../api/types.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, PageHead, Progress, StateBadge } from '../components/bits.tsx';
import { CompareChart } from '../components/CompareChart.tsx';
import { ExpectationsTable } from '../components/ExpectationsTable.tsx';
import { LiveLinkCharts, LiveTcpNow } from '../components/LiveTcp.tsx';
import { SideBySide } from '../components/SideBySide.tsx';
import { num, Table } from '../components/Table.tsx';
import { download } from '../lib/csv.ts';
import { fmtBps, fmtDuration, fmtMetric, fmtNum, fmtSweep, fmtWhen, METRIC_LABELS } from '../lib/format.ts';
import { addLiveEvent, emptyLive, type LiveState } from '../lib/live.ts';
import { useAsync } from '../lib/useAsync.ts';
import { useRunEvents } from '../lib/useRunEvents.ts';

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

interface RunLive {
  state: string;
  progress: number;
  message: string;
  live: LiveState;
}

interface SweepDim {
  path: string;
  values: unknown[];
}

// The experiment's sweep as a list of dimensions (the scenario gives one, or a list of up to two).
function sweepDims(sweep: SweepDim | SweepDim[] | null | undefined): SweepDim[] {
  if (!sweep) return [];
  return Array.isArray(sweep) ? sweep : [sweep];
}

function Explanation({ scenario, configs, sweep }: { scenario: string; configs: string[]; sweep: string | undefined }) {
  return (
    <details className="card explain" open>
      <summary>What this comparison shows</summary>
      <p>
        {scenario === 'quickstart' ? (
          <>
            A client behind a satellite terminal downloads from a server for 25 s over an emulated geostationary link
            (250 ms each way, so every acknowledgement takes at least half a second to come back). Between 5 s and 15 s a
            9 dB rain fade hits the terminal's downlink: the link's adaptive coding (ACM) switches to a more robust,
            slower MODCOD, then back. Each TCP congestion control ({configs.join(', ')}) ran on exactly the same channel.
          </>
        ) : (
          <>Every configuration ({configs.join(', ')}) ran over the same channel conditions (same trace and seed).</>
        )}
      </p>
      <ul>
        <li><strong>Goodput</strong> is the useful data the client application received per second. Higher is better; the whiskers or bands are 95% confidence intervals over repetitions (none with a single repetition).</li>
        <li><strong>Ratio vs baseline</strong> divides each configuration's mean by the baseline's: 1.2 means 20% more. The interval (Fieller's) tells whether the difference is real: if it does not include 1, it is.</li>
        {sweep ? <li>The x axis is the swept field <code>{sweep}</code> (both values of a two-dimensional sweep): how each configuration copes as it changes.</li> : null}
        <li><strong>Fairness</strong> (Jain's index, 1 = perfectly fair) compares connections that share the link; it needs at least two connections.</li>
        <li><strong>Time series side by side</strong> overlays one quantity (MODCOD, Es/N0, TCP delivery rate, RTT, retransmissions, queue) of one run per configuration, or per sweep value, from the senders' start; open a run to see all its series and losses by cause.</li>
      </ul>
    </details>
  );
}

export function ExperimentView({ id }: { id: number }) {
  const { who, token } = useAuth();
  const exp = useAsync(() => ok(api.GET('/api/experiments/{experiment_id}', { params: { path: { experiment_id: id } } })), [id]);
  const [live, setLive] = useState<Record<number, RunLive>>({});
  const [lastRun, setLastRun] = useState<number>();
  const [streamNote, setStreamNote] = useState<string>();
  const ended = exp.data ? TERMINAL.includes(exp.data.state) : false;
  const reload = exp.reload;

  useRunEvents(`/api/experiments/${id}/events`, token, {
    onRun: (ev) => {
      setLive((prev) => {
        const cur = prev[ev.run_id] ?? { state: '', progress: 0, message: '', live: emptyLive() };
        if (cur.state !== ev.state) setTimeout(reload, 0);
        return { ...prev, [ev.run_id]: { state: ev.state, progress: ev.progress, message: ev.message, live: addLiveEvent(cur.live, ev) } };
      });
      if (ev.state === 'running') setLastRun(ev.run_id);
      setStreamNote(undefined);
    },
    onEnd: () => {
      setStreamNote('The experiment has ended.');
      reload();
    },
    onError: () => {
      setStreamNote('Live stream interrupted; reconnecting…');
    },
  });

  const runs: RunOut[] = exp.data?.runs ?? [];
  const succeeded = runs.filter((r) => r.state === 'succeeded').length;
  const matrix = (exp.data?.matrix ?? {}) as { configurations?: string[]; sweep?: SweepDim | SweepDim[] | null; repetitions?: number };
  const configs = matrix.configurations ?? [];
  const dims = sweepDims(matrix.sweep);
  const paths = dims.map((d) => d.path);
  const [baseline, setBaseline] = useState<string>();
  const [metric, setMetric] = useState<Metric>('goodput_bps');
  const base = baseline ?? configs[0];

  const results = useAsync(async () => (succeeded ? ok(api.GET('/api/experiments/{experiment_id}/results', { params: { path: { experiment_id: id } } })) : undefined), [id, succeeded]);
  const comparison = useAsync(
    async () => (succeeded && base ? ok(api.GET('/api/experiments/{experiment_id}/comparison', { params: { path: { experiment_id: id }, query: { baseline: base } } })) : undefined),
    [id, succeeded, base],
  );
  const done = runs.filter((r) => TERMINAL.includes(r.state)).length;
  const claims = useAsync(() => ok(api.GET('/api/experiments/{experiment_id}/expectations', { params: { path: { experiment_id: id } } })), [id, done]);

  const total = runs.length;
  const running = runs.filter((r) => r.state === 'running');
  const watched = lastRun !== undefined && live[lastRun]?.state === 'running' ? lastRun : running[0]?.id;
  const watchedLive = watched !== undefined ? live[watched]?.live : undefined;
  const watchedRun = runs.find((r) => r.id === watched);
  const sweepLabel = paths.length ? paths.join(' × ') : undefined;

  async function exportApi(what: 'runs' | 'aggregate') {
    const res = await raw(`/api/experiments/${id}/export?format=csv&what=${what}`);
    download(`experiment-${id}-${what}.csv`, await res.blob());
  }

  async function exportReport() {
    const res = await raw(`/api/experiments/${id}/report`);
    download(`satlab-experiment-${id}.html`, await res.blob());
  }

  async function act(kind: 'cancel' | 'retry') {
    await raw(`/api/experiments/${id}/${kind}`, { method: 'POST' });
    exp.reload();
  }

  const liveCharts = useMemo(() => {
    if (!watchedLive || watchedLive.samples.length === 0) return null;
    return { live: watchedLive, s: watchedLive.samples };
  }, [watchedLive]);

  return (
    <div className="stack">
      <PageHead
        title={
          <>
            Experiment #{id} {exp.data ? <>· {exp.data.scenario_name} <StateBadge state={exp.data.state} /></> : null}
          </>
        }
      >
        {exp.data && canSubmit(who) && !ended ? (
          <button type="button" className="btn" onClick={() => void act('cancel')}>Cancel</button>
        ) : null}
        {exp.data && canSubmit(who) && runs.some((r) => r.state === 'failed') ? (
          <button type="button" className="btn" onClick={() => void act('retry')}>Retry failed runs</button>
        ) : null}
      </PageHead>
      <ErrorBox error={exp.error} title="Cannot load the experiment" />
      {exp.data ? (
        <section className="card" aria-labelledby="progress-title">
          <h3 id="progress-title">Progress</h3>
          <p>
            <strong data-testid="runs-done">{done} of {total} runs finished</strong> <Progress value={total ? done / total : 0} label="experiment progress" />{' '}
            <span className="muted">
              {configs.length} configuration(s) × {dims.length ? `${dims.map((d) => d.values.length).join(' × ')} sweep values × ` : ''}
              {matrix.repetitions ?? 1} repetition(s) · estimated {fmtDuration(exp.data.estimate_s)} · submitted {fmtWhen(exp.data.created_at)}
              {exp.data.finished_at ? ` · finished ${fmtWhen(exp.data.finished_at)}` : ''}
            </span>
          </p>
          {streamNote ? <p className="muted" role="status">{streamNote}</p> : null}
          <Table
            caption="Runs"
            hideCaption
            columns={[
              'Run',
              'Configuration',
              dims.length ? paths.join(', ') : null,
              'Rep.',
              'State',
              'Progress',
              num('Goodput'),
              num('Retrans.'),
            ]}
          >
            {runs.map((r) => {
              const l = live[r.id];
              const state = TERMINAL.includes(r.state) ? r.state : (l?.state ?? r.state);
              return (
                <tr key={r.id}>
                  <td><a href={`#/runs/${r.id}`}>#{r.id}</a></td>
                  <th scope="row">{r.configuration}</th>
                  {dims.length ? <td>{fmtSweep(r.sweep_value, paths)}</td> : null}
                  <td>{r.repetition}</td>
                  <td><StateBadge state={state} />{r.error ? <span className="field-error"> {r.error}</span> : null}</td>
                  <td>
                    <Progress value={state === 'succeeded' ? 1 : (l?.progress ?? r.progress)} label={`run ${r.id} progress`} />{' '}
                    <span className="muted">{state === 'running' ? l?.message : ''}</span>
                  </td>
                  <td className="num">{fmtBps(r.summary?.goodput_bps)}</td>
                  <td className="num">{fmtNum(r.summary?.retransmissions)}</td>
                </tr>
              );
            })}
          </Table>
        </section>
      ) : null}
      {!ended && exp.data ? (
        <section className="card" aria-labelledby="live-title">
          <h3 id="live-title">
            Live link{watchedRun ? ` — run #${watchedRun.id} (${watchedRun.configuration})` : ''}
          </h3>
          {liveCharts ? (
            <>
              <p className="muted">
                The emulator's forward link and the senders' TCP_INFO as the worker reports them (one sample per
                heartbeat). Throughput is what the link delivered between two samples.{' '}
                {watchedRun ? <a href={`#/runs/${watchedRun.id}`}>Open the run for live control →</a> : null}
              </p>
              <LiveLinkCharts
                live={liveCharts.live}
                name={`run-${watched ?? 0}-live`}
                xLabel="time since first sample (s)"
                esn0Label="Es/N0 (dB)"
              />
              <div className="note-box">
                <p data-testid="live-now">
                  Now: MODCOD {String(liveCharts.s[liveCharts.s.length - 1]?.modcod ?? '—')}, Es/N0{' '}
                  {fmtNum(liveCharts.s[liveCharts.s.length - 1]?.esn0Db)} dB, queue {liveCharts.s[liveCharts.s.length - 1]?.queuePackets ?? '—'} packets
                </p>
                {watchedLive ? <LiveTcpNow live={watchedLive} /> : null}
              </div>
            </>
          ) : (
            <p className="muted">{running.length ? 'Waiting for the first link sample…' : 'Queued: waiting for a worker.'}</p>
          )}
        </section>
      ) : null}
      {exp.data ? <Explanation scenario={exp.data.scenario_name} configs={configs} sweep={sweepLabel} /> : null}
      {claims.data?.length ? <ExpectationsTable claims={claims.data} /> : null}
      {succeeded > 0 ? (
        <section className="card" aria-labelledby="results-title">
          <h3 id="results-title">Comparison</h3>
          <div className="form-row">
            <label htmlFor="metric">Metric</label>
            <select id="metric" value={metric} onChange={(e) => { setMetric(e.target.value as Metric); }}>
              {METRICS.map((m) => (
                <option key={m} value={m}>{METRIC_LABELS[m]}</option>
              ))}
            </select>
            <label htmlFor="baseline">Baseline</label>
            <select id="baseline" value={base} onChange={(e) => { setBaseline(e.target.value); }}>
              {configs.map((c) => (
                <option key={c} value={c}>{c}</option>
              ))}
            </select>
            <span className="spacer" />
            <button type="button" className="btn btn--small" onClick={() => void exportApi('runs')}>Runs CSV</button>
            <button type="button" className="btn btn--small" onClick={() => void exportApi('aggregate')}>Aggregate CSV</button>
            <button type="button" className="btn btn--small" title="One HTML file: scenario, comparison, verdicts, charts; opens offline" onClick={() => void exportReport()}>Report</button>
          </div>
          <ErrorBox error={results.error ?? comparison.error} title="Cannot load results" />
          {results.data ? <CompareChart rows={results.data.rows} metric={metric} sweepLabel={sweepLabel} sweepPaths={paths} name={`experiment-${id}-${metric}`} /> : null}
          {comparison.data ? <RatioTable cmp={comparison.data} metric={metric} paths={paths} /> : null}
          {comparison.data ? <Fairness cmp={comparison.data} paths={paths} /> : null}
          <SideBySide experimentId={id} runs={runs} paths={paths} />
        </section>
      ) : null}
    </div>
  );
}

function RatioTable({ cmp, metric, paths }: { cmp: Comparison; metric: Metric; paths: string[] }) {
  const sweep = cmp.points.some((p) => p.sweep_value !== null);
  return (
    <Table
      caption={
        <>
          {METRIC_LABELS[metric]} against the baseline <strong>{cmp.baseline}</strong> (ratio of means, 95% Fieller interval; difference with a Welch interval)
        </>
      }
      testId="ratio-table"
      columns={[
        sweep ? 'Sweep value' : null,
        'Configuration',
        num('Mean ± 95%'),
        num('n'),
        num('Ratio'),
        num('95% interval'),
        num('Difference'),
      ]}
    >
      {cmp.points.flatMap((p) =>
        p.configurations.map((c) => {
          const m = c.metrics[metric];
          const verdict = m?.low !== null && m?.low !== undefined && m.high !== null ? (m.low > 1 ? 'better' : m.high < 1 ? 'worse' : 'same') : undefined;
          return (
            <tr key={`${String(p.sweep_value)}-${c.configuration}`} className={c.configuration === cmp.baseline ? 'row--base' : undefined}>
              {sweep ? <td>{fmtSweep(p.sweep_value, paths)}</td> : null}
              <th scope="row">{c.configuration}{c.configuration === cmp.baseline ? ' (baseline)' : ''}</th>
              <td className="num" data-testid={`mean-${c.configuration}`}>
                {fmtMetric(metric, m?.mean)}
                {m?.half_width !== null && m?.half_width !== undefined ? ` ± ${fmtMetric(metric, m.half_width)}` : ''}
              </td>
              <td className="num">{m?.n ?? 0}</td>
              <td className="num" data-testid={`ratio-${c.configuration}`}>{m?.ratio !== null && m?.ratio !== undefined ? m.ratio.toFixed(3) : '—'}</td>
              <td className="num">
                {m?.low !== null && m?.low !== undefined && m.high !== null ? `${m.low.toFixed(3)} – ${m.high.toFixed(3)}` : <span className="muted" title="needs ≥ 2 repetitions on both sides">n/a</span>}
                {verdict ? <span className={`verdict verdict--${verdict}`}> {verdict}</span> : null}
              </td>
              <td className="num">{fmtMetric(metric, m?.difference.difference)}</td>
            </tr>
          );
        }),
      )}
    </Table>
  );
}

function Fairness({ cmp, paths }: { cmp: Comparison; paths: string[] }) {
  const rows = cmp.points.flatMap((p) => p.configurations.map((c) => ({ sweep: p.sweep_value, c: c.configuration, m: c.metrics.jain_fairness })));
  const any = rows.some((r) => r.m?.mean !== null && r.m?.mean !== undefined);
  return (
    <div className="fairness">
      <h4>Fairness</h4>
      {any ? (
        <ul className="plain-list">
          {rows.map((r) => (
            <li key={`${String(r.sweep)}-${r.c}`}>
              {r.c}
              {r.sweep !== null ? ` @ ${fmtSweep(r.sweep, paths)}` : ''}: Jain's index <strong>{fmtNum(r.m?.mean)}</strong>
              {r.m?.half_width ? ` ± ${fmtNum(r.m.half_width)}` : ''}
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">Not defined here: every run had a single TCP connection. Add parallel connections or several traffic items to measure how fairly they share the link.</p>
      )}
    </div>
  );
}
