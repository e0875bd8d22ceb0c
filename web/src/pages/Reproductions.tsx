// The reproductions of the source papers: the latest commit's report (GET /api/reproductions/latest,
// assembled by api/satlab/reproduce/), its summary counts, every claim with its verdict and the
// measured mean with its 95% CI drawn against the band, and a button starting the CI subset.
import { useState } from 'react';
import { api, ApiError, ok, type Schemas } from '../api/client.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, PageHead } from '../components/bits.tsx';
import { num, Table } from '../components/Table.tsx';
import { fmtWhen } from '../lib/format.ts';
import { useAsync } from '../lib/useAsync.ts';

export type Report = Schemas['ReportOut'];
export type Claim = Schemas['ClaimOut'];
type Verdict = Claim['verdict'];

const NO_DATA = { key: 'no-data', summary: 'no-data', label: 'no data', colour: 'var(--unknown)', bg: 'var(--unknown-bg)' } as const;
const VERDICTS: readonly { key: Verdict; summary: 'holds' | 'direction' | 'fails' | 'no-data'; label: string; colour: string; bg: string }[] = [
  { key: 'holds', summary: 'holds', label: 'holds', colour: 'var(--ok)', bg: 'var(--ok-bg)' },
  { key: 'direction', summary: 'direction', label: 'holds in direction only', colour: 'var(--warn)', bg: 'var(--warn-bg)' },
  { key: 'fails', summary: 'fails', label: 'does not hold', colour: 'var(--error)', bg: 'var(--error-bg)' },
  NO_DATA,
];

function verdictOf(v: Verdict) {
  return VERDICTS.find((x) => x.key === v) ?? NO_DATA;
}

function fmt(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return Number(x.toPrecision(4)).toString();
}

/** The measured mean (dot) and its CI (whisker) against the band (shaded) and neutral (dashed). */
export function ClaimChart({ claim, width = 220, height = 28 }: { claim: Claim; width?: number; height?: number }) {
  const band = claim.band ?? [];
  const ci = claim.ci ?? [];
  const vals = [...band, ...ci, claim.mean, claim.neutral].filter((v): v is number => v !== null && Number.isFinite(v));
  if (!vals.length) return null;
  let lo = Math.min(...vals);
  let hi = Math.max(...vals);
  const pad = (hi - lo) * 0.1 || Math.abs(lo) * 0.1 || 1;
  lo -= pad;
  hi += pad;
  const sx = (v: number) => 4 + ((width - 8) * (v - lo)) / (hi - lo);
  const y = height / 2;
  const colour = verdictOf(claim.verdict).colour;
  const [b0, b1] = band;
  const [c0, c1] = ci;
  return (
    <svg width={width} height={height} role="img" aria-label={`${claim.id}: measured ${fmt(claim.mean)} against band [${band.map(fmt).join(', ')}]`}>
      {b0 !== undefined && b1 !== undefined ? (
        <rect data-testid="band" x={sx(b0)} y={3} width={Math.max(1, sx(b1) - sx(b0))} height={height - 6} fill="var(--ok-bg)" stroke="var(--ok)" strokeWidth={0.5} />
      ) : null}
      {claim.neutral !== null ? (
        <line x1={sx(claim.neutral)} x2={sx(claim.neutral)} y1={1} y2={height - 1} stroke="var(--muted)" strokeDasharray="3,2" />
      ) : null}
      {c0 !== undefined && c1 !== undefined ? <line data-testid="ci" x1={sx(c0)} x2={sx(c1)} y1={y} y2={y} stroke={colour} strokeWidth={2} /> : null}
      {claim.mean !== null ? <circle data-testid="mean" cx={sx(claim.mean)} cy={y} r={4} fill={colour} /> : null}
    </svg>
  );
}

export function ReportView({ report }: { report: Report }) {
  const s = report.summary;
  return (
    <>
      <p>
        Commit <code>{report.commit}</code>, report of {fmtWhen(report.generated_at)}: {s.total} claims.
      </p>
      <ul className="inline-list" aria-label="Summary" style={{ display: 'flex', gap: '1.5rem', listStyle: 'none', padding: 0 }}>
        {VERDICTS.map((v) => (
          <li key={v.key} style={{ color: v.colour }}>
            {v.label}: <strong>{s[v.summary]}</strong>
          </li>
        ))}
      </ul>
      <Table
        caption="Claims of the source papers and their verdicts"
        hideCaption
        columns={['Claim', 'Source', num('Measured [95% CI]'), num('Band'), 'Measured vs band', 'Verdict', 'Experiment']}
      >
        {report.claims.map((c) => {
          const v = verdictOf(c.verdict);
          return (
            <tr key={`${c.scenario}/${c.id}`}>
              <th scope="row" title={c.linux_note ?? undefined}>
                {c.id}
                <div className="muted">{c.statement}</div>
              </th>
              <td>{[c.source, c.section, c.figure].filter(Boolean).join(', ')}</td>
              <td className="num">
                {fmt(c.mean)}
                {c.ci ? ` [${fmt(c.ci[0])}, ${fmt(c.ci[1])}]` : ''}
                <div className="muted">n = {c.n ?? 0}</div>
              </td>
              <td className="num">{c.band ? `[${c.band.map(fmt).join(', ')}]` : '–'}</td>
              <td>
                <ClaimChart claim={c} />
              </td>
              <td>
                <span className="verdict" style={{ color: v.colour, background: v.bg, padding: '0 0.4rem', borderRadius: 4 }}>
                  {v.label}
                </span>
              </td>
              <td>
                {c.experiment_id !== null ? <a href={`#/experiments/${c.experiment_id}`}>#{c.experiment_id}</a> : c.results_dir}
                <div className="muted">
                  {c.scenario} ({c.subset})
                </div>
              </td>
            </tr>
          );
        })}
      </Table>
    </>
  );
}

export function ReproductionsPage() {
  const { who } = useAuth();
  const latest = useAsync(() => ok(api.GET('/api/reproductions/latest')), [], 10000);
  const [started, setStarted] = useState<string>();
  const [startError, setStartError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const none = latest.error instanceof ApiError && latest.error.status === 404;

  async function startCi() {
    setBusy(true);
    setStartError(undefined);
    try {
      const r = await ok(api.POST('/api/reproductions', { body: { subset: 'ci' } }));
      const made = r.experiments.filter((e) => e.created).length;
      setStarted(
        `Commit ${r.commit}: ${r.experiments.length} experiments (${made} new, ${r.experiments.length - made} submitted before).`,
      );
      latest.reload();
    } catch (e) {
      setStartError(e as Error);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="stack">
      <PageHead title="Reproductions of the source papers">
        {who.role !== 'viewer' ? (
          <button type="button" className="btn btn--primary" disabled={busy} onClick={() => void startCi()}>
            Start the CI subset
          </button>
        ) : null}
      </PageHead>
      <p className="muted">
        One scenario per experiment of the five source papers, each claim checked against the band that counts as
        reproducing it. The full set runs with <code>satlab reproduce</code> (or <code>make reproduce</code>).
      </p>
      {started ? <p role="status">{started}</p> : null}
      <ErrorBox error={startError} title="Cannot start the reproductions" />
      {none ? <p className="muted">No reproduction has run yet.</p> : <ErrorBox error={latest.error} title="Cannot load the report" />}
      {latest.data ? <ReportView report={latest.data} /> : null}
    </div>
  );
}
