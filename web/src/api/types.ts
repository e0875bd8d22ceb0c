// Shapes the OpenAPI spec cannot describe: the live events (Server-Sent Events, written from
// api/satlab/service/events.py, carrying the emulator's GET /status: records/status.ts) and the run document
// (free-form by design, docs/run-result.md). Results, comparisons and series are typed by the
// spec (client.ts).

import type { EmulatorStatus } from './records/status';

export const METRICS = [
  'goodput_bps',
  'total_goodput_bps',
  'completion_s',
  'mean_fct_s',
  'retransmissions',
  'jain_fairness',
] as const;
export type Metric = (typeof METRICS)[number];

// The emulator's status records are generated from its own schema (make schemas).
export type { DamaStatus, DirectionStatus, EmulatorStatus } from './records/status';

/** One sender connection's newest TCP_INFO sample in a heartbeat (`metrics.tcp[]`). */
export interface LiveTcpSample {
  host: string;
  sport: number;
  dport: number;
  cc: string | null;
  /** segments */
  cwnd: number | null;
  ssthresh: number | null;
  srtt_us: number | null;
  delivery_rate_bps: number | null;
  retrans_total: number | null;
  mss: number | null;
}

/** `event: run` data of the SSE endpoints. */
export interface RunEvent {
  id: number;
  run_id: number;
  experiment_id: number;
  at: string;
  state: string;
  progress: number;
  message: string;
  /** the emulator's status while running; the headline metrics at the end */
  metrics: (Partial<EmulatorStatus> & { tcp?: LiveTcpSample[] } & Record<string, unknown>) | null;
}

export interface RunDocument {
  schema?: string;
  scenario?: string;
  configuration?: string;
  status?: string;
  error?: string | null;
  wall_s?: number;
  setup_s?: number;
  seed?: number;
  sweep?: { path: string; value: number | string | null } | null;
  flows?: Record<string, unknown>[];
  hosts?: Record<string, Record<string, number>>;
  link_events?: Record<string, number>;
  inputs?: { scenario?: Record<string, unknown>; link?: Record<string, unknown>; versions?: Record<string, string> };
  /** with contention access on a DAMA return beam: each terminal's contention split at the end of the run */
  contention?: ContentionEntry[];
}

/** One return terminal's requests sent in contention slots over a run (`contention[]`, docs/run-result.md). */
export interface ContentionEntry {
  terminal: string;
  tries: number;
  successes: number;
  beam_collisions: number;
  background_collisions: number;
}
