// Attenuation traces: pick a local file (or the one the scenario names), see the attenuation and
// the Es/N0, MODCOD and useful rate it implies on this scenario's forward link (computed by the
// link model: POST /api/link/preview, lib/tracePreview.ts), and upload it under the name the
// scenario uses.
import { useEffect, useState } from 'react';
import { api, ok, raw } from '../api/client.ts';
import { fmtBps } from '../lib/format.ts';
import { budgetOf, summarize, type PreviewOut } from '../lib/tracePreview.ts';
import { getIn } from '../lib/yamlDoc.ts';
import { ErrorBox, FileField } from './bits.tsx';
import { TimeChart } from './TimeChart.tsx';
import { WeatherForm } from './WeatherForm.tsx';

/** Typing in the editor changes the budget: wait this long before asking again. */
const PREVIEW_DEBOUNCE_MS = 300;

export function TracePanel({
  scenario,
  canUpload,
  onUploaded,
  pending = {},
  clearSky,
}: {
  scenario: unknown;
  /** the forward hops' clear-sky C/N from the scenario's link budget, when computed */
  clearSky?: { up: number; down: number } | undefined;
  canUpload: boolean;
  onUploaded?: () => void;
  /** files that will be uploaded with the scenario (a template's), by name */
  pending?: Record<string, string>;
}) {
  const named = getIn(scenario, ['link', 'forward', 'downlink', 'attenuation', 'file']);
  const fromTemplate = typeof named === 'string' ? pending[named] : undefined;
  const [text, setText] = useState<string | undefined>(fromTemplate);
  const [name, setName] = useState(typeof named === 'string' ? named : 'traces/fade.txt');
  const [source, setSource] = useState<string | undefined>(
    fromTemplate !== undefined ? `${String(named)} (from the template; uploaded when the scenario is created)` : undefined,
  );
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();

  useEffect(() => {
    if (typeof named !== 'string' || text !== undefined) return;
    let live = true;
    ok(api.GET('/api/files', { params: { query: { name: named, limit: 50 } } }))
      .then(async (page) => {
        const f = page.items.filter((x) => x.name === named).sort((a, b) => b.id - a.id)[0];
        if (!f) {
          if (live) setStatus(`${named} is not uploaded yet: upload it before submitting.`);
          return;
        }
        const body = await (await raw(`/api/files/${f.id}/content`)).text();
        if (live) {
          setText(body);
          setSource(`${named} (uploaded, version #${f.id})`);
        }
      })
      .catch((e: unknown) => {
        if (live) setError(e instanceof Error ? e.message : String(e));
      });
    return () => {
      live = false;
    };
  }, [named, text]);

  const fromScenario = budgetOf(scenario);
  const budget = clearSky ? { ...fromScenario, clear_sky_up_db: clearSky.up, clear_sky_down_db: clearSky.down } : fromScenario;
  const budgeted = getIn(scenario, ['link_budget', 'forward']) !== undefined;
  const budgetKey = JSON.stringify(budget);
  const [parsed, setParsed] = useState<{ imp: PreviewOut } | { error: string }>();
  useEffect(() => {
    if (text === undefined) return;
    let live = true;
    const timer = setTimeout(() => {
      ok(api.POST('/api/link/preview', { body: { ...budget, trace: text } }))
        .then((imp) => {
          if (live) setParsed({ imp });
        })
        .catch((e: unknown) => {
          if (live) setParsed({ error: e instanceof Error ? e.message : String(e) });
        });
    }, PREVIEW_DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
    // budget is derived from the scenario each render; compared by value (budgetKey)
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text, budgetKey]);

  async function upload() {
    if (text === undefined) return;
    setError(undefined);
    try {
      const f = await ok(
        api.POST('/api/files', {
          params: { query: { name, kind: 'attenuation' } },
          body: text,
          bodySerializer: (b: unknown) => b as string,
          headers: { 'Content-Type': 'application/octet-stream' },
        }),
      );
      setStatus(`Uploaded ${f.name} (${f.size_bytes} bytes, version #${f.id}).`);
      onUploaded?.();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }

  /** Previews a trace picked or synthesised here, from `src` (said under the charts). */
  const show = (t: string, src: string) => {
    setText(t);
    setSource(src);
    setStatus(undefined);
  };

  const imp = parsed && 'imp' in parsed ? parsed.imp : undefined;
  const sum = imp ? summarize(imp) : undefined;
  return (
    <section className="card" aria-labelledby="trace-title">
      <h3 id="trace-title">Rain-fade trace</h3>
      <p className="field-help">
        OpenSAND attenuation format: <code>&lt;tick&gt; &lt;dB&gt;</code> per line, one tick = {budget.tick_ms} ms here,
        linearly interpolated, applied to the forward downlink. The plot shows what ACM does with it on this link:
        Es/N0 = 1/(1/C/N<sub>up</sub> + 1/C/N<sub>down</sub>) with C/N<sub>down</sub> = {budget.clear_sky_down_db} dB − fade
        and C/N<sub>up</sub> = {budget.clear_sky_up_db} dB; the MODCOD is the most efficient whose threshold is below
        Es/N0 − {budget.margin_db} dB margin ({budget.table === 'dvbs2x' ? 'DVB-S2 Table 13 and DVB-S2X Table 20a' : 'DVB-S2 Table 13'}); the useful rate is that MODCOD's data-field rate at{' '}
        {(budget.symbol_rate_baud / 1e6).toFixed(2)} Msym/s{budget.pilots ? ' with pilots' : ''}. (ACM feedback delay not shown.)
        {budgeted ? (clearSky ? ' The C/N are the link budget\'s.' : ' The scenario\'s link budget gives the C/N: compute it above to preview with them.') : null}
      </p>
      <FileField
        id="trace-file"
        label="Open a trace file"
        accept=".txt,.csv,text/plain"
        onFile={(f) => {
          void f.text().then((t) => {
            show(t, `${f.name} (local, not uploaded)`);
          });
        }}
      />
      <WeatherForm
        tickMs={budget.tick_ms}
        marginDb={budget.margin_db}
        modcodSet={budget.table}
        onTrace={show}
      />
      {source ? <p className="muted">Showing {source}</p> : null}
      {status ? <p className="notice" role="status">{status}</p> : null}
      <ErrorBox error={parsed && 'error' in parsed ? parsed.error : undefined} title="The trace has problems" />
      <ErrorBox error={error} title="Trace" />
      {imp ? (
        <>
          <p>
            Deepest point: <strong>{sum?.deepestDb.toFixed(1)} dB</strong> → MODCOD{' '}
            <strong>{sum?.worst ? `${sum.worst.id} (${sum.worst.name})` : '—'}</strong>, useful rate{' '}
            <strong>{fmtBps(sum?.minRateBps)}</strong> (clear sky {fmtBps(sum?.clearSkyRateBps)}).
          </p>
          <TimeChart
            title="Attenuation and Es/N0"
            name="trace-attenuation"
            yLabel="dB"
            xs={imp.t_s}
            series={[
              { label: 'attenuation (dB)', values: imp.attenuation_db },
              { label: 'Es/N0 (dB)', values: imp.esn0_db },
            ]}
            height={200}
          />
          <TimeChart
            title="MODCOD and useful rate"
            name="trace-modcod"
            yLabel="Mbit/s"
            yRightLabel="MODCOD id"
            xs={imp.t_s}
            series={[
              { label: 'useful rate (Mbit/s)', values: imp.rate_bps.map((r) => r / 1e6) },
              { label: 'MODCOD', values: imp.modcod, right: true, stepped: true },
            ]}
            height={200}
          />
          {canUpload ? (
            <div className="form-row">
              <label htmlFor="trace-name">Upload as</label>
              <input
                id="trace-name"
                type="text"
                value={name}
                onChange={(e) => {
                  setName(e.target.value);
                }}
              />
              <button type="button" className="btn" onClick={() => void upload()}>
                Upload trace
              </button>
            </div>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
