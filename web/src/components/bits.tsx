import type { ReactNode } from 'react';

export function StateBadge({ state }: { state: string }) {
  return <span className={`state state--${state}`}>{state}</span>;
}

export function ErrorBox({ error, title = 'Something went wrong' }: { error: Error | string | undefined; title?: string }) {
  if (!error) return null;
  const msg = typeof error === 'string' ? error : error.message;
  return (
    <div className="error-box" role="alert">
      <strong>{title}:</strong> <span className="pre">{msg}</span>
    </div>
  );
}

export function Progress({ value, label }: { value: number; label: string }) {
  const pct = Math.round(Math.max(0, Math.min(1, value)) * 100);
  return (
    <span className="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
      <span className="progress__bar" style={{ width: `${pct}%` }} />
    </span>
  );
}

export function PageHead({ title, children }: { title: ReactNode; children?: ReactNode }) {
  return (
    <div className="page-head">
      <h2>{title}</h2>
      {children ? <div className="page-head__actions">{children}</div> : null}
    </div>
  );
}

/** A labelled file input on its own form row; `onFile` gets the file picked (a cancelled choice is ignored). */
export function FileField({ id, label, accept, onFile }: { id: string; label: ReactNode; accept: string; onFile: (f: File) => void }) {
  return (
    <div className="form-row">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="file"
        accept={accept}
        onChange={(e) => {
          const f = e.target.files?.[0];
          if (f) onFile(f);
        }}
      />
    </div>
  );
}
