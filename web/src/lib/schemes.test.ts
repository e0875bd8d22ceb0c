import { describe, expect, it } from 'vitest';
import { configurationNames, configurationToAdd, uniqueName } from './schemes.ts';

describe('adding a scheme to a scenario', () => {
  it('keeps a free name and numbers a taken one', () => {
    expect(uniqueName('bbr', ['cubic', 'reno'])).toBe('bbr');
    expect(uniqueName('bbr', ['bbr'])).toBe('bbr-2');
    expect(uniqueName('bbr', ['bbr', 'bbr-2'])).toBe('bbr-3');
  });

  it('shortens a long name so that the suffix fits the 40-character limit', () => {
    const long = 'x'.repeat(40);
    const got = uniqueName(long, [long]);
    expect(got).toHaveLength(40);
    expect(got.endsWith('-2')).toBe(true);
  });

  it('reads the names of the scenario being edited and renames the copy', () => {
    const sc = { configurations: [{ name: 'cubic' }, { name: 'reno', transport: {} }, 'junk'] };
    expect(configurationNames(sc)).toEqual(['cubic', 'reno']);
    expect(configurationNames(undefined)).toEqual([]);
    expect(configurationNames({ configurations: 3 })).toEqual([]);
    const cfg = { name: 'cubic', transport: { congestion_control: 'cubic' } };
    expect(configurationToAdd(cfg, sc)).toEqual({ name: 'cubic-2', transport: { congestion_control: 'cubic' } });
    expect(configurationToAdd(cfg, {})).toEqual(cfg);
  });
});
