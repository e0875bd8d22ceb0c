import { describe, expect, it } from 'vitest';
import { configurationNames, configurationToAdd, describeChange, hostSettingsChanges, uniqueName } from './schemes.ts';

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

describe('host settings a scheme needs', () => {
  it('adds what the scenario leaves at the default, keeps what already matches', () => {
    const sc = { hosts: { settings: { sack: true, ecn: 'on' } } };
    const got = hostSettingsChanges(sc, { timestamps: false, ecn: 'on' });
    expect(got.added).toEqual([{ key: 'timestamps', from: undefined, to: false }]);
    expect(got.replaced).toEqual([]);
    expect(got.added.map(describeChange)).toEqual(['hosts.settings.timestamps: false']);
  });

  it('lists a value the scenario set explicitly apart, with before and after', () => {
    const got = hostSettingsChanges({ hosts: { settings: { sack: true } } }, { sack: false });
    expect(got.added).toEqual([]);
    expect(got.replaced).toEqual([{ key: 'sack', from: true, to: false }]);
    expect(got.replaced.map(describeChange)).toEqual(['hosts.settings.sack: true → false']);
  });

  it('copes with scenarios without hosts or settings and schemes without host settings', () => {
    expect(hostSettingsChanges({}, { timestamps: false }).added).toHaveLength(1);
    expect(hostSettingsChanges(undefined, undefined)).toEqual({ added: [], replaced: [] });
    expect(hostSettingsChanges({ hosts: 'junk' }, {})).toEqual({ added: [], replaced: [] });
  });
});
