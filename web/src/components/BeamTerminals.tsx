// A beam's terminals while a run goes (lib/terminals.ts, one row each from the status every
// heartbeat carries): the newest forward MODCOD, Es/N0 and queue and the return link's DAMA
// requests and grant of each terminal as a table, and over the run so far each terminal's forward
// MODCOD and granted return capacity; where the return link has contention access (the run's
// `return_contention`), each terminal's contention split so far, which a finished run shows from
// its result. Nothing without a beam.
import { fmtNum } from '../lib/format.ts';
import { latestTerminals, terminalColumn, type LiveState } from '../lib/live.ts';
import { chartedOf } from '../lib/runCharts.ts';
import { hasDama, hasReturnBeam, liveContention, MAX_CHART_TERMINALS, type ContentionRow, type TerminalRow } from '../lib/terminals.ts';
import { num, Table } from './Table.tsx';
import { TimeChart } from './TimeChart.tsx';

export function TerminalTable({ rows }: { rows: TerminalRow[] }) {
  const ret = hasReturnBeam(rows);
  const dama = hasDama(rows);
  return (
    <Table
      caption="Terminals of the beam (newest status)"
      testId="beam-terminals"
      columns={[
        'Terminal',
        'Forward MODCOD',
        num('Es/N0 (dB)'),
        num('Forward queue (packets)'),
        dama ? num('Granted (kbit/s)') : null,
        dama ? num('Requested RBDC (kbit/s)') : null,
        dama ? num('Requested VBDC (bytes)') : null,
        ret ? num('Return queue (packets)') : null,
      ]}
    >
      {rows.map((r) => (
        <tr key={r.name} data-testid={`terminal-${r.name}`}>
          <th scope="row">{r.name}</th>
          <td data-testid="terminal-modcod">{r.modcod ? `${r.modcod.name} (${String(r.modcod.id)})` : '—'}</td>
          <td className="num">{fmtNum(r.esn0Db)}</td>
          <td className="num">{fmtNum(r.queuePackets)}</td>
          {dama ? <td className="num" data-testid="terminal-granted">{fmtNum(r.grantedKbps, 4)}</td> : null}
          {dama ? <td className="num">{fmtNum(r.requestedRbdcKbps, 4)}</td> : null}
          {dama ? <td className="num">{fmtNum(r.requestedVbdcBytes, 6)}</td> : null}
          {ret ? <td className="num">{fmtNum(r.returnQueuePackets)}</td> : null}
        </tr>
      ))}
    </Table>
  );
}

/**
 * Each terminal's capacity requests sent in contention slots (slotted ALOHA) and how they fared:
 * a request gets through alone in its slot, else it collided with another terminal of the beam or
 * met only the background load of terminals outside the emulated set.
 */
export function ContentionTable({ rows, caption }: { rows: ContentionRow[]; caption: string }) {
  return (
    <Table
      caption={caption}
      testId="beam-contention"
      columns={['Terminal', num('Tries'), num('Successes'), num('Collisions with beam terminals'), num('Collisions with background load')]}
    >
      {rows.map(({ name, split }) => (
        <tr key={name} data-testid={`contention-${name}`}>
          <th scope="row">{name}</th>
          <td className="num">{String(split.tries)}</td>
          <td className="num">{String(split.successes)}</td>
          <td className="num">{String(split.beamCollisions)}</td>
          <td className="num">{String(split.backgroundCollisions)}</td>
        </tr>
      ))}
    </Table>
  );
}

/** `contention`: the run's return link has contention access (without it every count is 0). */
export function LiveTerminals({ live, name, contention }: { live: LiveState; name: string; contention: boolean }) {
  const rows = latestTerminals(live);
  if (rows.length === 0) return null;
  const xs = live.samples.map((s) => s.t);
  const charted = live.terminals.slice(0, MAX_CHART_TERMINALS);
  const split = contention ? liveContention(rows) : [];
  return (
    <section className="card" aria-labelledby="beam-title">
      <h3 id="beam-title">Beam terminals</h3>
      <TerminalTable rows={rows} />
      {split.length > 0 ? <ContentionTable rows={split} caption="Contention requests per terminal (so far)" /> : null}
      <div className="grid2">
        <TimeChart
          title={`MODCOD per terminal (live${chartedOf(live.terminals)})`}
          name={`${name}-terminal-modcod`}
          yLabel="MODCOD"
          xs={xs}
          series={charted.map((t) => ({ label: t, values: terminalColumn(live, t, (r) => r.modcod?.id ?? null), stepped: true }))}
          height={180}
        />
        {hasDama(rows) ? (
          <TimeChart
            title={`Granted return capacity per terminal (live${chartedOf(live.terminals)})`}
            name={`${name}-terminal-granted`}
            yLabel="kbit/s"
            xs={xs}
            series={charted.map((t) => ({ label: t, values: terminalColumn(live, t, (r) => r.grantedKbps) }))}
            height={180}
          />
        ) : null}
      </div>
    </section>
  );
}
