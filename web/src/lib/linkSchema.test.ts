// The form helpers against the emulator's real link schema (api/satlab/link_schema.json, the
// output of `satlab-emulator --print-schema`), embedded the way the API embeds it.
import { describe, expect, it } from 'vitest';
import linkSchemaText from '../../../api/satlab/link_schema.json?raw';
import { applies, boundsText, checkValue, schemaAt, unitOf, unwrap, type JsonSchema } from './schema.ts';

const link = JSON.parse(linkSchemaText) as JsonSchema;
const root: JsonSchema = link; // its $refs point into its own $defs

function at(path: string[]): { schema: JsonSchema; nullable: boolean } {
  const got = schemaAt(root, link, path);
  if (!got) throw new Error(`no link field ${path.join('.')}`);
  return got;
}

function prop(obj: JsonSchema, key: string): JsonSchema {
  const p = obj.properties?.[key];
  if (!p) throw new Error(`no property ${key}`);
  return unwrap(root, p).schema;
}

describe('the link schema in the form', () => {
  it('finds a nested field with the bounds validate() checks, its unit and default', () => {
    const margin = at(['forward', 'acm', 'margin_db']);
    expect(margin.schema.maximum).toBe(20);
    expect(margin.schema.minimum).toBe(0);
    expect(margin.schema.default).toBe(0);
    expect(unitOf('margin_db', margin.schema)).toBe('dB');
    expect(checkValue(margin.schema, 20.5)).toBe('must be ≤ 20');
    expect(checkValue(margin.schema, 20)).toBeUndefined();
    const jitter = at(['return', 'reorder', 'jitter_ms']).schema;
    expect(boundsText(jitter)).toBe('≥ 0, ≤ 10000');
    const limit = at(['forward', 'queue', 'limit_bytes']).schema;
    expect(limit.maximum).toBe(2 ** 34);
    expect(checkValue(limit, 1.5)).toBe('must be a whole number');
    expect(unitOf('limit_bytes', limit)).toBe('bytes');
    // x-unit wins over the name: slope_db_per_tick is dB per tick, not dB
    expect(unitOf('slope_db_per_tick', at(['forward', 'downlink', 'attenuation', 'slope_db_per_tick']).schema)).toBe('dB/tick');
  });

  it('reads schemars nullable types and enums written as oneOf of consts', () => {
    const delay = at(['forward', 'delay_ms']);
    expect(delay.nullable).toBe(true);
    expect(delay.schema.type).toBe('number');
    expect(checkValue(delay.schema, undefined, delay.nullable)).toBeUndefined();
    expect(checkValue(delay.schema, 10001, delay.nullable)).toBe('must be ≤ 10000');
    const mode = at(['forward', 'acm', 'mode']).schema;
    expect(mode.enum).toEqual(['acm', 'ccm', 'vcm']);
    expect(mode.type).toBe('string');
    expect(checkValue(mode, 'xcm')).toBe('must be one of acm, ccm, vcm');
    const kind = at(['return', 'kind']);
    expect(kind.nullable).toBe(true);
    expect(kind.schema.enum).toEqual(['dvbs2', 'rcs2', 'fixed', 'dvbs2_waveform']);
    const model = unwrap(root, { $ref: '#/$defs/BitErrorModel' }).schema;
    expect(model.enum).toContain('gilbert_elliott');
  });

  it('shows the fields of the chosen kind only (x-when), and any field that has a value', () => {
    const att = at(['forward', 'downlink', 'attenuation']).schema;
    const field = (k: string) => prop(att, k);
    // the default type is constant
    expect(applies(root, att, field('value_db'), {}, undefined)).toBe(true);
    expect(applies(root, att, field('file'), {}, undefined)).toBe(false);
    expect(applies(root, att, field('file'), { type: 'file' }, undefined)).toBe(true);
    expect(applies(root, att, field('value_db'), { type: 'file' }, undefined)).toBe(false);
    expect(applies(root, att, field('period_ticks'), { type: 'triangular' }, undefined)).toBe(true);
    expect(applies(root, att, field('on_ticks'), { type: 'triangular' }, undefined)).toBe(false);
    expect(applies(root, att, field('value_db'), { type: 'file' }, 3)).toBe(true); // to clear it
    expect(applies(root, att, field('tick_ms'), { type: 'file' }, undefined)).toBe(true); // any kind
    const be = at(['forward', 'bit_errors']).schema;
    const ge = prop(be, 'mean_bad_bits');
    expect(applies(root, be, ge, { model: 'uniform' }, undefined)).toBe(false);
    expect(applies(root, be, ge, { model: 'gilbert_elliott' }, undefined)).toBe(true);
    const dir = at(['return']).schema;
    const rate = prop(dir, 'rate_bps');
    expect(applies(root, dir, rate, {}, undefined)).toBe(false);
    expect(applies(root, dir, rate, { kind: 'fixed' }, undefined)).toBe(true);
  });
});
