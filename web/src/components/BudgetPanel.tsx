// A scenario's link budget (its `link_budget` section; POST /api/link-budget, satlab.linkbudget):
// each hop's terms down to the clear-sky C/N the emulator receives, the P.618 rain fade and the C/N
// at the chosen availability, and each direction's Es/N0.
import { useState } from 'react';
import { api, ok, type Schemas } from '../api/client.ts';
import { ErrorBox } from './bits.tsx';

type Budget = Schemas['BudgetOut'];
type Hop = Schemas['HopRow'];

const ROWS: [string, (h: Hop) => string][] = [
  ['station', (h) => h.station],
  ['frequency (GHz)', (h) => h.frequency_ghz.toFixed(2)],
  ['elevation (deg)', (h) => h.elevation_deg.toFixed(2)],
  ['slant range (km)', (h) => h.slant_range_km.toFixed(1)],
  ['EIRP (dBW)', (h) => h.eirp_dbw.toFixed(2)],
  ['− free-space loss (dB)', (h) => h.free_space_loss_db.toFixed(2)],
  ['− gases, median (dB)', (h) => h.gas_db.toFixed(2)],
  ['− other losses (dB)', (h) => h.other_losses_db.toFixed(2)],
  ['+ G/T (dB/K)', (h) => h.g_over_t_db_per_k.toFixed(2)],
  ['− Boltzmann (dBW/K/Hz)', (h) => h.boltzmann_dbw_per_k_hz.toFixed(2)],
  ['− bandwidth = Rs (dBHz)', (h) => h.bandwidth_db_hz.toFixed(2)],
  ['= C/N clear sky (dB)', (h) => h.clear_sky_db.toFixed(2)],
  ['rain, P.618 (dB)', (h) => h.rain_db.toFixed(2)],
  ['atmosphere, P.618 (dB)', (h) => h.atmosphere_db.toFixed(2)],
  ['C/N at availability (dB)', (h) => h.availability_db.toFixed(2)],
];

/** The forward hops' clear-sky C/N of a budget (what the emulator gets), if it has them. */
export function forwardClearSky(b: Budget): { up: number; down: number } | undefined {
  const hop = (name: string) => b.hops.find((h) => h.direction === 'forward' && h.hop === name)?.clear_sky_db;
  const up = hop('uplink');
  const down = hop('downlink');
  return up === undefined || down === undefined ? undefined : { up, down };
}

export function BudgetPanel({
  yaml,
  onBudget,
}: {
  yaml: string;
  /** the forward hops' clear-sky C/N after each computation (undefined on an error) */
  onBudget?: (cn: { up: number; down: number } | undefined) => void;
}) {
  const [budget, setBudget] = useState<Budget>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function compute() {
    setBusy(true);
    setError(undefined);
    try {
      const b = await ok(api.POST('/api/link-budget', { body: { yaml } }));
      setBudget(b);
      onBudget?.(forwardClearSky(b));
    } catch (e) {
      setBudget(undefined);
      onBudget?.(undefined);
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card" aria-labelledby="budget-title">
      <h3 id="budget-title">Link budget</h3>
      <p className="field-help">
        The <code>link_budget</code> section derives each hop&apos;s clear-sky C/N from EIRP, G/T and frequency over{' '}
        <code>link.geometry</code>; runs get it as <code>clear_sky_db</code>, and rain comes from the attenuation trace.
      </p>
      <button type="button" className="btn" disabled={busy} onClick={() => void compute()}>
        {busy ? 'Computing…' : 'Compute the budget'}
      </button>
      <ErrorBox error={error} title="Link budget" />
      {budget ? (
        <>
          <div className="table-wrap">
            <table className="table" data-testid="budget-table">
              <caption>Availability {budget.availability_pct} % of an average year</caption>
              <thead>
                <tr>
                  <th scope="col" />
                  {budget.hops.map((h) => (
                    <th scope="col" className="num" key={`${h.direction}-${h.hop}`}>
                      {h.direction} {h.hop}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {ROWS.map(([label, cell]) => (
                  <tr key={label}>
                    <th scope="row">{label}</th>
                    {budget.hops.map((h) => (
                      <td className="num" key={`${h.direction}-${h.hop}`}>
                        {cell(h)}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <ul>
            {budget.directions.map((d) => (
              <li key={d.direction}>
                {d.direction}: Es/N0 <strong>{d.clear_sky_esn0_db.toFixed(2)} dB</strong> clear sky,{' '}
                {d.availability_esn0_db.toFixed(2)} dB at {budget.availability_pct} % (both hops faded at once)
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
