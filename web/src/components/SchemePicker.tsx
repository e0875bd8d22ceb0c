// The scheme catalogue (GET /api/schemes, api/satlab/catalog.py): pick a transport scheme and add
// its configuration to the scenario being edited; saving makes it a configuration to submit.
import { useId, useState } from 'react';
import { api, ok, type Schemas } from '../api/client.ts';
import { configurationNames } from '../lib/schemes.ts';
import { useAsync } from '../lib/useAsync.ts';
import { ErrorBox } from './bits.tsx';

export type Scheme = Schemas['SchemeOut'];

export function SchemePicker({ scenario, onAdd }: { scenario: unknown; onAdd: (s: Scheme) => void }) {
  const id = useId();
  const schemes = useAsync(() => ok(api.GET('/api/schemes')), []);
  const [name, setName] = useState('');
  const list = schemes.data ?? [];
  const chosen = list.find((s) => s.name === name) ?? list[0];
  const have = configurationNames(scenario);
  return (
    <section className="card" aria-labelledby={`${id}-t`}>
      <h3 id={`${id}-t`}>Add a transport scheme</h3>
      <ErrorBox error={schemes.error} title="Cannot load the scheme catalogue" />
      {chosen ? (
        <>
          <div className="form-row">
            <label htmlFor={`${id}-s`}>Scheme</label>
            <select
              id={`${id}-s`}
              value={chosen.name}
              onChange={(e) => {
                setName(e.target.value);
              }}
            >
              {list.map((s) => (
                <option key={s.name} value={s.name}>
                  {s.label}
                  {have.includes(s.configuration.name) ? ' (in this scenario)' : ''}
                </option>
              ))}
            </select>
            <button
              type="button"
              className="btn"
              onClick={() => {
                onAdd(chosen);
              }}
            >
              Add to the scenario
            </button>
          </div>
          <p className="field-help" data-testid="scheme-description">
            {chosen.description}
            {chosen.paper_section ? <> Paper: {chosen.paper_section}.</> : null}
          </p>
          <p className="field-help">
            Adds configuration <code>{chosen.configuration.name}</code> (renamed if the scenario has one of that name); save to submit with it.
          </p>
        </>
      ) : schemes.loading ? (
        <p className="muted">Loading…</p>
      ) : null}
    </section>
  );
}
