import { describe, expect, it } from 'vitest';
import quickstart from '../templates/quickstart.yaml?raw';
import { appendInText, getIn, parseYaml, removeInText, roundTrip, setInText } from './yamlDoc.ts';

describe('YAML round trip', () => {
  it('gives back the quickstart text unchanged', () => {
    expect(parseYaml(quickstart).errors).toEqual([]);
    expect(roundTrip(quickstart)).toBe(quickstart);
  });

  it('changes one field and keeps every comment and the rest of the text', () => {
    const next = setInText(quickstart, ['duration_s'], 10);
    expect(getIn(parseYaml(next).data, ['duration_s'])).toBe(10);
    const before = quickstart.split('\n');
    const after = next.split('\n');
    expect(after).toHaveLength(before.length);
    const changed = after.filter((l, i) => l !== before[i]);
    expect(changed).toEqual(['duration_s: 10']);
    expect(next).toContain('# 5 Msym/s: about 21 Mbit/s useful at 32APSK 9/10');
  });

  it('edits inside flow maps in place', () => {
    const t = setInText(quickstart, ['link', 'forward', 'acm', 'margin_db'], 1.5);
    expect(getIn(parseYaml(t).data, ['link', 'forward', 'acm'])).toEqual({ refresh_ms: 100, margin_db: 1.5 });
    expect(t).toContain('    acm: {refresh_ms: 100, margin_db: 1.5}\n');
    expect(t).toContain('symbol_rate_baud: 5.0e6        # 5 Msym/s');
  });

  it('adds keys, list items and deletes, keeping comments', () => {
    let t = setInText(quickstart, ['hosts', 'clients'], 2);
    expect(getIn(parseYaml(t).data, ['hosts'])).toEqual({ clients: 2 });
    expect(t).toContain('# 5 Msym/s: about 21 Mbit/s useful at 32APSK 9/10');
    t = appendInText(t, ['configurations'], { name: 'vegas', transport: { congestion_control: 'vegas' } });
    expect((getIn(parseYaml(t).data, ['configurations']) as unknown[]).length).toBe(4);
    t = removeInText(t, ['configurations', 1]);
    expect(getIn(parseYaml(t).data, ['configurations', 1, 'name'])).toBe('bbr');
    t = setInText(t, ['sweep'], { path: 'forward.bit_errors.ber', values: [1e-7, 1e-6] });
    expect(getIn(parseYaml(t).data, ['sweep', 'values'])).toEqual([1e-7, 1e-6]);
    t = setInText(t, ['sweep'], undefined);
    expect(getIn(parseYaml(t).data, ['sweep'])).toBeUndefined();
  });

  it('reports syntax errors with their line', () => {
    const { errors, data } = parseYaml('name: x\nlink: [1, 2\n');
    expect(data).toBeUndefined();
    expect(errors[0]).toMatch(/^line \d+: /);
  });
});

describe('structural edits in place', () => {
  it('removes, adds and appends without touching other lines', () => {
    let t = removeInText(quickstart, ['configurations', 2]);
    expect(t).toBe(quickstart.replace('  - name: bbr\n    transport: {congestion_control: bbr}\n', ''));
    t = setInText(t, ['traffic', 0, 'bytes'], 1000);
    expect(t).toContain('    duration_s: 25\n    bytes: 1000\n');
    t = setInText(t, ['traffic', 0, 'bytes'], undefined);
    t = appendInText(t, ['configurations'], { name: 'vegas', transport: { congestion_control: 'vegas' } });
    expect(t).toContain('  - name: reno\n    transport: {congestion_control: reno}\n  - name: vegas\n    transport:\n      congestion_control: vegas\n');
    t = setInText(t, ['hosts', 'clients'], 2);
    expect(t.endsWith('hosts:\n  clients: 2\n')).toBe(true);
    t = setInText(t, ['link', 'return', 'delay_ms'], undefined);
    // every line of the original that was not edited is still there, spelled the same
    expect(t).toContain('    symbol_rate_baud: 5.0e6        # 5 Msym/s: about 21 Mbit/s useful at 32APSK 9/10\n');
    expect(t).toContain('    rate_bps: 5.0e6\n');
    expect(t).toContain('description: >\n  One client behind a satellite terminal downloads from one server over a transparent GEO link\n');
    expect(getIn(parseYaml(t).data, ['link', 'return'])).toEqual({ kind: 'fixed', rate_bps: 5e6 });
  });
});
