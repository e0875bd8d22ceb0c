// Scenario editor: one YAML text behind a schema-driven form and a YAML view; saving creates the
// scenario or adds an immutable revision; the API's 422 lines show up under their fields.
import { useEffect, useMemo, useState } from 'react';
import { api, ApiError, canSubmit, ok, raw } from '../api/client.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, PageHead } from '../components/bits.tsx';
import { LinkFields } from '../components/LinkFields.tsx';
import { ObjectFields, type FormCtx } from '../components/SchemaForm.tsx';
import { DeleteScenario } from '../components/DeleteScenario.tsx';
import { SchemePicker } from '../components/SchemePicker.tsx';
import { SubmitPanel } from '../components/SubmitPanel.tsx';
import { TracePanel } from '../components/TracePanel.tsx';
import { BudgetPanel } from '../components/BudgetPanel.tsx';
import { fmtWhen } from '../lib/format.ts';
import { navigate, useRoute } from '../lib/router.ts';
import { groupErrors, schemaAt, type JsonSchema } from '../lib/schema.ts';
import { useAsync } from '../lib/useAsync.ts';
import { configurationToAdd, describeHostSettings, planHostSettings, type HostSettingConflict } from '../lib/schemes.ts';
import { appendInText, getIn, parseYaml, setInText, textEdits } from '../lib/yamlDoc.ts';
import quickstartFade from '../templates/quickstart-fade.txt?raw';
import quickstart from '../templates/quickstart.yaml?raw';

const BLANK = `version: 1
name: my-experiment
description: ""
duration_s: 30
link:
  forward:
    delay_ms: 250
  return:
    delay_ms: 250
traffic:
  - kind: bulk_tcp
    duration_s: 30
configurations:
  - name: cubic
    transport: {congestion_control: cubic}
`;

const TEMPLATES: Record<string, { yaml: string; files: Record<string, string> }> = {
  quickstart: { yaml: quickstart, files: { 'traces/quickstart-fade.txt': quickstartFade } },
  blank: { yaml: BLANK, files: {} },
};

/** The scenario schema's defaults of hosts.settings (what an unwritten setting is). */
function hostSettingDefaults(root: JsonSchema | undefined): Record<string, unknown> {
  const settings = root ? schemaAt(root, root, ['hosts', 'settings'])?.schema : undefined;
  return Object.fromEntries(Object.entries(settings?.properties ?? {}).map(([k, v]) => [k, root ? schemaAt(root, v, [])?.schema.default : undefined]));
}

export function ScenarioEditor({ idOrNew }: { idOrNew: string }) {
  const { who } = useAuth();
  const { query } = useRoute();
  const isNew = idOrNew === 'new';
  const id = isNew ? 0 : Number(idOrNew);
  const template = TEMPLATES[query.get('template') ?? 'quickstart'] ?? TEMPLATES.quickstart;
  const writable = canSubmit(who);
  const schema = useAsync(async () => (await (await raw('/api/scenario-schema')).json()) as JsonSchema, []);
  const scenario = useAsync(async () => (isNew ? undefined : ok(api.GET('/api/scenarios/{scenario_id}', { params: { path: { scenario_id: id } } }))), [id]);
  const revisions = useAsync(async () => (isNew ? [] : ok(api.GET('/api/scenarios/{scenario_id}/revisions', { params: { path: { scenario_id: id } } }))), [id]);
  const [revNo, setRevNo] = useState<number>();
  const [text, setText] = useState<string | undefined>(() => (isNew ? template?.yaml : undefined));
  const [saved, setSaved] = useState<string>();
  const [tab, setTab] = useState<'form' | 'yaml'>('form');
  const [serverErrors, setServerErrors] = useState<string[]>([]);
  const [message, setMessage] = useState<string>();
  // Host settings a scheme added from the catalogue needs but the scenario sets otherwise.
  const [conflicts, setConflicts] = useState<{ scheme: string; items: HostSettingConflict[] }>();
  const [busy, setBusy] = useState(false);
  /** the forward hops' clear-sky C/N the link budget gives, once computed (the trace preview's) */
  const [budgetCn, setBudgetCn] = useState<{ up: number; down: number }>();

  const latest = scenario.data?.latest?.number;
  const shownRev = revNo ?? latest;

  useEffect(() => {
    if (isNew || !shownRev) return;
    let live = true;
    raw(`/api/scenarios/${id}/yaml?revision=${shownRev}`)
      .then((r) => r.text())
      .then((t) => {
        if (!live) return;
        setText(t);
        setSaved(t);
        setServerErrors([]);
      })
      .catch((e: unknown) => {
        if (live) setMessage(e instanceof Error ? e.message : String(e));
      });
    return () => {
      live = false;
    };
  }, [isNew, id, shownRev, template]);

  const parsed = useMemo(() => (text === undefined ? undefined : parseYaml(text)), [text]);
  const errors = useMemo(() => groupErrors([...(parsed?.errors ?? []), ...serverErrors]), [parsed, serverErrors]);
  const readOnly = !writable || (shownRev !== undefined && latest !== undefined && shownRev !== latest);
  const dirty = text !== saved;

  function edit(fn: (t: string) => string) {
    if (text === undefined) return;
    try {
      setText(fn(text));
      setServerErrors([]);
    } catch (e) {
      setMessage(e instanceof Error ? e.message : String(e));
    }
  }

  const ctx: FormCtx | undefined =
    parsed?.data !== undefined && schema.data
      ? {
          root: schema.data,
          data: parsed.data,
          errors,
          readOnly,
          ...textEdits(edit),
        }
      : undefined;

  async function uploadTemplateFiles() {
    for (const [name, content] of Object.entries(isNew ? (template?.files ?? {}) : {})) {
      const have = await ok(api.GET('/api/files', { params: { query: { name } } }));
      if (have.items.some((f) => f.name === name)) continue;
      await ok(
        api.POST('/api/files', {
          params: { query: { name, kind: 'attenuation' } },
          body: content,
          bodySerializer: (b: unknown) => b as string,
          headers: { 'Content-Type': 'application/octet-stream' },
        }),
      );
    }
  }

  async function save() {
    if (text === undefined) return;
    setBusy(true);
    setMessage(undefined);
    setServerErrors([]);
    try {
      await uploadTemplateFiles();
      if (isNew) {
        const s = await ok(api.POST('/api/scenarios', { body: { yaml: text } }));
        navigate(`/scenarios/${s.id}`);
      } else {
        const r = await ok(api.POST('/api/scenarios/{scenario_id}/revisions', { params: { path: { scenario_id: id } }, body: { yaml: text } }));
        setMessage(`Saved as revision ${r.number}.`);
        setRevNo(undefined);
        scenario.reload();
        revisions.reload();
      }
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        setServerErrors(e.errors.length ? e.errors : [e.message]);
        setMessage('The service refused the scenario: see the messages next to the fields.');
      } else {
        setMessage(e instanceof Error ? e.message : String(e));
      }
    } finally {
      setBusy(false);
    }
  }

  const name = getIn(parsed?.data, ['name']);
  const spec = (scenario.data?.latest?.spec ?? {}) as { configurations?: { name: string }[]; repetitions?: number };
  const unplaced = errors[''] ?? [];
  const placedElsewhere = Object.entries(errors).filter(([k]) => k !== '').map(([k, v]) => `${k}: ${v.join('; ')}`);

  return (
    <div className="stack">
      <PageHead title={isNew ? 'New scenario' : `Scenario ${typeof name === 'string' ? name : scenario.data?.name ?? ''}`}>
        {!isNew && revisions.data && revisions.data.length > 0 ? (
          <label className="inline">
            Revision{' '}
            <select
              value={shownRev ?? ''}
              onChange={(e) => {
                setRevNo(Number(e.target.value));
              }}
            >
              {[...revisions.data].reverse().map((r) => (
                <option key={r.number} value={r.number}>
                  {r.number}
                  {r.number === latest ? ' (latest)' : ''} · {fmtWhen(r.created_at)}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        {!isNew && scenario.data && writable && (who.role === 'admin' || who.id === scenario.data.created_by) ? (
          <DeleteScenario id={id} name={scenario.data.name} />
        ) : null}
      </PageHead>
      <ErrorBox error={scenario.error ?? schema.error} title="Cannot load" />
      {!writable ? <p className="notice">You are signed in as a viewer: scenarios are read-only and you cannot submit experiments.</p> : null}
      {readOnly && writable ? <p className="notice">Older revisions are immutable. Pick the latest to edit; saving adds a new revision.</p> : null}
      <div className="tabs" role="tablist" aria-label="Editor view">
        {(['form', 'yaml'] as const).map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            id={`tab-${t}`}
            aria-selected={tab === t}
            aria-controls={`panel-${t}`}
            className={`tab${tab === t ? ' tab--active' : ''}`}
            onClick={() => {
              setTab(t);
            }}
          >
            {t === 'form' ? 'Form' : 'YAML'}
          </button>
        ))}
        {writable && !readOnly ? (
          <span className="tabs__actions">
            {dirty ? <span className="muted">unsaved changes</span> : null}
            <button type="button" className="btn btn--primary" disabled={busy || !dirty || (parsed?.errors.length ?? 0) > 0} onClick={() => void save()}>
              {busy ? 'Saving…' : isNew ? 'Create scenario' : 'Save as new revision'}
            </button>
          </span>
        ) : null}
      </div>
      {message ? <p className="notice" role="status">{message}</p> : null}
      {conflicts && !readOnly ? (
        <p className="notice" data-testid="host-settings-conflict">
          “{conflicts.scheme}” needs {conflicts.items.map((c) => `hosts.settings.${c.key}: ${JSON.stringify(c.wanted)}`).join(', ')}; this scenario keeps its own value.{' '}
          <button
            type="button"
            className="btn btn--small"
            onClick={() => {
              edit((t) => conflicts.items.reduce((out, c) => setInText(out, ['hosts', 'settings', c.key], c.wanted), t));
              setMessage(`Set ${conflicts.items.map((c) => `hosts.settings.${c.key}: ${JSON.stringify(c.wanted)}`).join(', ')} as “${conflicts.scheme}” needs.`);
              setConflicts(undefined);
            }}
          >
            Use the scheme’s values
          </button>
        </p>
      ) : null}
      {unplaced.length || (tab === 'yaml' && placedElsewhere.length) ? (
        <ErrorBox error={[...unplaced, ...(tab === 'yaml' ? placedElsewhere : [])].join('\n')} title="Problems" />
      ) : null}
      <div id={`panel-${tab}`} role="tabpanel" aria-labelledby={`tab-${tab}`} className="card">
        {tab === 'yaml' ? (
          <>
            <label htmlFor="yaml-text" className="visually-hidden">Scenario YAML</label>
            <textarea
              id="yaml-text"
              className="yaml"
              spellCheck={false}
              readOnly={readOnly}
              value={text ?? ''}
              rows={Math.min(40, Math.max(12, (text ?? '').split('\n').length + 1))}
              onChange={(e) => {
                setText(e.target.value);
                setServerErrors([]);
              }}
            />
          </>
        ) : ctx && schema.data ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
            }}
          >
            <ObjectFields ctx={ctx} path={[]} schema={schema.data} skip={['link', 'traffic', 'configurations', 'hosts', 'sweep', 'capture']} />
            <LinkFields ctx={ctx} />
            <ObjectFields ctx={ctx} path={[]} schema={{ ...schema.data, properties: { traffic: schema.data.properties?.traffic ?? {}, configurations: schema.data.properties?.configurations ?? {}, hosts: schema.data.properties?.hosts ?? {}, sweep: schema.data.properties?.sweep ?? {} } }} />
          </form>
        ) : parsed?.errors.length ? (
          <p>Fix the YAML syntax first (YAML tab).</p>
        ) : (
          <p className="muted">Loading…</p>
        )}
      </div>
      {text !== undefined && getIn(parsed?.data, ['link_budget']) ? <BudgetPanel yaml={text} onBudget={setBudgetCn} /> : null}
      {parsed?.data !== undefined ? (
        <TracePanel
          scenario={parsed.data}
          canUpload={writable}
          pending={isNew ? (template?.files ?? {}) : {}}
          clearSky={getIn(parsed.data, ['link_budget', 'forward']) ? budgetCn : undefined}
        />
      ) : null}
      {writable && !readOnly && parsed?.data !== undefined ? (
        <SchemePicker
          scenario={parsed.data}
          onAdd={(scheme) => {
            const plan = planHostSettings(scheme.host_settings, parsed.data, hostSettingDefaults(schema.data));
            edit((t) => {
              let out = appendInText(t, ['configurations'], configurationToAdd(scheme.configuration, parseYaml(t).data));
              for (const c of plan.changes) out = setInText(out, ['hosts', 'settings', c.key], c.to);
              return out;
            });
            setConflicts(plan.conflicts.length ? { scheme: scheme.label, items: plan.conflicts } : undefined);
            setMessage(
              [
                `Added configuration from “${scheme.label}”.`,
                ...describeHostSettings(plan, scheme.label),
                `${isNew ? 'Create the scenario' : 'Save as a new revision'} to submit with it.`,
              ].join(' '),
            );
          }}
        />
      ) : null}
      {!isNew && writable && scenario.data?.latest && !dirty ? (
        <SubmitPanel
          key={scenario.data.latest.number}
          scenarioId={id}
          revision={scenario.data.latest.number}
          configurations={(spec.configurations ?? []).map((c) => c.name)}
          repetitions={spec.repetitions ?? 1}
        />
      ) : !isNew && writable && dirty ? (
        <p className="notice">Save your changes to submit an experiment with them.</p>
      ) : null}
    </div>
  );
}
