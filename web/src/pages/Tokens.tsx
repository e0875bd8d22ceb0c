// API tokens (admins): list with state and last use, create with role, expiry and scope (the
// secret is shown once: only its SHA-256 is stored), revoke after a confirmation.
import { useId, useState } from 'react';
import { api, ApiError, ok } from '../api/client.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, PageHead } from '../components/bits.tsx';
import { Table } from '../components/Table.tsx';
import { fmtWhen } from '../lib/format.ts';
import { tokenBody, tokenState, type TokenForm, type TokenOut } from '../lib/tokens.ts';
import { useAsync } from '../lib/useAsync.ts';

const ROLES = [
  ['viewer', 'viewer: reads everything'],
  ['submitter', 'submitter: creates scenarios, submits experiments'],
  ['admin', 'admin: all of it, and tokens'],
] as const;

function CreateToken({ onCreated }: { onCreated: () => void }) {
  const id = useId();
  const [form, setForm] = useState<TokenForm>({ name: '', role: 'submitter', expiresInDays: '90', scope: '' });
  const [errors, setErrors] = useState<string[]>([]);
  const [created, setCreated] = useState<{ name: string; token: string }>();
  const [busy, setBusy] = useState(false);

  async function create() {
    const out = tokenBody(form);
    if ('errors' in out) {
      setErrors(out.errors);
      return;
    }
    setBusy(true);
    try {
      const t = await ok(api.POST('/api/tokens', { body: out.body }));
      setCreated({ name: t.name, token: t.token });
      setErrors([]);
      setForm({ ...form, name: '' });
      onCreated();
    } catch (e) {
      setErrors(e instanceof ApiError && e.errors.length ? e.errors : [e instanceof Error ? e.message : String(e)]);
    } finally {
      setBusy(false);
    }
  }

  const field = (k: keyof TokenForm) => ({
    value: form[k],
    onChange: (e: { target: { value: string } }) => {
      setForm({ ...form, [k]: e.target.value });
    },
  });
  return (
    <section className="card" aria-labelledby={`${id}-t`}>
      <h3 id={`${id}-t`}>New token</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <div className="fields">
          <div className="field">
            <label htmlFor={`${id}-name`}>Name</label>
            <input id={`${id}-name`} type="text" maxLength={100} {...field('name')} />
            <span className="field-help">who or what uses it, e.g. “nightly CI”</span>
          </div>
          <div className="field">
            <label htmlFor={`${id}-role`}>Role</label>
            <select id={`${id}-role`} {...field('role')}>
              {ROLES.map(([r, label]) => (
                <option key={r} value={r}>{label}</option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-exp`}>Expires in <span className="unit">(days)</span></label>
            <input id={`${id}-exp`} type="number" min={0} max={3650} step="any" {...field('expiresInDays')} />
            <span className="field-help">empty: never</span>
          </div>
          <div className="field">
            <label htmlFor={`${id}-scope`}>Scenario scope</label>
            <input id={`${id}-scope`} type="text" placeholder="nightly-*, quickstart" {...field('scope')} />
            <span className="field-help">scenario-name patterns it may use, comma-separated; empty: all</span>
          </div>
        </div>
        {errors.length ? <ErrorBox error={errors.join('\n')} title="Cannot create the token" /> : null}
        <p>
          <button type="submit" className="btn btn--primary" disabled={busy}>{busy ? 'Creating…' : 'Create token'}</button>
        </p>
      </form>
      {created ? (
        <div className="notice" role="status">
          <p>
            Token <strong>{created.name}</strong> created. Copy it now: it is not shown again.
          </p>
          <code className="pre" data-testid="new-token">{created.token}</code>
        </div>
      ) : null}
    </section>
  );
}

function RevokeButton({ t, onDone }: { t: TokenOut; onDone: () => void }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string>();
  if (!asking) {
    return (
      <button type="button" className="btn btn--small" onClick={() => { setAsking(true); }}>
        Revoke…
      </button>
    );
  }
  return (
    <span role="group" aria-label={`Revoke ${t.name}?`}>
      Revoke “{t.name}”? Whatever uses it stops working.{' '}
      <button
        type="button"
        className="btn btn--small"
        onClick={() => {
          ok(api.DELETE('/api/tokens/{token_id}', { params: { path: { token_id: t.id } } }))
            .then(onDone)
            .catch((e: unknown) => {
              setError(e instanceof Error ? e.message : String(e));
            });
        }}
      >
        Revoke
      </button>{' '}
      <button type="button" className="btn btn--small" onClick={() => { setAsking(false); }}>
        Keep
      </button>
      {error ? <span className="field-error"> {error}</span> : null}
    </span>
  );
}

export function TokensPage() {
  const { who } = useAuth();
  const list = useAsync(async () => (who.role === 'admin' ? ok(api.GET('/api/tokens')) : []), [who.role]);
  if (who.role !== 'admin') {
    return (
      <div className="stack">
        <PageHead title="API tokens" />
        <p className="notice">Only admins manage tokens.</p>
      </div>
    );
  }
  return (
    <div className="stack">
      <PageHead title="API tokens" />
      <CreateToken onCreated={list.reload} />
      <ErrorBox error={list.error} title="Cannot list tokens" />
      {list.data ? (
        <Table
          caption="Tokens"
          hideCaption
          columns={[
            '#',
            'Name',
            'Role',
            'Scope',
            'Created',
            'Expires',
            'Last used',
            'State',
            { label: <span className="visually-hidden">Actions</span> },
          ]}
        >
          {list.data.map((t) => {
            const state = tokenState(t);
            return (
              <tr key={t.id} data-testid={`token-${String(t.id)}`}>
                <td>{t.id}</td>
                <th scope="row">{t.name}{t.id === who.id ? <span className="muted"> (you)</span> : null}</th>
                <td><span className={`role role--${t.role}`}>{t.role}</span></td>
                <td>{t.scope?.join(', ') ?? 'all'}</td>
                <td>{fmtWhen(t.created_at)}</td>
                <td>{t.expires_at ? fmtWhen(t.expires_at) : 'never'}</td>
                <td>{t.last_used_at ? fmtWhen(t.last_used_at) : '—'}</td>
                <td><span className={`state state--${state === 'active' ? 'succeeded' : 'failed'}`}>{state}</span></td>
                <td>{state === 'active' && t.id !== who.id ? <RevokeButton t={t} onDone={list.reload} /> : null}</td>
              </tr>
            );
          })}
        </Table>
      ) : null}
    </div>
  );
}
