import { describe, expect, it } from 'vitest';
import { boundsText, checkValue, deref, groupErrors, labelOf, unitOf, unwrap, variantFor, type JsonSchema } from './schema.ts';

const root: JsonSchema = {
  $defs: {
    Sweep: { type: 'object', properties: { path: { type: 'string', pattern: '^[a-z_][a-z0-9_.]*$' } } },
    Bulk: { type: 'object', properties: { kind: { const: 'bulk_tcp' } } },
  },
};

describe('schema helpers', () => {
  it('resolves refs and nullable unions', () => {
    expect(deref(root, { $ref: '#/$defs/Sweep' }).type).toBe('object');
    const u = unwrap(root, { anyOf: [{ $ref: '#/$defs/Sweep' }, { type: 'null' }], default: null });
    expect(u.nullable).toBe(true);
    expect(u.schema.properties?.path?.type).toBe('string');
    expect(u.schema.default).toBeNull();
    const union: JsonSchema = {
      oneOf: [{ $ref: '#/$defs/Bulk' }],
      discriminator: { propertyName: 'kind', mapping: { bulk_tcp: '#/$defs/Bulk' } },
    };
    expect(variantFor(root, union, { kind: 'bulk_tcp' })?.properties?.kind?.const).toBe('bulk_tcp');
    expect(variantFor(root, union, { kind: 'nope' })).toBeUndefined();
  });

  it('edits one of "one, or a list of them" (a sweep of one or two dimensions)', () => {
    const sweep = { $ref: '#/$defs/Sweep' };
    const u = unwrap(root, { anyOf: [sweep, { type: 'array', items: sweep, maxItems: 2 }, { type: 'null' }] });
    expect(u.nullable).toBe(true);
    expect(u.schema.properties?.path?.type).toBe('string');
  });

  it('derives units and labels from field names', () => {
    expect(unitOf('sample_period_ms')).toBe('ms');
    expect(unitOf('duration_s')).toBe('s');
    expect(unitOf('symbol_rate_baud')).toBe('Bd');
    expect(unitOf('mean_size_bytes')).toBe('bytes');
    expect(unitOf('seed')).toBeUndefined();
    expect(labelOf('sample_period_ms')).toBe('Sample period');
  });

  it('checks bounds, types and patterns', () => {
    const dur: JsonSchema = { type: 'number', exclusiveMinimum: 0, maximum: 3600, default: 30 };
    expect(boundsText(dur)).toBe('> 0, ≤ 3600');
    expect(checkValue(dur, 0)).toBe('must be > 0');
    expect(checkValue(dur, 4000)).toBe('must be ≤ 3600');
    expect(checkValue(dur, 12)).toBeUndefined();
    expect(checkValue({ type: 'integer', minimum: 1 }, 1.5)).toBe('must be a whole number');
    expect(checkValue({ type: 'string', pattern: '^[a-z]+$' }, 'A b')).toBe('must match ^[a-z]+$');
    expect(checkValue({ type: 'string' }, undefined)).toBe('required');
  });

  it('maps the API 422 lines onto fields', () => {
    expect(
      groupErrors([
        'traffic.0.bulk_tcp.duration_s: Input should be less than or equal to 3600',
        'traffic.0.bulk_tcp: Value error, give exactly one of bytes or duration_s',
        'duration_s: Input should be greater than 0',
        'line 3: mapping values are not allowed here',
        '(scenario): Field required',
      ]),
    ).toEqual({
      'traffic.0.duration_s': ['Input should be less than or equal to 3600'],
      'traffic.0': ['give exactly one of bytes or duration_s'],
      duration_s: ['Input should be greater than 0'],
      '': ['line 3: mapping values are not allowed here', '(scenario): Field required'],
    });
  });

  it("puts the emulator's check of the link under the link field it names", () => {
    expect(
      groupErrors([
        'link: satlab-emulator: invalid configuration: forward.acm.modcod: required when acm.mode is ccm (a MODCOD id of the table)',
        'link: satlab-emulator: invalid configuration: traces/x.txt:3: not a number',
      ]),
    ).toEqual({
      'link.forward.acm.modcod': ['required when acm.mode is ccm (a MODCOD id of the table)'],
      link: ['satlab-emulator: invalid configuration: traces/x.txt:3: not a number'],
    });
  });
});
