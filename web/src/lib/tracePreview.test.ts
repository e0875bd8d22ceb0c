import { describe, expect, it } from 'vitest';
import { budgetOf, summarize, type PreviewOut } from './tracePreview.ts';

const M15 = {
  id: 15,
  name: '8PSK 5/6',
  modulation: '8PSK',
  rate: '5/6',
  efficiency: 2.478562,
  esn0_db: 9.35,
  useful_bits_per_frame: 53760,
  frame_symbols_pilots: 22194,
  frame_symbols_no_pilots: 21690,
};
const M28 = { ...M15, id: 28, name: '32APSK 9/10', modulation: '32APSK', rate: '9/10', esn0_db: 16.05 };

describe('trace preview requests', () => {
  it('reads the forward link of a scenario, with the defaults where unset', () => {
    const sc = {
      link: {
        forward: {
          symbol_rate_baud: 5e6,
          pilots: false,
          acm: { refresh_ms: 20, margin_db: 0.5 },
          downlink: { clear_sky_db: 18 },
        },
      },
    };
    expect(budgetOf(sc)).toEqual({
      tick_ms: 20,
      symbol_rate_baud: 5e6,
      clear_sky_up_db: 20,
      clear_sky_down_db: 18,
      margin_db: 0.5,
      pilots: false,
      table: 'dvbs2',
    });
    expect(budgetOf({})).toMatchObject({ tick_ms: 1000, symbol_rate_baud: 40e6, pilots: true });
    expect(budgetOf({ link: { forward: { modcod_set: 'dvbs2x' } } }).table).toBe('dvbs2x');
  });
});

describe('trace preview answers', () => {
  it('summarises the deepest fade and the MODCOD and rate it leaves', () => {
    const p: PreviewOut = {
      modcods: [M15, M28],
      t_s: [0, 1, 2],
      attenuation_db: [0, 9, 0],
      esn0_db: [16.99, 10.49, 16.99],
      modcod: [28, 15, 28],
      rate_bps: [21.7e6, 12.3e6, 21.7e6],
    };
    const s = summarize(p);
    expect(s.deepestDb).toBe(9);
    expect(s.worst?.name).toBe('8PSK 5/6');
    expect(s.minRateBps).toBe(12.3e6);
    expect(s.clearSkyRateBps).toBe(21.7e6);
  });
});
