// Shapes the OpenAPI spec cannot describe: the live events (Server-Sent Events, written from
// api/satlab/service/events.py and docs/emulator-contract.md GET /status) and the run document
// (free-form by design, docs/run-result.md). Results, comparisons and series are typed by the
// spec (client.ts).

export const METRICS = [
  'goodput_bps',
  'total_goodput_bps',
  'completion_s',
  'mean_fct_s',
  'retransmissions',
  'jain_fairness',
] as const;
export type Metric = (typeof METRICS)[number];

export interface LinkCounters {
  offered_packets?: number;
  delivered_packets?: number;
  delivered_bytes?: number;
  queue_drops?: number;
  frame_erasures?: number;
  erased_packets?: number;
  corrupted_packets?: number;
  reordered_packets?: number;
}

export interface DirectionStatus {
  direction: string;
  modcod: { id: number; name: string; efficiency: number; required_esn0_db: number } | null;
  esn0_db: number;
  attenuation_db: number;
  useful_rate_bps: number;
  delay_ms: number;
  ber: number;
  queue_packets: number;
  queue_bytes: number;
  counters: LinkCounters;
}

export interface EmulatorStatus {
  uptime_s?: number;
  forward?: DirectionStatus;
  return?: DirectionStatus;
}

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
  metrics: (EmulatorStatus & { tcp?: LiveTcpSample[] } & Record<string, unknown>) | null;
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
}
