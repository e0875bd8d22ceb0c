// Helpers for the form driven by the scenario JSON Schema (GET /api/scenario-schema: pydantic's
// output, with `link` the emulator's own schema from schemars, `satlab-emulator --print-schema`):
// $ref resolution, nullable unions (pydantic's anyOf and schemars' `type: [X, "null"]`), enums
// written as `oneOf` of consts, bounds, units (`x-unit`, else from field names), fields used only
// under one kind (`x-when`), and the API's 422 `field: reason` lines mapped onto form fields.

export interface JsonSchema {
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  const?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  discriminator?: { propertyName: string; mapping?: Record<string, string> };
  examples?: unknown[];
  /** Unit of a number (the link schema). */
  'x-unit'?: string;
  /** The field is used only when each named sibling has one of the listed values. */
  'x-when'?: Record<string, unknown[]>;
  /** Properties the testbed runner sets per run (the form leaves them out). */
  'x-set-by-runner'?: string[];
}

export function deref(root: JsonSchema, s: JsonSchema): JsonSchema {
  let cur = s;
  for (let i = 0; i < 20 && cur.$ref; i++) {
    const name = cur.$ref.replace(/^#\/\$defs\//, '');
    const target = root.$defs?.[name];
    if (!target) throw new Error(`unresolved ${cur.$ref}`);
    const rest: JsonSchema = { ...cur };
    delete rest.$ref;
    cur = { ...target, ...rest };
  }
  return cur;
}

/** `oneOf` of `{const}` (schemars' enum with a description per value) -> `enum`. */
function constsToEnum(s: JsonSchema): JsonSchema {
  if (!s.oneOf?.length || !s.oneOf.every((v) => v.const !== undefined)) return s;
  const out: JsonSchema = { ...s, enum: s.oneOf.map((v) => v.const) };
  delete out.oneOf;
  const types = [...new Set(s.oneOf.map((v) => v.type).filter((t) => typeof t === 'string'))];
  const [only] = types;
  if (types.length === 1 && only) out.type = only;
  return out;
}

/** `anyOf: [X, {type: null}]` or `type: [X, "null"]` -> X, nullable; enums as `enum`. */
export function unwrap(root: JsonSchema, s: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const d = deref(root, s);
  if (Array.isArray(d.type)) {
    const others = d.type.filter((t) => t !== 'null');
    if (others.length === 1 && others[0]) return { schema: constsToEnum({ ...d, type: others[0] }), nullable: others.length < d.type.length };
  }
  if (d.anyOf) {
    const others = d.anyOf.filter((x) => x.type !== 'null');
    // "One, or a list of them" (the scenario's sweep of one or two dimensions): the form edits
    // the one; a list is left to the YAML view (NestedObject says so).
    const one = others[0];
    const orList = one !== undefined && others.length === 2 && others[1]?.type === 'array' && JSON.stringify(others[1].items) === JSON.stringify(one);
    if ((others.length === 1 || orList) && one) {
      const rest: JsonSchema = { ...d };
      delete rest.anyOf;
      return { schema: constsToEnum({ ...deref(root, one), ...rest }), nullable: others.length < d.anyOf.length };
    }
  }
  return { schema: constsToEnum(d), nullable: false };
}

/** The schema of a property path below an object schema (through $ref and nullable unions). */
export function schemaAt(root: JsonSchema, s: JsonSchema, path: readonly string[]): { schema: JsonSchema; nullable: boolean } | undefined {
  let cur = unwrap(root, s);
  for (const key of path) {
    const next = cur.schema.properties?.[key];
    if (!next) return undefined;
    cur = unwrap(root, next);
  }
  return cur;
}

/** Whether a field with `x-when` applies, given its object's value and the object's schema (a
 * sibling left out takes its default). A field that has a value is always shown, so that it can
 * be seen and cleared. */
export function applies(root: JsonSchema, objectSchema: JsonSchema, field: JsonSchema, objectValue: unknown, fieldValue: unknown): boolean {
  const when = field['x-when'];
  if (!when || fieldValue !== undefined) return true;
  const obj = objectValue && typeof objectValue === 'object' ? (objectValue as Record<string, unknown>) : {};
  return Object.entries(when).every(([sibling, allowed]) => {
    const sib = objectSchema.properties?.[sibling];
    const v = obj[sibling] ?? (sib ? unwrap(root, sib).schema.default : undefined);
    return allowed.includes(v);
  });
}

/** The variant of a discriminated union that matches an item (by its discriminator value). */
export function variantFor(root: JsonSchema, s: JsonSchema, item: unknown): JsonSchema | undefined {
  const disc = s.discriminator;
  if (!disc || !s.oneOf) return undefined;
  const tag = item && typeof item === 'object' ? (item as Record<string, unknown>)[disc.propertyName] : undefined;
  const ref = typeof tag === 'string' ? disc.mapping?.[tag] : undefined;
  return ref ? deref(root, { $ref: ref }) : undefined;
}

const UNITS: readonly [RegExp, string][] = [
  [/_ms$/, 'ms'],
  [/_s$/, 's'],
  [/_bps$/, 'bit/s'],
  [/_baud$/, 'Bd'],
  [/_bytes$/, 'bytes'],
  [/_db$/, 'dB'],
  [/_packets$/, 'packets'],
  [/_bits$/, 'bits'],
  [/_deg$/, '°'],
  [/_k$/, 'K'],
  [/_m$/, 'm'],
  [/_ticks$/, 'ticks'],
];

/** The unit of a field: the schema's `x-unit`, else from its name's suffix. */
export function unitOf(key: string, s?: JsonSchema): string | undefined {
  return s?.['x-unit'] ?? UNITS.find(([re]) => re.test(key))?.[1];
}

/** "sample_period_ms" -> "Sample period". */
export function labelOf(key: string): string {
  const base = key.replace(/_(ms|s|bps|baud|bytes|db|packets|bits|deg|k|m|ticks)$/, '').replace(/_/g, ' ');
  return base.charAt(0).toUpperCase() + base.slice(1);
}

export function boundsText(s: JsonSchema): string | undefined {
  const lo = s.minimum !== undefined ? `≥ ${s.minimum}` : s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}` : '';
  const hi = s.maximum !== undefined ? `≤ ${s.maximum}` : s.exclusiveMaximum !== undefined ? `< ${s.exclusiveMaximum}` : '';
  const parts = [lo, hi].filter(Boolean);
  return parts.length ? parts.join(', ') : undefined;
}

/** The reason a value breaks its schema (type, bounds, enum, pattern), or undefined. */
export function checkValue(s: JsonSchema, value: unknown, nullable = false): string | undefined {
  if (value === undefined || value === null) return nullable || s.default !== undefined ? undefined : 'required';
  if (s.type === 'integer' || s.type === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
    if (s.type === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
    if (s.minimum !== undefined && value < s.minimum) return `must be ≥ ${s.minimum}`;
    if (s.maximum !== undefined && value > s.maximum) return `must be ≤ ${s.maximum}`;
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) return `must be > ${s.exclusiveMinimum}`;
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) return `must be < ${s.exclusiveMaximum}`;
  }
  if (s.type === 'string') {
    if (typeof value !== 'string') return 'must be text';
    if (s.pattern && !new RegExp(s.pattern).test(value)) return `must match ${s.pattern}`;
  }
  if (s.enum && !s.enum.includes(value)) return `must be one of ${s.enum.map(String).join(', ')}`;
  return undefined;
}

const TAGS = new Set(['bulk_tcp', 'short_flows', 'udp_cbr', 'udp_onoff']);

/** The API's `field: reason` lines by field path ("traffic.0.duration_s"); lines without a field
 * (or `(scenario)`, `line N`) go under "". Union tags in pydantic locations are dropped. */
export function groupErrors(lines: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of lines) {
    const m = /^([A-Za-z_][\w.]*|\(\w+\)): (.*)$/s.exec(line);
    let key = '';
    let reason = line;
    if (m?.[1] && m[2] !== undefined && !m[1].startsWith('(')) {
      key = m[1]
        .split('.')
        .filter((p) => !TAGS.has(p))
        .join('.');
      reason = m[2].replace(/^Value error, /, '');
      // The emulator's own check of the link (`--check` on save) names a field of the link.
      const emu = key === 'link' ? /^(?:satlab-emulator: )?invalid configuration: ([a-z_][\w.]*): (.*)$/s.exec(reason) : null;
      if (emu?.[1] && emu[2] !== undefined) {
        key = `link.${emu[1]}`;
        reason = emu[2];
      }
    }
    (out[key] ??= []).push(reason);
  }
  return out;
}

export function pathKey(path: readonly (string | number)[]): string {
  return path.join('.');
}
