// A trace from the operator's own inputs: a site's ITU-R P.1853 weather (POST /api/traces/synth,
// satlab.weather) with the site's annual statistics beside the trace's, or a modem's Es/N0 / MODCOD
// log (POST /api/traces/modem-log, satlab.modemlog). The trace goes to the caller (TracePanel),
// which previews what ACM does with it and uploads it under the scenario's name.
import { useState } from 'react';
import { api, ok, type Schemas } from '../api/client.ts';
import { ErrorBox, FileField } from './bits.tsx';

type TraceOut = Schemas['TraceOut'];
type SynthIn = Schemas['TraceSynthIn'];

/** The trace file's text: its header as `#` comments, then `<tick> <dB>` per tick. */
export function traceText(t: TraceOut): string {
  return [...t.header.map((h) => `# ${h}`), ...t.values_db.map((v, i) => `${i} ${v.toFixed(4)}`)].join('\n') + '\n';
}

const NUMBERS: { key: 'lat' | 'lon' | 'freq_ghz' | 'elevation_deg' | 'duration_s' | 'step_ms' | 'seed' | 'antenna_diameter_m'; label: string; step: string }[] = [
  { key: 'lat', label: 'Latitude (deg)', step: 'any' },
  { key: 'lon', label: 'Longitude (deg, east +)', step: 'any' },
  { key: 'freq_ghz', label: 'Frequency (GHz, 4-55)', step: 'any' },
  { key: 'elevation_deg', label: 'Elevation (deg, 5-90)', step: 'any' },
  { key: 'duration_s', label: 'Duration (s)', step: 'any' },
  { key: 'step_ms', label: 'Tick (ms)', step: '1' },
  { key: 'seed', label: 'Seed', step: '1' },
  { key: 'antenna_diameter_m', label: 'Antenna diameter (m, scintillation)', step: 'any' },
];

export function WeatherForm({
  tickMs,
  marginDb,
  modcodSet = 'dvbs2',
  onTrace,
}: {
  tickMs: number;
  /** the ACM margin: a MODCOD log's sample stands for its threshold plus it */
  marginDb: number;
  /** the link's embedded MODCOD table, which a MODCOD log's names and ids refer to */
  modcodSet?: Schemas['ModemLogIn']['modcod_set'];
  onTrace: (text: string, source: string) => void;
}) {
  const [site, setSite] = useState<SynthIn>({
    lat: 43.6,
    lon: 1.44,
    freq_ghz: 19.7,
    elevation_deg: 35,
    duration_s: 3600,
    step_ms: tickMs,
    seed: 1,
    model: 'independent',
    clouds: false,
    scintillation: false,
    antenna_diameter_m: 1.2,
    tau_deg: 45,
  });
  const [stats, setStats] = useState<TraceOut['statistics']>();
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const combined = stats?.exceedances.some((r) => r.site_total_db != null) ?? false;

  async function synth() {
    setBusy(true);
    setError(undefined);
    setNote(undefined);
    try {
      const t = await ok(api.POST('/api/traces/synth', { body: site }));
      setStats(t.statistics);
      onTrace(traceText(t), `P.1853 trace for ${String(site.lat)}, ${String(site.lon)} at ${String(site.freq_ghz)} GHz (seed ${String(site.seed)}, not uploaded)`);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  async function importLog(file: File) {
    setError(undefined);
    setStats(undefined);
    try {
      const t = await ok(api.POST('/api/traces/modem-log', {
          body: { csv: await file.text(), step_ms: tickMs, max_gap_s: 10, uplink_db: 60, margin_db: marginDb, modcod_set: modcodSet },
        }));
      setNote(
        `Set forward.downlink.clear_sky_db to ${String(t.clear_sky_db?.toFixed(4))} and forward.uplink.clear_sky_db to ${String(t.uplink_db)}: the emulator then replays the log's Es/N0.`,
      );
      onTrace(traceText(t), `${file.name} (modem log, not uploaded)`);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }

  return (
    <details className="weather-form">
      <summary>Synthesise the weather of a site, or import a modem log</summary>
      <form
        aria-label="Site weather"
        onSubmit={(e) => {
          e.preventDefault();
          void synth();
        }}
      >
        {NUMBERS.map(({ key, label, step }) => (
          <div className="form-row" key={key}>
            <label htmlFor={`wx-${key}`}>{label}</label>
            <input
              id={`wx-${key}`}
              type="number"
              step={step}
              value={Number.isNaN(site[key]) ? '' : String(site[key])}
              onChange={(e) => {
                setSite({ ...site, [key]: e.target.value === '' ? Number.NaN : Number(e.target.value) });
              }}
            />
          </div>
        ))}
        <div className="form-row">
          <label htmlFor="wx-model">Model</label>
          <select
            id="wx-model"
            value={site.model}
            onChange={(e) => {
              const model = e.target.value as SynthIn['model'];
              // the combined method has its own clouds and scintillation
              setSite(model === 'combined' ? { ...site, model, clouds: false, scintillation: false } : { ...site, model });
            }}
          >
            <option value="independent">rain, clouds, scintillation independent (summed)</option>
            <option value="combined">P.1853-2 combined (itur: whole seconds, at most a day, ~10 s)</option>
          </select>
        </div>
        <div className="form-row">
          <label>
            <input type="checkbox" disabled={site.model === 'combined'} checked={site.clouds} onChange={(e) => { setSite({ ...site, clouds: e.target.checked }); }} /> clouds (P.840)
          </label>
          <label>
            <input type="checkbox" disabled={site.model === 'combined'} checked={site.scintillation} onChange={(e) => { setSite({ ...site, scintillation: e.target.checked }); }} /> scintillation (P.618)
          </label>
          <button type="submit" className="btn" disabled={busy}>
            {busy ? 'Synthesising…' : 'Synthesise'}
          </button>
        </div>
      </form>
      <FileField
        id="wx-log"
        label="Modem log (CSV: time_s or time, esn0_db or modcod)"
        accept=".csv,.txt,text/csv,text/plain"
        onFile={(f) => void importLog(f)}
      />
      <ErrorBox error={error} title="Weather" />
      {note ? <p className="notice" role="status">{note}</p> : null}
      {stats ? (
        <div className="table-wrap">
          <table className="table" data-testid="weather-stats">
            <caption>
              The site's year (ITU-R P.837: R0.01 {stats.rain_rate_001_mm_h.toFixed(1)} mm/h, rain {stats.p_rain_pct.toFixed(2)} % of the time) beside this trace ({stats.trace_duration_s} s, in rain {stats.trace_rain_pct.toFixed(2)} % of ticks, max {stats.trace_max_db.toFixed(2)} dB, {stats.clamped_ticks} tick(s) clamped at 100 dB = outage)
            </caption>
            <thead>
              <tr>
                <th scope="col" className="num">exceeded % of the time</th>
                <th scope="col" className="num">P.618 rain (dB)</th>
                <th scope="col" className="num">trace rain (dB)</th>
                <th scope="col" className="num">trace total (dB)</th>
                {combined ? <th scope="col" className="num">P.618 total less median gases (dB)</th> : null}
              </tr>
            </thead>
            <tbody>
              {stats.exceedances.map((r) => (
                <tr key={r.p_pct}>
                  <td className="num">{r.p_pct}</td>
                  <td className="num">{r.site_rain_db.toFixed(2)}</td>
                  <td className="num">{r.trace_rain_db.toFixed(2)}</td>
                  <td className="num">{r.trace_total_db.toFixed(2)}</td>
                  {combined ? <td className="num">{r.site_total_db?.toFixed(2) ?? '-'}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </details>
  );
}
