// A beam's terminals in the emulator's status (GET /status, carried by each heartbeat):
// `forward.terminals` has each terminal's MODCOD, Es/N0 and queue at the gateway,
// `return.terminals` (a return beam) each terminal's own queue and, with DAMA, its requests and
// grant in the current superframe. One row per terminal for the run view's table; a link without
// a beam has none, so the panel is absent from one-terminal runs.
import type { DirectionStatus, EmulatorStatus } from '../api/types.ts';

export interface TerminalRow {
  name: string;
  /** forward: the MODCOD of the terminal's next frame (null on a fixed-rate carrier) */
  modcod: { id: number; name: string } | null;
  esn0Db: number | null;
  queuePackets: number | null;
  /** return: the terminal's own queue; null without a return beam */
  returnQueuePackets: number | null;
  /** return: DAMA requests and grant of the current superframe; null without DAMA */
  requestedRbdcKbps: number | null;
  requestedVbdcBytes: number | null;
  grantedKbps: number | null;
}

/** Charts draw at most this many terminals (one line each): more are unreadable, the table has all. */
export const MAX_CHART_TERMINALS = 20;

function emptyRow(name: string): TerminalRow {
  return {
    name,
    modcod: null,
    esn0Db: null,
    queuePackets: null,
    returnQueuePackets: null,
    requestedRbdcKbps: null,
    requestedVbdcBytes: null,
    grantedKbps: null,
  };
}

function terminalsOf(d: DirectionStatus | undefined): NonNullable<DirectionStatus['terminals']> {
  return d && typeof d === 'object' && Array.isArray(d.terminals) ? d.terminals : [];
}

/**
 * One row per terminal of the status, in the forward beam's configuration order (then any terminal
 * only the return link names); none for a link without a beam.
 */
export function terminalRows(status: Partial<EmulatorStatus> | null | undefined): TerminalRow[] {
  const rows = new Map<string, TerminalRow>();
  const row = (name: string) => {
    let r = rows.get(name);
    if (!r) {
      r = emptyRow(name);
      rows.set(name, r);
    }
    return r;
  };
  for (const t of terminalsOf(status?.forward)) {
    const r = row(t.name);
    r.modcod = t.modcod ? { id: t.modcod.id, name: t.modcod.name } : null;
    r.esn0Db = t.esn0_db;
    r.queuePackets = t.queue_packets;
  }
  for (const t of terminalsOf(status?.return)) {
    const r = row(t.name);
    r.returnQueuePackets = t.queue_packets;
    if (t.dama) {
      r.requestedRbdcKbps = t.dama.requested_rbdc_kbps;
      r.requestedVbdcBytes = t.dama.requested_vbdc_bytes;
      r.grantedKbps = t.dama.granted_kbps;
    }
  }
  return [...rows.values()];
}

/** Whether any terminal has a DAMA grant (a return beam with `return.dama`). */
export function hasDama(rows: TerminalRow[]): boolean {
  return rows.some((r) => r.grantedKbps !== null);
}

/** Whether the return link is a beam (its terminals' own queues). */
export function hasReturnBeam(rows: TerminalRow[]): boolean {
  return rows.some((r) => r.returnQueuePackets !== null);
}
