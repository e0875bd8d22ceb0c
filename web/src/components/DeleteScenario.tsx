// Deleting a scenario (its owner or an admin), after a confirmation. The service refuses (409)
// when experiments used any revision of it, so nothing stored for an experiment is ever lost;
// that answer is shown as is.
import { useState } from 'react';
import { api, ApiError, ok } from '../api/client.ts';
import { navigate } from '../lib/router.ts';

export function DeleteScenario({ id, name }: { id: number; name: string }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  async function remove() {
    setBusy(true);
    try {
      await ok(api.DELETE('/api/scenarios/{scenario_id}', { params: { path: { scenario_id: id } } }));
      navigate('/scenarios');
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 409
          ? `Not deleted: ${e.message}. Its experiments keep their results; the scenario stays with them.`
          : e instanceof Error
            ? e.message
            : String(e),
      );
      setAsking(false);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      {asking ? (
        <span role="group" aria-label="Confirm deletion" className="confirm">
          Delete “{name}” and all its revisions?{' '}
          <button type="button" className="btn" disabled={busy} onClick={() => void remove()}>
            Delete for good
          </button>{' '}
          <button type="button" className="btn" onClick={() => { setAsking(false); }}>
            Keep it
          </button>
        </span>
      ) : (
        <button type="button" className="btn" onClick={() => { setAsking(true); setError(undefined); }}>
          Delete…
        </button>
      )}
      {error ? (
        <span className="field-error" role="alert">
          {error}
        </span>
      ) : null}
    </>
  );
}
