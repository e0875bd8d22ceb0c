// A beam's terminals in the emulator's status (GET /status, carried by each heartbeat):
// `forward.terminals` has each terminal's MODCOD, Es/N0 and queue at the gateway,
// `return.terminals` (a return beam) each terminal's own queue and, with DAMA, its requests and
// grant in the current superframe, and its requests sent in contention slots so far. One row per
// terminal for the run view's table; a link without a beam has none, so the panel is absent from
// one-terminal runs.
import type { ContentionEntry, DamaStatus, DirectionStatus, EmulatorStatus } from '../api/types.ts';

/**
 * A terminal's requests sent in contention slots (slotted ALOHA), cumulative: the emulator's
 * `satlab_emulator_terminal_contention_*_total` counters. A collision is with another terminal of
 * the beam, or else met only the background load of terminals outside the emulated set.
 */
export interface ContentionSplit {
  tries: number;
  successes: number;
  beamCollisions: number;
  backgroundCollisions: number;
}

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
  /** return: its contention split; null without DAMA (zeros where the link has no contention access) */
  contention: ContentionSplit | null;
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
    contention: null,
  };
}

/** The split from the status's counters (an emulator without the beam/background split reports
 * no `contention_beam_collisions`: every collision then counts as background). */
export function contentionSplit(d: Pick<DamaStatus, 'contention_attempts' | 'contention_collisions' | 'contention_beam_collisions'>): ContentionSplit {
  const beam = d.contention_beam_collisions ?? 0;
  return {
    tries: d.contention_attempts,
    successes: d.contention_attempts - d.contention_collisions,
    beamCollisions: beam,
    backgroundCollisions: d.contention_collisions - beam,
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
      r.contention = contentionSplit(t.dama);
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

/** A terminal's contention split, for the run view's contention table. */
export interface ContentionRow {
  name: string;
  split: ContentionSplit;
}

/** The newest split of each terminal that has one (every terminal of a DAMA return beam). */
export function liveContention(rows: TerminalRow[]): ContentionRow[] {
  return rows.flatMap((r) => (r.contention ? [{ name: r.name, split: r.contention }] : []));
}

/** Each terminal's split at the end of a finished run (the run result's `contention[]`). */
export function finishedContention(entries: ContentionEntry[]): ContentionRow[] {
  return entries.map((e) => ({
    name: e.terminal,
    split: { tries: e.tries, successes: e.successes, beamCollisions: e.beam_collisions, backgroundCollisions: e.background_collisions },
  }));
}
