import { useEffect, useState } from 'react';

import { fetchHealth, type HealthResult } from '../api/health.ts';

type Level = 'ok' | 'warn' | 'error' | 'unknown';

interface Checked {
  result: HealthResult;
  at: Date;
}

interface Row {
  label: string;
  level: Level;
  text: string;
}

const MARKS: Record<Level, string> = { ok: '●', warn: '▲', error: '✕', unknown: '○' };

function StatusBadge({ level, text }: { level: Level; text: string }) {
  // The mark and the word carry the state; colour only reinforces it.
  return (
    <span className={`badge badge--${level}`}>
      <span className="badge__mark" aria-hidden="true">
        {MARKS[level]}
      </span>
      {text}
    </span>
  );
}

interface Summary {
  level: Level;
  text: string;
  rows: Row[];
}

type Badge = Omit<Row, 'label'>;

/** The panel's summary line over one badge for the service and one for its database. */
function summary(level: Level, text: string, service: Badge, database: Badge): Summary {
  return { level, text, rows: [{ label: 'Service', ...service }, { label: 'Database', ...database }] };
}

function summarise(checked: Checked | null): Summary {
  if (checked === null) {
    const checking: Badge = { level: 'unknown', text: 'Checking…' };
    return summary('unknown', 'Checking the service…', checking, checking);
  }
  const { result } = checked;
  switch (result.kind) {
    case 'ok':
      return summary('ok', 'All systems operational.', { level: 'ok', text: 'Running' }, { level: 'ok', text: 'Connected' });
    case 'degraded': {
      const dbOk = result.report.database === 'ok';
      return summary(
        'warn',
        dbOk
          ? `The service reports status “${result.report.status}”.`
          : 'The service is running but cannot reach its database.',
        { level: 'warn', text: `Running (${result.report.status})` },
        { level: dbOk ? 'ok' : 'error', text: dbOk ? 'Connected' : capitalise(result.report.database) },
      );
    }
    case 'unreachable':
      return summary(
        'error',
        'Cannot reach the SatLab service.',
        { level: 'error', text: 'Unreachable' },
        { level: 'unknown', text: 'Unknown' },
      );
  }
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

export interface StatusPanelProps {
  /** How often to re-check, in milliseconds; 0 checks once (and on demand). */
  pollIntervalMs?: number;
}

/** Shows whether the SatLab service and its database are up, from GET /api/health. */
export function StatusPanel({ pollIntervalMs = 15_000 }: StatusPanelProps) {
  const [checked, setChecked] = useState<Checked | null>(null);
  const [checking, setChecking] = useState(true);
  const [round, setRound] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;

    const check = async () => {
      let result: HealthResult;
      try {
        result = await fetchHealth(controller.signal);
      } catch {
        return; // aborted: the panel unmounted or a new round started
      }
      setChecked({ result, at: new Date() });
      setChecking(false);
      if (pollIntervalMs > 0) {
        timer = setTimeout(() => {
          setChecking(true);
          void check();
        }, pollIntervalMs);
      }
    };
    void check();

    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [pollIntervalMs, round]);

  const recheck = () => {
    if (checking) {
      return;
    }
    setChecking(true);
    setRound((r) => r + 1);
  };

  const summary = summarise(checked);
  const result = checked?.result;

  return (
    <section className="panel status-panel" aria-labelledby="status-heading" aria-busy={checking}>
      <div className="panel__header">
        <h2 id="status-heading">Service status</h2>
        <button
          type="button"
          className="button"
          onClick={recheck}
          aria-disabled={checking}
        >
          {checking && checked !== null ? 'Checking…' : 'Check again'}
        </button>
      </div>

      <p role="status" className={`status-summary status-summary--${summary.level}`}>
        {summary.text}
      </p>

      {result?.kind === 'unreachable' && (
        <div className="status-error">
          <p>{result.reason}</p>
          <p>
            Is the service running? Start it with <code>make run</code> from the repository root;
            it listens on <code>http://127.0.0.1:8700</code>.
          </p>
        </div>
      )}

      <dl className="status-list">
        {summary.rows.map((row) => (
          <div className="status-list__row" key={row.label}>
            <dt>{row.label}</dt>
            <dd>
              <StatusBadge level={row.level} text={row.text} />
            </dd>
          </div>
        ))}
        {result !== undefined && result.kind !== 'unreachable' && (
          <div className="status-list__row">
            <dt>Version</dt>
            <dd>{result.report.version}</dd>
          </div>
        )}
        {result?.kind === 'ok' && result.report.postgres !== undefined && (
          <div className="status-list__row">
            <dt>PostgreSQL</dt>
            <dd>{result.report.postgres}</dd>
          </div>
        )}
      </dl>

      {result?.kind === 'degraded' && result.report.detail !== undefined && (
        <p className="status-detail">
          <span className="status-detail__label">Database error:</span>{' '}
          <code>{result.report.detail}</code>
        </p>
      )}

      {checked !== null && (
        <p className="status-checked">
          Last checked <time dateTime={checked.at.toISOString()}>{checked.at.toLocaleTimeString()}</time>
        </p>
      )}
    </section>
  );
}
