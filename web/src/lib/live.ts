// Live link samples from the SSE run events: every heartbeat carries the emulator's status
// (docs/emulator-contract.md GET /status) and `tcp`, the newest TCP_INFO sample of each sender
// connection (api/satlab/service/control.py latest_tcp). Throughput is the delivered-bytes
// counter's increase between two heartbeats over the time between them.
import type { LiveTcpSample, RunEvent } from '../api/types.ts';

/** A connection's key, the same as in the stored series names (`tcp.<key>.cwnd`). */
export function connKey(c: LiveTcpSample): string {
  return `${c.host}:${String(c.sport)}-${String(c.dport)}`;
}

export interface LiveSample {
  t: number;
  throughputBps: number | null;
  usefulRateBps: number;
  modcod: number | null;
  esn0Db: number;
  queuePackets: number;
  attenuationDb: number;
  /** TCP_INFO of each sender connection at this heartbeat, by connKey */
  tcp: Record<string, LiveTcpSample>;
}

export interface LiveState {
  t0: number | undefined;
  lastBytes: number | undefined;
  lastT: number | undefined;
  samples: LiveSample[];
  /** every connection seen so far, in order of appearance (one chart series each) */
  conns: string[];
}

export function emptyLive(): LiveState {
  return { t0: undefined, lastBytes: undefined, lastT: undefined, samples: [], conns: [] };
}

/** Adds one event to a run's live state (returns a new state; events without status are ignored). */
export function addLiveEvent(s: LiveState, ev: RunEvent): LiveState {
  const fwd = ev.metrics?.forward;
  if (!fwd || typeof fwd !== 'object' || typeof fwd.esn0_db !== 'number') return s;
  const at = Date.parse(ev.at) / 1000;
  const t0 = s.t0 ?? at;
  const bytes = fwd.counters.delivered_bytes;
  let thr: number | null = null;
  if (s.lastBytes !== undefined && s.lastT !== undefined && at > s.lastT) {
    thr = (8 * (bytes - s.lastBytes)) / (at - s.lastT);
  }
  const sample: LiveSample = {
    t: at - t0,
    throughputBps: thr,
    usefulRateBps: fwd.useful_rate_bps,
    modcod: fwd.modcod?.id ?? null,
    esn0Db: fwd.esn0_db,
    queuePackets: fwd.queue_packets,
    attenuationDb: fwd.attenuation_db,
    tcp: Object.fromEntries((ev.metrics?.tcp ?? []).map((c) => [connKey(c), c])),
  };
  const fresh = Object.keys(sample.tcp).filter((k) => !s.conns.includes(k));
  return {
    t0,
    lastBytes: bytes,
    lastT: at,
    samples: [...s.samples, sample],
    conns: fresh.length ? [...s.conns, ...fresh] : s.conns,
  };
}

/** One chart series per connection: `field` of each sample (null where the connection was not open). */
export function tcpColumn(s: LiveState, conn: string, field: 'cwnd' | 'srtt_us' | 'delivery_rate_bps'): (number | null)[] {
  return s.samples.map((x) => x.tcp[conn]?.[field] ?? null);
}

/** The newest TCP_INFO sample of each connection (for the "now" line under the charts). */
export function latestTcp(s: LiveState): LiveTcpSample[] {
  const last = s.samples[s.samples.length - 1];
  return last ? s.conns.flatMap((k) => (last.tcp[k] ? [last.tcp[k]] : [])) : [];
}
