// One run: state, headline metrics, its time series (downsampled by the API to min/max/mean per
// bucket; zooming refetches the visible range at full detail), losses by cause, and live control
// of the emulator while it runs; on a beam, each terminal's link and return grant (live, and its
// stored series once finished), and with contention access its contention split (live, and the
// run result's once finished).
import { useCallback, useMemo, useState } from 'react';
import { api, ApiError, canSubmit, ok, rawJson, type SeriesBuckets, type SeriesInfo } from '../api/client.ts';
import type { RunDocument, RunEvent } from '../api/types.ts';
import { useAuth } from '../auth.tsx';
import { ContentionTable, LiveTerminals } from '../components/BeamTerminals.tsx';
import { ErrorBox, PageHead, Progress, StateBadge } from '../components/bits.tsx';
import { LiveLinkCharts, LiveTcpNow } from '../components/LiveTcp.tsx';
import { num, Table } from '../components/Table.tsx';
import { TimeChart, type ChartSeries } from '../components/TimeChart.tsx';
import { fmtBps, fmtDuration, fmtNum, fmtSweep } from '../lib/format.ts';
import { addLiveEvent, emptyLive, type LiveState } from '../lib/live.ts';
import { chartDefs, type ChartDef } from '../lib/runCharts.ts';
import { useAsync } from '../lib/useAsync.ts';
import { finishedContention } from '../lib/terminals.ts';
import { useRunEvents } from '../lib/useRunEvents.ts';

const TERMINAL = ['succeeded', 'failed', 'cancelled'];
const MAX_BUCKETS = 2000;

async function fetchBuckets(runId: number, name: string, buckets: number, range?: [number, number]): Promise<SeriesBuckets> {
  const query = range ? { buckets, from: range[0], to: range[1] } : { buckets };
  return ok(api.GET('/api/runs/{run_id}/series/{name}', { params: { path: { run_id: runId, name }, query } }));
}

/** Every series of a chart on one bucket grid (same from/to/buckets), so they share an x axis. */
async function loadChart(runId: number, def: ChartDef, infos: SeriesInfo[], range?: [number, number]) {
  let lo: number;
  let hi: number;
  if (range) {
    [lo, hi] = range;
  } else {
    const spans = await Promise.all(def.series.map((s) => fetchBuckets(runId, s.name, 1)));
    lo = Math.min(...spans.map((s) => s.buckets[0]?.t0 ?? Infinity));
    hi = Math.max(...spans.map((s) => s.buckets[0]?.t1 ?? -Infinity));
  }
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi <= lo) return undefined;
  const points = Math.max(...def.series.map((s) => infos.find((i) => i.name === s.name)?.points ?? 0));
  const n = Math.max(10, Math.min(MAX_BUCKETS, points));
  const data = await Promise.all(def.series.map((s) => fetchBuckets(runId, s.name, n, [lo, hi])));
  const width = (hi - lo) / n;
  const xs = Array.from({ length: n }, (_, b) => lo + (b + 0.5) * width);
  const series: ChartSeries[] = def.series.map((s, k) => {
    const vals: (number | null)[] = new Array<number | null>(n).fill(null);
    for (const b of data[k]?.buckets ?? []) {
      const i = Math.min(n - 1, Math.max(0, Math.round((b.t0 - lo) / width)));
      vals[i] = b.mean * (s.scale ?? 1);
    }
    return { label: s.label, values: vals, ...(s.right ? { right: true } : {}), ...(s.stepped ? { stepped: true } : {}) };
  });
  const stored = Math.max(...(data.map((d) => d.points)));
  return { xs, series, stored, buckets: n };
}

function SeriesChart({ runId, def, infos }: { runId: number; def: ChartDef; infos: SeriesInfo[] }) {
  const [range, setRange] = useState<[number, number]>();
  const chart = useAsync(() => loadChart(runId, def, infos, range), [runId, def.key, range?.[0], range?.[1]]);
  const onZoom = useCallback((r: [number, number] | undefined) => {
    setRange(r);
  }, []);
  return (
    <div className="series-chart">
      <ErrorBox error={chart.error} title={def.title} />
      {chart.data ? (
        <>
          <TimeChart
            title={def.title}
            name={`run-${runId}-${def.key}`}
            yLabel={def.yLabel}
            {...(def.yRightLabel ? { yRightLabel: def.yRightLabel } : {})}
            xs={chart.data.xs}
            series={chart.data.series}
            onZoom={onZoom}
          />
          <p className="muted small">
            {chart.data.stored.toLocaleString()} stored samples, shown as {chart.data.buckets} bucket means
            {range ? ` between ${range[0].toFixed(2)} s and ${range[1].toFixed(2)} s` : ''}.{' '}
            {range ? (
              <button type="button" className="btn btn--small" onClick={() => { setRange(undefined); }}>
                Reset zoom
              </button>
            ) : null}
          </p>
        </>
      ) : chart.loading ? (
        <p className="muted">Loading {def.title.toLowerCase()}…</p>
      ) : null}
    </div>
  );
}

function Losses({ doc }: { doc: RunDocument }) {
  const ev = doc.link_events ?? {};
  const hosts = doc.hosts ?? {};
  const sum = (k: string) => Object.values(hosts).reduce((a, h) => a + (h[k] ?? 0), 0);
  const rows: [string, number, string][] = [
    ...Object.entries(ev).map(([k, v]): [string, number, string] => {
      const [dir = '', kind = ''] = k.split('.');
      const why: Record<string, string> = {
        erased: 'frame erased by the channel (Es/N0 below the MODCOD threshold)',
        corrupted: 'delivered with bit errors',
        queue_drop: 'dropped at the full link queue',
      };
      return [`${dir} link: ${kind.replace('_', ' ')}`, v, why[kind] ?? ''];
    }),
    ['TCP retransmitted segments', sum('Tcp.RetransSegs'), 'all hosts'],
    ['TCP retransmission timeouts', sum('TcpExt.TCPTimeouts'), 'all hosts'],
    ['Spurious retransmissions seen', sum('TcpExt.TCPDSACKOldSent') + sum('TcpExt.TCPDSACKOfoSent'), 'D-SACKs the receiver sent'],
    ['Checksum errors received', sum('Tcp.InCsumErrors'), 'corruption caught by TCP'],
  ];
  const max = Math.max(1, ...rows.map((r) => r[1]));
  return (
    <Table caption="Losses by cause" testId="losses" columns={['Cause', num('Count'), 'Share', 'Meaning']}>
      {rows.map(([k, v, why]) => (
        <tr key={k}>
          <th scope="row">{k}</th>
          <td className="num">{v}</td>
          <td><span className="hbar" style={{ width: `${(100 * v) / max}%` }} /></td>
          <td className="muted">{why}</td>
        </tr>
      ))}
    </Table>
  );
}

function LiveControl({ runId }: { runId: number }) {
  const [att, setAtt] = useState('6');
  const [ber, setBer] = useState('');
  const [dir, setDir] = useState<'forward' | 'return' | 'both'>('forward');
  const [answer, setAnswer] = useState<string>();
  const [error, setError] = useState<string>();
  async function send(body: { attenuation_db?: number; ber?: number; resume_trace?: boolean }) {
    setError(undefined);
    try {
      const r = await ok(api.POST('/api/runs/{run_id}/control', { params: { path: { run_id: runId } }, body: { direction: dir, ...body } }));
      const fwd = (r.response as { forward?: { modcod?: { name?: string }; esn0_db?: number; useful_rate_bps?: number } } | null)?.forward;
      setAnswer(`Emulator answered ${String(r.status_code)}${fwd ? `: forward now ${fwd.modcod?.name ?? '—'}, Es/N0 ${fmtNum(fwd.esn0_db)} dB, ${fmtBps(fwd.useful_rate_bps)}` : ''}`);
    } catch (e) {
      setError(e instanceof ApiError && e.errors.length ? e.errors.join('\n') : e instanceof Error ? e.message : String(e));
    }
  }
  return (
    <section className="card" aria-labelledby="ctl-title">
      <h3 id="ctl-title">Live control</h3>
      <p className="field-help">Acts on the running emulator through the API; the MODCOD answers at the next ACM report.</p>
      <div className="form-row">
        <label htmlFor="ctl-dir">Direction</label>
        <select id="ctl-dir" value={dir} onChange={(e) => { setDir(e.target.value as typeof dir); }}>
          <option value="forward">forward</option>
          <option value="return">return</option>
          <option value="both">both</option>
        </select>
        <label htmlFor="ctl-att">Attenuation (dB)</label>
        <input id="ctl-att" type="range" min={0} max={30} step={0.5} value={att} onChange={(e) => { setAtt(e.target.value); }} />
        <output htmlFor="ctl-att">{att} dB</output>
        <button type="button" className="btn" onClick={() => void send({ attenuation_db: Number(att) })}>Apply fade</button>
        <button type="button" className="btn" onClick={() => void send({ resume_trace: true })}>Back to the trace</button>
      </div>
      <div className="form-row">
        <label htmlFor="ctl-ber">Bit error rate</label>
        <input id="ctl-ber" type="text" inputMode="decimal" placeholder="1e-6 (0 = off)" value={ber} onChange={(e) => { setBer(e.target.value); }} />
        <button type="button" className="btn" disabled={!Number.isFinite(Number(ber)) || ber.trim() === ''} onClick={() => void send({ ber: Number(ber) })}>Apply BER</button>
      </div>
      {answer ? <p className="notice" role="status">{answer}</p> : null}
      <ErrorBox error={error} title="Control refused" />
    </section>
  );
}

export function RunView({ id }: { id: number }) {
  const { who, token } = useAuth();
  const run = useAsync(() => ok(api.GET('/api/runs/{run_id}', { params: { path: { run_id: id } } })), [id]);
  const state = run.data?.state;
  const ended = state ? TERMINAL.includes(state) : false;
  const series = useAsync(async () => (state === 'succeeded' ? ok(api.GET('/api/runs/{run_id}/series', { params: { path: { run_id: id } } })) : []), [id, state]);
  const doc = useAsync(async () => (ended ? rawJson<RunDocument>(`/api/runs/${id}/result`) : undefined), [id, ended]);
  const [live, setLive] = useState<LiveState>(emptyLive());
  const [now, setNow] = useState<RunEvent>();
  const reload = run.reload;

  useRunEvents(`/api/runs/${id}/events`, token, {
    onRun: (ev) => {
      setNow((prev) => {
        if (prev?.state !== ev.state) setTimeout(reload, 0);
        return ev;
      });
      setLive((s) => addLiveEvent(s, ev));
    },
    onEnd: reload,
  });

  const defs = useMemo(() => chartDefs(series.data ?? []), [series.data]);
  const r = run.data;
  return (
    <div className="stack">
      <PageHead
        title={
          <>
            Run #{id} {r ? <>· {r.configuration} <StateBadge state={now && !ended ? now.state : r.state} /></> : null}
          </>
        }
      >
        {r ? <a className="btn" href={`#/experiments/${r.experiment_id}`}>← Experiment #{r.experiment_id}</a> : null}
      </PageHead>
      <ErrorBox error={run.error} title="Cannot load the run" />
      {r ? (
        <section className="card">
          <dl className="facts">
            <div><dt>Sweep value</dt><dd>{r.sweep_value === null ? '—' : fmtSweep(r.sweep_value)}</dd></div>
            <div><dt>Repetition / seed</dt><dd>{r.repetition} / {r.seed}</dd></div>
            <div><dt>Attempt</dt><dd>{r.attempt}</dd></div>
            <div><dt>Worker</dt><dd>{r.worker_id ?? '—'}</dd></div>
            <div><dt>Goodput</dt><dd data-testid="run-goodput">{fmtBps(r.summary?.goodput_bps)}</dd></div>
            <div><dt>Completion</dt><dd>{fmtDuration(r.summary?.completion_s)}</dd></div>
            <div><dt>Retransmissions</dt><dd>{fmtNum(r.summary?.retransmissions)}</dd></div>
            <div><dt>Progress</dt><dd><Progress value={ended ? 1 : (now?.progress ?? r.progress)} label="run progress" /> {!ended ? now?.message : null}</dd></div>
          </dl>
          {r.error ? <ErrorBox error={r.error} title="The run failed" /> : null}
        </section>
      ) : null}
      {r && !ended && canSubmit(who) ? <LiveControl runId={id} /> : null}
      {!ended && live.samples.length > 0 ? (
        <section className="card">
          <h3>Live link</h3>
          <LiveLinkCharts live={live} name={`run-${id}-live`} titleSuffix=" (live)" />
          <LiveTcpNow live={live} />
        </section>
      ) : null}
      {!ended ? <LiveTerminals live={live} name={`run-${String(id)}-live`} contention={r?.return_contention ?? false} /> : null}
      {state === 'succeeded' ? (
        <section className="card" aria-labelledby="ts-title">
          <h3 id="ts-title">Time series</h3>
          <p className="field-help">Drag across a chart to zoom (the visible range is fetched again at full detail); PNG/SVG/CSV export each chart.</p>
          <ErrorBox error={series.error} title="Cannot list the series" />
          {defs.map((d) => (
            <SeriesChart key={d.key} runId={id} def={d} infos={series.data ?? []} />
          ))}
        </section>
      ) : null}
      {doc.data ? (
        <section className="card">
          <Losses doc={doc.data} />
          {doc.data.contention?.length ? (
            <ContentionTable rows={finishedContention(doc.data.contention)} caption="Contention requests per terminal (whole run)" />
          ) : null}
          <details>
            <summary>Run record (inputs, versions, flows)</summary>
            <pre className="pre small">{JSON.stringify(doc.data, null, 2)}</pre>
          </details>
        </section>
      ) : null}
    </div>
  );
}
