import { useState, type SyntheticEvent } from 'react';
import { ApiError, type Who } from '../api/client.ts';

export interface SignInProps {
  onSignedIn: (token: string, who: Who) => void;
  check: (token: string) => Promise<Who>;
  notice?: string | undefined;
}

export function SignIn({ onSignedIn, check, notice }: SignInProps) {
  const [token, setTokenText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: SyntheticEvent) {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError('Paste an API token.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSignedIn(t, await check(t));
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'This token is unknown, revoked or expired.'
          : `Cannot check the token: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card signin" aria-labelledby="signin-title">
      <h2 id="signin-title">Sign in</h2>
      {notice ? <p className="notice">{notice}</p> : null}
      <p>
        SatLab uses API tokens. After <code>make run</code> the local admin token is printed in the terminal and
        kept in <code>.data/local-admin-token</code>; an admin makes others with{' '}
        <code>satlab token create --role viewer|submitter|admin</code>.
      </p>
      <form onSubmit={(e) => void submit(e)} className="form-row">
        <label htmlFor="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder="sl_…"
          value={token}
          onChange={(e) => {
            setTokenText(e.target.value);
          }}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'token-error' : undefined}
        />
        <button type="submit" className="btn btn--primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
      {error ? (
        <p id="token-error" className="field-error" role="alert">
          {error}
        </p>
      ) : null}
      <p className="hint">The token is kept in this tab only (session storage) and sent as a Bearer header.</p>
    </section>
  );
}
