import { describe, expect, it } from 'vitest';
import { configurationNames, configurationToAdd, describeHostSettings, planHostSettings, uniqueName } from './schemes.ts';

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

describe("a scheme's host settings", () => {
  const defaults = { sack: true, timestamps: true, ecn: 'passive' };

  it('writes a setting the scenario leaves to its default and says what changed', () => {
    const plan = planHostSettings({ timestamps: false }, { hosts: { servers: 1 } }, defaults);
    expect(plan).toEqual({ changes: [{ key: 'timestamps', from: true, to: false }], conflicts: [] });
    expect(describeHostSettings(plan, 'IP-ERN')).toEqual(['Set hosts.settings.timestamps: false (was true, the default), as “IP-ERN” needs.']);
  });

  it('changes nothing when the scenario or the default already has the value', () => {
    expect(planHostSettings({ sack: false }, { hosts: { settings: { sack: false } } }, defaults)).toEqual({ changes: [], conflicts: [] });
    expect(planHostSettings({ sack: true }, {}, defaults)).toEqual({ changes: [], conflicts: [] });
    expect(planHostSettings(undefined, {}, defaults)).toEqual({ changes: [], conflicts: [] });
  });

  it('never overwrites a different value the user set: a conflict, said so', () => {
    const sc = { hosts: { settings: { timestamps: true, ecn: 'on' } } };
    const plan = planHostSettings({ timestamps: false, sack: false }, sc, defaults);
    expect(plan.conflicts).toEqual([{ key: 'timestamps', current: true, wanted: false }]);
    expect(plan.changes).toEqual([{ key: 'sack', from: true, to: false }]);
    const words = describeHostSettings(plan, 'X');
    expect(words).toHaveLength(2);
    expect(words[1]).toMatch(/^Not changed: hosts\.settings\.timestamps is true in this scenario, but “X” needs false/);
  });
});
