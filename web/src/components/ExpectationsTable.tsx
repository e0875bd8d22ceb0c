// A scenario's expectations (satlab.expectations) with their verdicts on the comparison: the
// claim and its source, the measured mean with its 95% interval, the band that counts as holding,
// and the verdict as a coloured badge.
import type { Verdict } from '../api/client.ts';
import { fmtMetric } from '../lib/format.ts';
import { num, Table } from './Table.tsx';

const VERDICT_TEXT: Record<Verdict['verdict'], string> = {
  holds: 'holds',
  direction: 'direction only',
  fails: 'fails',
  'no-data': 'no data',
};

// A measured value in the unit of the measure: a mean in its metric's, a ratio as a number.
function fmtMeasured(measure: string, v: number | null | undefined): string {
  const mean = /^\s*mean\s*\(\s*([a-z_]+)/.exec(measure);
  if (mean?.[1]) return fmtMetric(mean[1], v);
  return v === null || v === undefined ? '—' : v.toPrecision(3);
}

export function ExpectationsTable({ claims }: { claims: Verdict[] }) {
  return (
    <section className="card" aria-labelledby="claims-title">
      <h3 id="claims-title">Expectations</h3>
      <p className="muted">
        The scenario's claims, judged on the comparison: <strong>holds</strong> when the measured mean lies in the band, <strong>direction only</strong> when it lies outside the band but on the claimed side, <strong>fails</strong> otherwise, <strong>no data</strong> while runs are missing or failed.
      </p>
      <Table
        caption="Expectations and their verdicts"
        hideCaption
        testId="expectations-table"
        columns={['Claim', 'Source', num('Measured mean [95% CI]'), num('Band'), 'Verdict']}
      >
        {claims.map((c) => {
          const where = [c.source.section ? `§${c.source.section}` : '', c.source.figure ?? '', c.source.table ?? ''].filter(Boolean).join(', ');
          return (
            <tr key={c.id} data-testid={`claim-${c.id}`}>
              <th scope="row">
                {c.claim}
                <br />
                <span className="muted">
                  <code>{c.measure}</code>
                  {c.at ? ` at ${Object.entries(c.at).map(([k, v]) => `${k.split('.').pop() ?? k}=${String(v)}`).join(', ')}` : ' at every sweep point'}
                </span>
                {c.linux_note ? (
                  <details>
                    <summary className="muted">Linux note</summary>
                    {c.linux_note}
                  </details>
                ) : null}
              </th>
              <td>
                {c.source.paper}
                {where ? <span className="muted">, {where}</span> : null}
              </td>
              <td className="num" title={c.note}>
                {fmtMeasured(c.measure, c.mean)}
                {c.ci ? ` [${fmtMeasured(c.measure, c.ci[0])}, ${fmtMeasured(c.measure, c.ci[1])}]` : ''}
                {c.n ? <span className="muted"> n={c.n}</span> : null}
              </td>
              <td className="num">
                {fmtMeasured(c.measure, c.band[0])} – {fmtMeasured(c.measure, c.band[1])}
              </td>
              <td>
                <span className={`claim-verdict claim-verdict--${c.verdict}`} data-testid={`verdict-${c.id}`}>
                  {VERDICT_TEXT[c.verdict]}
                </span>
              </td>
            </tr>
          );
        })}
      </Table>
    </section>
  );
}

