// A form generated from the scenario JSON Schema. Values are read from the parsed YAML and every
// change is written back into the YAML text (lib/yamlDoc.ts), so the form and the YAML view are
// one document. Bounds from the schema are checked as you type; the API's 422 lines are shown
// under the field they name.
import { useId, useState } from 'react';
import { applies, boundsText, checkValue, deref, labelOf, pathKey, unitOf, unwrap, variantFor, type JsonSchema } from '../lib/schema.ts';
import { getIn, type Path } from '../lib/yamlDoc.ts';

export interface FormCtx {
  root: JsonSchema;
  data: unknown;
  errors: Record<string, string[]>;
  readOnly: boolean;
  set: (path: Path, value: unknown) => void;
  append: (path: Path, value: unknown) => void;
  remove: (path: Path) => void;
}

function scalarText(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

function FieldErrors({ id, msgs }: { id: string; msgs: string[] }) {
  if (!msgs.length) return null;
  return (
    <span id={id} className="field-error" role="alert">
      {msgs.join('; ')}
    </span>
  );
}

/** One scalar input: number, text, enum select or checkbox, with unit, bounds and errors. */
export function ScalarField({
  ctx,
  path,
  schema,
  nullable = false,
  label,
  unit,
  help,
}: {
  ctx: FormCtx;
  path: Path;
  schema: JsonSchema;
  nullable?: boolean;
  label?: string;
  unit?: string | undefined;
  help?: string | undefined;
}) {
  const id = useId();
  const key = String(path[path.length - 1]);
  const value = getIn(ctx.data, path);
  const [draft, setDraft] = useState<string | null>(null);
  const serverErrs = ctx.errors[pathKey(path)] ?? [];
  const typed = typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' ? value : undefined;
  const localErr = value === undefined ? undefined : checkValue(schema, value, nullable);
  const draftErr = draft !== null && draft.trim() !== '' && !Number.isFinite(Number(draft)) ? 'must be a number' : undefined;
  const msgs = [...(draftErr ? [draftErr] : localErr ? [localErr] : []), ...serverErrs];
  const u = unit ?? unitOf(key, schema);
  const bounds = boundsText(schema);
  const desc = [help ?? schema.description, bounds ? `range ${bounds}` : undefined, schema.default !== undefined && schema.default !== null && typeof schema.default !== 'object' ? `default ${scalarText(schema.default)}` : undefined]
    .filter(Boolean)
    .join(' · ');
  const errId = `${id}-err`;
  const descId = `${id}-desc`;
  const describedBy = [desc ? descId : '', msgs.length ? errId : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    disabled: ctx.readOnly,
    'aria-invalid': msgs.length ? true : undefined,
    'aria-describedby': describedBy,
  } as const;

  let input;
  if (schema.type === 'boolean') {
    input = (
      <input
        {...common}
        type="checkbox"
        checked={typed === undefined ? Boolean(schema.default) : Boolean(typed)}
        onChange={(e) => {
          ctx.set(path, e.target.checked);
        }}
      />
    );
  } else if (schema.enum) {
    input = (
      <select
        {...common}
        value={typed === undefined ? '' : String(typed)}
        onChange={(e) => {
          ctx.set(path, e.target.value === '' ? undefined : e.target.value);
        }}
      >
        <option value="">{schema.default !== undefined ? `(default: ${scalarText(schema.default)})` : '—'}</option>
        {schema.enum.map((v) => (
          <option key={String(v)} value={String(v)}>
            {String(v)}
          </option>
        ))}
      </select>
    );
  } else if (schema.type === 'number' || schema.type === 'integer') {
    input = (
      <input
        {...common}
        type="text"
        inputMode="decimal"
        value={draft ?? (typed === undefined ? '' : String(typed))}
        placeholder={schema.default !== undefined && schema.default !== null ? scalarText(schema.default) : ''}
        onChange={(e) => {
          const t = e.target.value;
          setDraft(t);
          if (t.trim() === '') ctx.set(path, undefined);
          else if (Number.isFinite(Number(t))) ctx.set(path, Number(t));
        }}
        onBlur={() => {
          setDraft(null);
        }}
      />
    );
  } else {
    const long = key === 'description';
    input = long ? (
      <textarea
        {...common}
        rows={3}
        value={typed === undefined ? '' : String(typed)}
        onChange={(e) => {
          ctx.set(path, e.target.value);
        }}
      />
    ) : (
      <input
        {...common}
        type="text"
        value={typed === undefined ? '' : String(typed)}
        placeholder={schema.default !== undefined && schema.default !== null ? scalarText(schema.default) : ''}
        onChange={(e) => {
          ctx.set(path, e.target.value === '' ? undefined : e.target.value);
        }}
      />
    );
  }
  return (
    <div className={`field${msgs.length ? ' field--error' : ''}`}>
      <label htmlFor={id}>
        {label ?? labelOf(key)}
        {u ? <span className="unit"> ({u})</span> : null}
      </label>
      {input}
      {desc ? (
        <span id={descId} className="field-help">
          {desc}
        </span>
      ) : null}
      <FieldErrors id={errId} msgs={msgs} />
    </div>
  );
}

function isScalarSchema(s: JsonSchema): boolean {
  return s.type === 'string' || s.type === 'number' || s.type === 'integer' || s.type === 'boolean' || Boolean(s.enum);
}

/** The fields of an object schema (properties in schema order). */
export function ObjectFields({ ctx, path, schema, skip = [] }: { ctx: FormCtx; path: Path; schema: JsonSchema; skip?: string[] }) {
  const props = Object.entries(schema.properties ?? {}).filter(([k]) => !skip.includes(k));
  const value = getIn(ctx.data, path);
  return (
    <div className="fields">
      {props.map(([k, raw]) => {
        const { schema: s, nullable } = unwrap(ctx.root, raw);
        const p = [...path, k];
        if (s.const !== undefined) return null;
        // A field of another kind (x-when: an attenuation file under `type: constant`) is hidden.
        if (!applies(ctx.root, schema, s, value, getIn(ctx.data, p))) return null;
        if (isScalarSchema(s)) return <ScalarField key={k} ctx={ctx} path={p} schema={s} nullable={nullable} />;
        if (s.type === 'array' && s.items && !isScalarSchema(unwrap(ctx.root, s.items).schema) && !s.items.anyOf) {
          return <ArrayField key={k} ctx={ctx} path={p} schema={s} />;
        }
        if (s.type === 'array') return <ListField key={k} ctx={ctx} path={p} schema={s} />;
        if (s.type === 'object' && s.properties) {
          return <NestedObject key={k} ctx={ctx} path={p} schema={s} nullable={nullable} />;
        }
        return null;
      })}
    </div>
  );
}

function NestedObject({ ctx, path, schema, nullable }: { ctx: FormCtx; path: Path; schema: JsonSchema; nullable: boolean }) {
  const present = getIn(ctx.data, path) !== undefined && getIn(ctx.data, path) !== null;
  const key = String(path[path.length - 1]);
  const errs = ctx.errors[pathKey(path)] ?? [];
  if (Array.isArray(getIn(ctx.data, path))) {
    return (
      <fieldset className="group">
        <legend>{labelOf(key)}</legend>
        <p className="field-help">A list ({(getIn(ctx.data, path) as unknown[]).length} items, e.g. a sweep of two dimensions): edit it in the YAML.</p>
        {errs.length ? <p className="field-error" role="alert">{errs.join('; ')}</p> : null}
      </fieldset>
    );
  }
  return (
    <fieldset className="group">
      <legend>{labelOf(key)}</legend>
      {schema.description ? <p className="field-help">{schema.description}</p> : null}
      {errs.length ? <p className="field-error" role="alert">{errs.join('; ')}</p> : null}
      {nullable && !present ? (
        <button
          type="button"
          className="btn btn--small"
          disabled={ctx.readOnly}
          onClick={() => {
            ctx.set(path, key === 'sweep' ? { path: 'forward.bit_errors.ber', values: [1e-7, 1e-6] } : {});
          }}
        >
          Add {labelOf(key).toLowerCase()}
        </button>
      ) : (
        <>
          <ObjectFields ctx={ctx} path={path} schema={schema} />
          {nullable ? (
            <button
              type="button"
              className="btn btn--small"
              disabled={ctx.readOnly}
              onClick={() => {
                ctx.set(path, undefined);
              }}
            >
              Remove {labelOf(key).toLowerCase()}
            </button>
          ) : null}
        </>
      )}
    </fieldset>
  );
}

/** A list of scalars (sweep values) edited as comma-separated text. */
function ListField({ ctx, path, schema }: { ctx: FormCtx; path: Path; schema: JsonSchema }) {
  const id = useId();
  const key = String(path[path.length - 1]);
  const value = getIn(ctx.data, path);
  const text = Array.isArray(value) ? value.map(String).join(', ') : '';
  const [draft, setDraft] = useState<string | null>(null);
  const errs = ctx.errors[pathKey(path)] ?? [];
  return (
    <div className={`field${errs.length ? ' field--error' : ''}`}>
      <label htmlFor={id}>{labelOf(key)}</label>
      <input
        id={id}
        type="text"
        disabled={ctx.readOnly}
        value={draft ?? text}
        aria-describedby={`${id}-desc`}
        onChange={(e) => {
          setDraft(e.target.value);
          const items = e.target.value
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean)
            .map((x) => (Number.isFinite(Number(x)) ? Number(x) : x));
          ctx.set(path, items);
        }}
        onBlur={() => {
          setDraft(null);
        }}
      />
      <span id={`${id}-desc`} className="field-help">
        comma-separated{schema.maxItems ? `, at most ${schema.maxItems}` : ''}
      </span>
      <FieldErrors id={`${id}-err`} msgs={errs} />
    </div>
  );
}

const NEW_ITEM: Record<string, unknown> = {
  traffic: { kind: 'bulk_tcp', direction: 'download', duration_s: 10 },
  configurations: { name: 'new', transport: { congestion_control: 'cubic' } },
  classes: { name: 'new' }, // a class with neither dscp nor flows is the queue's default class
};

/** What the add button of a list of objects adds, by the list's key. */
const ITEM_NAME: Record<string, string> = {
  traffic: 'a traffic item',
  configurations: 'a configuration',
  classes: 'a traffic class',
  flows: 'a flow rule',
};

/** A list of objects (traffic items, configurations), each with its own fields. */
function ArrayField({ ctx, path, schema }: { ctx: FormCtx; path: Path; schema: JsonSchema }) {
  const key = String(path[path.length - 1]);
  const items = getIn(ctx.data, path);
  const list = Array.isArray(items) ? (items as unknown[]) : [];
  const itemSchema = schema.items ?? {};
  const errs = ctx.errors[pathKey(path)] ?? [];
  return (
    <fieldset className="group">
      <legend>
        {labelOf(key)} <span className="muted">({list.length})</span>
      </legend>
      {errs.length ? <p className="field-error" role="alert">{errs.join('; ')}</p> : null}
      {list.map((item, i) => {
        const variant = variantFor(ctx.root, itemSchema, item) ?? deref(ctx.root, itemSchema);
        const kind = item && typeof item === 'object' ? (item as Record<string, unknown>).kind : undefined;
        const itemErrs = ctx.errors[pathKey([...path, i])] ?? [];
        const title =
          typeof kind === 'string'
            ? `${i + 1}. ${kind}`
            : `${i + 1}. ${scalarText((item as Record<string, unknown> | null)?.name)}`;
        return (
          <fieldset key={i} className="group group--item">
            <legend>{title}</legend>
            {itemErrs.length ? <p className="field-error" role="alert">{itemErrs.join('; ')}</p> : null}
            {itemSchema.discriminator ? (
              <div className="fields">
                <KindSelect ctx={ctx} path={[...path, i]} schema={itemSchema} value={typeof kind === 'string' ? kind : ''} />
              </div>
            ) : null}
            <ObjectFields ctx={ctx} path={[...path, i]} schema={variant} />
            <button
              type="button"
              className="btn btn--small"
              disabled={ctx.readOnly || list.length <= (schema.minItems ?? 0)}
              onClick={() => {
                ctx.remove([...path, i]);
              }}
            >
              Remove item {i + 1}
            </button>
          </fieldset>
        );
      })}
      <button
        type="button"
        className="btn btn--small"
        disabled={ctx.readOnly || list.length >= (schema.maxItems ?? Infinity)}
        onClick={() => {
          ctx.append(path, NEW_ITEM[key] ?? {});
        }}
      >
        Add {ITEM_NAME[key] ?? 'an item'}
      </button>
    </fieldset>
  );
}

function KindSelect({ ctx, path, schema, value }: { ctx: FormCtx; path: Path; schema: JsonSchema; value: string }) {
  const id = useId();
  const kinds = Object.keys(schema.discriminator?.mapping ?? {});
  return (
    <div className="field">
      <label htmlFor={id}>Kind</label>
      <select
        id={id}
        value={value}
        disabled={ctx.readOnly}
        onChange={(e) => {
          ctx.set([...path, 'kind'], e.target.value);
        }}
      >
        {kinds.map((k) => (
          <option key={k} value={k}>
            {k}
          </option>
        ))}
      </select>
    </div>
  );
}
