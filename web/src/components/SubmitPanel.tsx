// Submission: configurations, an optional sweep, repetitions; the API's plan (run count and
// estimated duration) is shown before anything is created.
import { useEffect, useId, useMemo, useState } from 'react';
import { api, ApiError, ok, type ExperimentIn, type PlanOut } from '../api/client.ts';
import { fmtDuration } from '../lib/format.ts';
import { navigate } from '../lib/router.ts';
import { ErrorBox } from './bits.tsx';

const OTHER = 'other';

const SWEEPS = [
  { path: '', label: 'No sweep', help: 'the scenario’s own sweep, if it has one' },
  { path: 'forward.bit_errors.ber', label: 'Bit error rate', help: 'forward.bit_errors.ber (the scenario needs bit_errors.model: uniform)' },
  { path: 'forward.downlink.attenuation.value_db', label: 'Fade depth (dB)', help: 'forward.downlink.attenuation.value_db (attenuation type: constant)' },
  { path: 'forward.queue.limit_packets', label: 'Buffer (packets)', help: 'forward.queue.limit_packets' },
  { path: 'forward.delay_ms', label: 'One-way delay (ms)', help: 'forward.delay_ms' },
  { path: OTHER, label: 'Another field…', help: 'any scenario field: link.*, hosts.*, traffic.N.*, configurations.N.*, duration_s, path.*' },
];

/** One sweep dimension: a field's path and its comma-separated values. */
interface Dimension {
  choice: string;
  other: string;
  values: string;
}

const NONE: Dimension = { choice: '', other: '', values: '' };

function pathOf(d: Dimension): string {
  return d.choice === OTHER ? d.other.trim() : d.choice;
}

function valuesOf(d: Dimension): (number | string | boolean)[] {
  return d.values
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => (x === 'true' ? true : x === 'false' ? false : Number.isFinite(Number(x)) ? Number(x) : x));
}

/** The request's sweep: none, one dimension, or two (the second only with a first). */
export function sweepOf(first: Dimension, second: Dimension): ExperimentIn['sweep'] {
  const dims = [first, second].filter((d) => pathOf(d)).map((d) => ({ path: pathOf(d), values: valuesOf(d) }));
  if (!pathOf(first) || dims.length === 0) return undefined;
  return dims.length === 1 ? dims[0] : dims;
}

function SweepFields({ label, dim, onChange }: { label: string; dim: Dimension; onChange: (d: Dimension) => void }) {
  const id = useId();
  /** The free-text part `key` of the dimension, labelled "<label>: <what>". */
  const textField = (key: 'other' | 'values', what: string, placeholder: string, help?: string) => (
    <div className="field">
      <label htmlFor={`${id}-${key}`}>
        {label}: {what}
      </label>
      <input
        id={`${id}-${key}`}
        type="text"
        placeholder={placeholder}
        value={dim[key]}
        onChange={(e) => {
          onChange({ ...dim, [key]: e.target.value });
        }}
      />
      {help ? <span className="field-help">{help}</span> : null}
    </div>
  );
  return (
    <>
      <div className="field">
        <label htmlFor={`${id}-path`}>{label}</label>
        <select
          id={`${id}-path`}
          value={dim.choice}
          onChange={(e) => {
            onChange({ ...dim, choice: e.target.value });
          }}
        >
          {SWEEPS.map((s) => (
            <option key={s.path} value={s.path}>
              {s.label}
            </option>
          ))}
        </select>
        <span className="field-help">{SWEEPS.find((s) => s.path === dim.choice)?.help}</span>
      </div>
      {dim.choice === OTHER ? textField('other', 'field', 'hosts.settings.sack') : null}
      {dim.choice ? textField('values', 'values', '1e-7, 1e-6, 1e-5', 'comma-separated; true and false are booleans') : null}
    </>
  );
}

export function SubmitPanel({ scenarioId, revision, configurations, repetitions }: { scenarioId: number; revision: number; configurations: string[]; repetitions: number }) {
  const id = useId();
  const [picked, setPicked] = useState<string[]>(configurations);
  const [first, setFirst] = useState<Dimension>(NONE);
  const [second, setSecond] = useState<Dimension>(NONE);
  const [reps, setReps] = useState(String(repetitions));
  const [plan, setPlan] = useState<PlanOut>();
  const [errors, setErrors] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [key] = useState(() => crypto.randomUUID());

  const body = useMemo<ExperimentIn>(() => {
    const b: ExperimentIn = { scenario_id: scenarioId, revision, configurations: picked, priority: 0 };
    const r = Number(reps);
    if (reps.trim() !== '') b.repetitions = Number.isInteger(r) ? r : -1;
    const sweep = sweepOf(first, second);
    if (sweep) b.sweep = sweep;
    return b;
  }, [scenarioId, revision, picked, reps, first, second]);

  useEffect(() => {
    let live = true;
    const h = setTimeout(() => {
      ok(api.POST('/api/experiments/plan', { body }))
        .then((p) => {
          if (!live) return;
          setPlan(p);
          setErrors([]);
        })
        .catch((e: unknown) => {
          if (!live) return;
          setPlan(undefined);
          setErrors(e instanceof ApiError && e.errors.length ? e.errors : [e instanceof Error ? e.message : String(e)]);
        });
    }, 250);
    return () => {
      live = false;
      clearTimeout(h);
    };
  }, [body]);

  async function submit() {
    setBusy(true);
    try {
      const out = await ok(api.POST('/api/experiments', { body, headers: { 'Idempotency-Key': key } }));
      navigate(`/experiments/${out.experiment.id}`);
    } catch (e) {
      setErrors(e instanceof ApiError && e.errors.length ? e.errors : [e instanceof Error ? e.message : String(e)]);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card" aria-labelledby={`${id}-t`}>
      <h3 id={`${id}-t`}>Run an experiment</h3>
      <fieldset className="group">
        <legend>Configurations to compare</legend>
        <div className="checks">
          {configurations.map((c) => (
            <label key={c} className="check">
              <input
                type="checkbox"
                checked={picked.includes(c)}
                onChange={(e) => {
                  setPicked(e.target.checked ? configurations.filter((x) => x === c || picked.includes(x)) : picked.filter((x) => x !== c));
                }}
              />{' '}
              {c}
            </label>
          ))}
        </div>
        <p className="field-help">The first one picked is the comparison's default baseline. The configurations a scenario can compare are its own: add more from the scheme catalogue (“Add a transport scheme”) or in the form.</p>
      </fieldset>
      <div className="fields">
        <SweepFields label="Sweep" dim={first} onChange={setFirst} />
        {pathOf(first) ? <SweepFields label="Second sweep" dim={second} onChange={setSecond} /> : null}
        <div className="field">
          <label htmlFor={`${id}-reps`}>Repetitions</label>
          <input
            id={`${id}-reps`}
            type="number"
            min={1}
            max={100}
            value={reps}
            onChange={(e) => {
              setReps(e.target.value);
            }}
          />
          <span className="field-help">1–100; each with seed + repetition (confidence intervals need ≥ 2)</span>
        </div>
      </div>
      {errors.length ? (
        <ErrorBox error={errors.join('\n')} title="Cannot submit this" />
      ) : plan ? (
        <p className="plan" role="status" aria-live="polite">
          <strong data-testid="plan-runs">{plan.estimate.runs} runs</strong> (revision {plan.revision}), estimated{' '}
          <strong data-testid="plan-estimate">{fmtDuration(plan.estimate.total_s)}</strong>{' '}
          <span className="muted">
            ({fmtDuration(plan.estimate.duration_s)} each + {fmtDuration(plan.estimate.overhead_s)} set-up, {plan.estimate.overhead_source})
          </span>
        </p>
      ) : (
        <p className="muted">Planning…</p>
      )}
      <button type="button" className="btn btn--primary" disabled={busy || !plan || errors.length > 0} onClick={() => void submit()}>
        {busy ? 'Submitting…' : plan ? `Submit ${plan.estimate.runs} runs` : 'Submit'}
      </button>
    </section>
  );
}
