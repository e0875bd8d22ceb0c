import { describe, expect, it } from 'vitest';
import {
  attenuationAt,
  combinedEsN0Db,
  DEFAULT_BUDGET,
  implications,
  modcodById,
  parseAttenuationTrace,
  pickModcod,
  TraceError,
  usefulRateBps,
} from './modcod.ts';

describe('DVB-S2 algebra', () => {
  it('combines 20 dB + 20 dB into 16.99 dB', () => {
    expect(combinedEsN0Db(20, 20)).toBeCloseTo(16.99, 2);
  });

  it('gives the documented useful rates of 32APSK 9/10 at 40 Msym/s', () => {
    const m = modcodById(28);
    if (!m) throw new Error('no MODCOD 28');
    expect(usefulRateBps(m, 40e6, false) / 1e6).toBeCloseTo(178.12, 2);
    expect(usefulRateBps(m, 40e6, true) / 1e6).toBeCloseTo(174.27, 1);
    // what a real emulator reported at 2 Msym/s with pilots (GET /status useful_rate_bps)
    expect(usefulRateBps(m, 2e6, true)).toBeCloseTo(8713750.187434398, 3);
    // without pilots the rate is Rs x Table 13 efficiency
    expect(usefulRateBps(m, 40e6, false)).toBeCloseTo(40e6 * m.efficiency, -3);
  });

  it('picks the MODCODs the emulator documents (clear sky, 6 dB and 12 dB of rain)', () => {
    expect(pickModcod(combinedEsN0Db(20, 20)).id).toBe(28);
    expect(pickModcod(combinedEsN0Db(20, 14)).id).toBe(22);
    expect(pickModcod(combinedEsN0Db(20, 8)).id).toBe(13);
    // the literal rule: 11.0 dB -> 8PSK 9/10 (10.98) rather than 16APSK 3/4
    expect(pickModcod(11.0).id).toBe(17);
    // margin, and the most robust one below every threshold
    expect(pickModcod(16.5, 0.5).id).toBe(27);
    expect(pickModcod(-10).id).toBe(1);
  });
});

describe('attenuation traces', () => {
  const text = '# comment\n0 0\n50 0\n100 9 # peak\n150 0\n';

  it('parses and interpolates linearly, holding the last value', () => {
    const pts = parseAttenuationTrace(text);
    expect(pts).toHaveLength(4);
    expect(attenuationAt(pts, 75)).toBeCloseTo(4.5);
    expect(attenuationAt(pts, 100)).toBe(9);
    expect(attenuationAt(pts, 400)).toBe(0);
  });

  it('names the line of each problem', () => {
    expect(() => parseAttenuationTrace('0 0\n5 1\n5 2\nx\n')).toThrow(TraceError);
    try {
      parseAttenuationTrace('0 0\n5 1\n5 2\n');
    } catch (e) {
      expect((e as Error).message).toBe('line 3: tick 5 is not after the previous tick 5');
    }
  });

  it('derives Es/N0, MODCOD and rate per tick', () => {
    const pts = parseAttenuationTrace(text);
    const r = implications(pts, { ...DEFAULT_BUDGET, tickMs: 100, symbolRateBaud: 5e6, marginDb: 0.5 });
    expect(r.t).toHaveLength(151);
    expect(r.t[100]).toBeCloseTo(10);
    expect(r.modcod[0]).toBe(28);
    // 9 dB of rain: C/N_down 11 dB -> Es/N0 10.49 dB -> minus 0.5 dB margin -> 8PSK 5/6 (9.35)
    expect(r.esn0Db[100]).toBeCloseTo(10.49, 2);
    expect(r.modcod[100]).toBe(15);
    expect(r.rateBps[0]).toBeGreaterThan(r.rateBps[100] ?? Infinity);
  });
});
