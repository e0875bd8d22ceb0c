// Live link samples from the SSE run events: every heartbeat carries the emulator's status
// (docs/emulator-contract.md GET /status) and `tcp`, the newest TCP_INFO sample of each sender
// connection (api/satlab/service/control.py latest_tcp). Throughput is the delivered-bytes
// counter's increase between two heartbeats over the time between them. On a beam each sample
// also keeps every terminal's row (lib/terminals.ts).
import type { LiveTcpSample, RunEvent } from '../api/types.ts';
import { terminalRows, type TerminalRow } from './terminals.ts';

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
  /** each beam terminal's row at this heartbeat, by name (empty without a beam) */
  terminals: Record<string, TerminalRow>;
}

export interface LiveState {
  t0: number | undefined;
  lastBytes: number | undefined;
  lastT: number | undefined;
  samples: LiveSample[];
  /** every connection seen so far, in order of appearance (one chart series each) */
  conns: string[];
  /** every beam terminal seen so far, in the status's order */
  terminals: string[];
}

export function emptyLive(): LiveState {
  return { t0: undefined, lastBytes: undefined, lastT: undefined, samples: [], conns: [], terminals: [] };
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
    // A beam's delivered bytes are the whole carrier's: beside them its carrier's rate.
    usefulRateBps: fwd.carrier_useful_rate_bps ?? fwd.useful_rate_bps,
    modcod: fwd.modcod?.id ?? null,
    esn0Db: fwd.esn0_db,
    queuePackets: fwd.queue_packets,
    attenuationDb: fwd.attenuation_db,
    tcp: Object.fromEntries((ev.metrics?.tcp ?? []).map((c) => [connKey(c), c])),
    terminals: Object.fromEntries(terminalRows(ev.metrics).map((r) => [r.name, r])),
  };
  return {
    t0,
    lastBytes: bytes,
    lastT: at,
    samples: [...s.samples, sample],
    conns: withNew(s.conns, Object.keys(sample.tcp)),
    terminals: withNew(s.terminals, Object.keys(sample.terminals)),
  };
}

/** `seen` with the keys it lacks appended (the same array when none is new). */
function withNew(seen: string[], keys: string[]): string[] {
  const have = new Set(seen);
  const fresh = keys.filter((k) => !have.has(k));
  return fresh.length ? [...seen, ...fresh] : seen;
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

/** One chart series per terminal: `value` of its row in each sample (null where it had none). */
export function terminalColumn(s: LiveState, name: string, value: (r: TerminalRow) => number | null): (number | null)[] {
  return s.samples.map((x) => {
    const r = x.terminals[name];
    return r ? value(r) : null;
  });
}

/** The newest row of each terminal (the live table). */
export function latestTerminals(s: LiveState): TerminalRow[] {
  const last = s.samples[s.samples.length - 1];
  return last ? s.terminals.flatMap((k) => (last.terminals[k] ? [last.terminals[k]] : [])) : [];
}
