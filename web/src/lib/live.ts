// Live link samples from the SSE run events: every heartbeat carries the emulator's status
// (docs/emulator-contract.md GET /status). Throughput is the delivered-bytes counter's increase
// between two heartbeats over the time between them.
import type { RunEvent } from '../api/types.ts';

export interface LiveSample {
  t: number;
  throughputBps: number | null;
  usefulRateBps: number;
  modcod: number | null;
  esn0Db: number;
  queuePackets: number;
  attenuationDb: number;
}

export interface LiveState {
  t0: number | undefined;
  lastBytes: number | undefined;
  lastT: number | undefined;
  samples: LiveSample[];
}

export function emptyLive(): LiveState {
  return { t0: undefined, lastBytes: undefined, lastT: undefined, samples: [] };
}

/** Adds one event to a run's live state (returns a new state; events without status are ignored). */
export function addLiveEvent(s: LiveState, ev: RunEvent): LiveState {
  const fwd = ev.metrics?.forward;
  if (!fwd || typeof fwd !== 'object' || typeof fwd.esn0_db !== 'number') return s;
  const at = Date.parse(ev.at) / 1000;
  const t0 = s.t0 ?? at;
  const bytes = fwd.counters.delivered_bytes;
  let thr: number | null = null;
  if (bytes !== undefined && s.lastBytes !== undefined && s.lastT !== undefined && at > s.lastT) {
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
  };
  return { t0, lastBytes: bytes ?? s.lastBytes, lastT: at, samples: [...s.samples, sample] };
}
