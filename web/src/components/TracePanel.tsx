// Attenuation traces: pick a local file (or the one the scenario names), see the attenuation and
// the Es/N0, MODCOD and useful rate it implies on this scenario's forward link (lib/modcod.ts),
// and upload it under the name the scenario uses.
import { useEffect, useMemo, useState } from 'react';
import { api, ok, raw } from '../api/client.ts';
import { fmtBps } from '../lib/format.ts';
import { DEFAULT_BUDGET, implications, modcodById, modcodName, parseAttenuationTrace, type LinkBudget } from '../lib/modcod.ts';
import { getIn } from '../lib/yamlDoc.ts';
import { ErrorBox } from './bits.tsx';
import { TimeChart } from './TimeChart.tsx';
import { WeatherForm } from './WeatherForm.tsx';

function numAt(data: unknown, path: string[], dflt: number): number {
  const v = getIn(data, path);
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

export function budgetOf(scenario: unknown): LinkBudget {
  const f = ['link', 'forward'];
  const refresh = numAt(scenario, [...f, 'acm', 'refresh_ms'], 1000);
  return {
    tickMs: numAt(scenario, [...f, 'downlink', 'attenuation', 'tick_ms'], refresh),
    symbolRateBaud: numAt(scenario, [...f, 'symbol_rate_baud'], DEFAULT_BUDGET.symbolRateBaud),
    clearSkyUpDb: numAt(scenario, [...f, 'uplink', 'clear_sky_db'], 20),
    clearSkyDownDb: numAt(scenario, [...f, 'downlink', 'clear_sky_db'], 20),
    marginDb: numAt(scenario, [...f, 'acm', 'margin_db'], 0),
    pilots: getIn(scenario, [...f, 'pilots']) !== false,
  };
}

export function TracePanel({
  scenario,
  canUpload,
  onUploaded,
  pending = {},
}: {
  scenario: unknown;
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

  const budget = budgetOf(scenario);
  const budgetKey = JSON.stringify(budget);
  const parsed = useMemo(() => {
    if (text === undefined) return undefined;
    try {
      return { imp: implications(parseAttenuationTrace(text), budget) };
    } catch (e) {
      return { error: e instanceof Error ? e.message : String(e) };
    }
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

  const imp = parsed && 'imp' in parsed ? parsed.imp : undefined;
  const minRate = imp ? Math.min(...imp.rateBps) : undefined;
  const worst = imp ? modcodById(Math.min(...imp.modcod)) : undefined;
  return (
    <section className="card" aria-labelledby="trace-title">
      <h3 id="trace-title">Rain-fade trace</h3>
      <p className="field-help">
        OpenSAND attenuation format: <code>&lt;tick&gt; &lt;dB&gt;</code> per line, one tick = {budget.tickMs} ms here,
        linearly interpolated, applied to the forward downlink. The plot shows what ACM does with it on this link:
        Es/N0 = 1/(1/C/N<sub>up</sub> + 1/C/N<sub>down</sub>) with C/N<sub>down</sub> = {budget.clearSkyDownDb} dB − fade
        and C/N<sub>up</sub> = {budget.clearSkyUpDb} dB; the MODCOD is the most efficient whose threshold is below
        Es/N0 − {budget.marginDb} dB margin (DVB-S2 Table 13); the useful rate is that MODCOD's data-field rate at{' '}
        {(budget.symbolRateBaud / 1e6).toFixed(2)} Msym/s{budget.pilots ? ' with pilots' : ''}. (ACM feedback delay not shown.)
      </p>
      <div className="form-row">
        <label htmlFor="trace-file">Open a trace file</label>
        <input
          id="trace-file"
          type="file"
          accept=".txt,.csv,text/plain"
          onChange={(e) => {
            const f = e.target.files?.[0];
            if (!f) return;
            void f.text().then((t) => {
              setText(t);
              setSource(`${f.name} (local, not uploaded)`);
              setStatus(undefined);
            });
          }}
        />
      </div>
      <WeatherForm
        tickMs={budget.tickMs}
        marginDb={budget.marginDb}
        onTrace={(t, src) => {
          setText(t);
          setSource(src);
          setStatus(undefined);
        }}
      />
      {source ? <p className="muted">Showing {source}</p> : null}
      {status ? <p className="notice" role="status">{status}</p> : null}
      <ErrorBox error={parsed && 'error' in parsed ? parsed.error : undefined} title="The trace has problems" />
      <ErrorBox error={error} title="Trace" />
      {imp ? (
        <>
          <p>
            Deepest point: <strong>{Math.max(...imp.attenuationDb).toFixed(1)} dB</strong> → MODCOD{' '}
            <strong>{worst ? `${worst.id} (${modcodName(worst)})` : '—'}</strong>, useful rate{' '}
            <strong>{fmtBps(minRate)}</strong> (clear sky {fmtBps(imp.rateBps[0])}).
          </p>
          <TimeChart
            title="Attenuation and Es/N0"
            name="trace-attenuation"
            yLabel="dB"
            xs={imp.t}
            series={[
              { label: 'attenuation (dB)', values: imp.attenuationDb },
              { label: 'Es/N0 (dB)', values: imp.esn0Db },
            ]}
            height={200}
          />
          <TimeChart
            title="MODCOD and useful rate"
            name="trace-modcod"
            yLabel="Mbit/s"
            yRightLabel="MODCOD id"
            xs={imp.t}
            series={[
              { label: 'useful rate (Mbit/s)', values: imp.rateBps.map((r) => r / 1e6) },
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
