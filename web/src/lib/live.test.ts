import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../api/types.ts';
import { addLiveEvent, connKey, emptyLive, latestTcp, tcpColumn } from './live.ts';

/** `carrier`: a beam's carrier rate (the status's carrier_useful_rate_bps). */
function ev(at: string, bytes: number, modcod: number | null, carrier?: number): RunEvent {
  return {
    id: 1,
    run_id: 1,
    experiment_id: 1,
    at,
    state: 'running',
    progress: 0.5,
    message: '',
    metrics: {
      forward: {
        direction: 'forward',
        modcod: modcod === null ? null : { id: modcod, name: 'x', efficiency: 1, required_esn0_db: 1 },
        esn0_db: 12.5,
        attenuation_db: 3,
        useful_rate_bps: 8e6,
        ...(carrier === undefined ? {} : { carrier_useful_rate_bps: carrier }),
        delay_ms: 250,
        ber: 0,
        queue_packets: 17,
        queue_bytes: 100,
        counters: {
          offered_packets: 0, delivered_packets: 0, delivered_bytes: bytes, queue_drops: 0,
          frame_erasures: 0, erased_packets: 0, corrupted_packets: 0, reordered_packets: 0,
        },
      },
    },
  };
}

describe('live samples', () => {
  it('derives throughput from the delivered-bytes counter', () => {
    let s = emptyLive();
    s = addLiveEvent(s, ev('2026-11-22T06:18:27.000Z', 0, 28));
    s = addLiveEvent(s, ev('2026-11-22T06:18:29.000Z', 250_000, 22));
    expect(s.samples).toHaveLength(2);
    expect(s.samples[0]?.throughputBps).toBeNull();
    expect(s.samples[1]?.t).toBe(2);
    expect(s.samples[1]?.throughputBps).toBe(1_000_000);
    expect(s.samples[1]?.modcod).toBe(22);
    expect(s.samples[1]?.queuePackets).toBe(17);
  });

  it("shows a beam's carrier rate, not its first terminal's", () => {
    expect(addLiveEvent(emptyLive(), ev('2026-11-22T06:18:27.000Z', 0, 28)).samples[0]?.usefulRateBps).toBe(8e6);
    const s = addLiveEvent(emptyLive(), ev('2026-11-22T06:18:27.000Z', 0, 28, 21e6));
    expect(s.samples[0]?.usefulRateBps).toBe(21e6);
  });

  it('ignores events without the emulator status', () => {
    const s = emptyLive();
    expect(addLiveEvent(s, { ...ev('2026-11-22T06:18:27Z', 0, 1), metrics: null })).toBe(s);
    expect(addLiveEvent(s, { ...ev('2026-11-22T06:18:27Z', 0, 1), metrics: { goodput_bps: 5 } })).toBe(s);
  });

  it('keeps the TCP_INFO of each sender connection, one series per connection', () => {
    const tcp = (sport: number, cwnd: number) => ({
      host: 'srv1', sport, dport: 5001, cc: 'cubic', cwnd, ssthresh: 2147483647, srtt_us: 512_000,
      delivery_rate_bps: 2e6, retrans_total: 0, mss: 1448,
    });
    const withTcp = (at: string, conns: ReturnType<typeof tcp>[]): RunEvent => {
      const e = ev(at, 0, 28);
      return { ...e, metrics: { ...e.metrics, tcp: conns } };
    };
    let s = emptyLive();
    s = addLiveEvent(s, ev('2026-11-22T06:18:26.000Z', 0, 28));
    s = addLiveEvent(s, withTcp('2026-11-22T06:18:27.000Z', [tcp(40000, 10)]));
    s = addLiveEvent(s, withTcp('2026-11-22T06:18:28.000Z', [tcp(40000, 20), tcp(40002, 10)]));
    expect(s.conns).toEqual(['srv1:40000-5001', 'srv1:40002-5001']);
    expect(connKey(tcp(40000, 1))).toBe('srv1:40000-5001');
    expect(tcpColumn(s, 'srv1:40000-5001', 'cwnd')).toEqual([null, 10, 20]);
    expect(tcpColumn(s, 'srv1:40002-5001', 'cwnd')).toEqual([null, null, 10]);
    expect(latestTcp(s).map((c) => c.cwnd)).toEqual([20, 10]);
    expect(latestTcp(emptyLive())).toEqual([]);
  });
});
