import { strokes } from '../test/canvas.ts';
import { render, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { DirectionStatus, RunEvent } from '../api/types.ts';
import { addLiveEvent, emptyLive, latestTerminals, type LiveState } from '../lib/live.ts';
import { PALETTE } from '../lib/palette.ts';
import { finishedContention, terminalRows } from '../lib/terminals.ts';
import { ContentionTable, LiveTerminals } from './BeamTerminals.tsx';

const COUNTERS = {
  offered_packets: 0, delivered_packets: 0, delivered_bytes: 0, queue_drops: 0,
  frame_erasures: 0, erased_packets: 0, corrupted_packets: 0, reordered_packets: 0,
};

/** A return terminal's DAMA: its requests and grant, and its contention counters so far. */
interface Dama {
  rbdc: number;
  vbdc: number;
  kbps: number;
  /** contention tries, of which collisions, of which with another beam terminal (undefined: an emulator without the split) */
  contention?: [number, number, number | undefined];
}

function terminal(name: string, modcod: number, esn0: number, queued: number, granted?: Dama) {
  const [tries, collisions, beam] = granted?.contention ?? [0, 0, 0];
  return {
    name,
    modcod: { id: modcod, name: `M${String(modcod)}`, efficiency: 1, required_esn0_db: 1 },
    esn0_db: esn0,
    attenuation_db: 0,
    useful_rate_bps: 1e6,
    queue_packets: queued,
    queue_bytes: queued * 1500,
    frames: 0,
    sent_bytes: 0,
    counters: COUNTERS,
    ...(granted
      ? {
          dama: {
            superframe: 40, request_delay_superframes: 20, slot_bytes: 107,
            requested_rbdc_kbps: granted.rbdc, requested_vbdc_bytes: granted.vbdc, granted_slots: 4,
            granted_kbps: granted.kbps, cra_kbps: 64, rbdc_kbps: granted.kbps - 64, vbdc_kbps: 0, fca_kbps: 0,
            contention_attempts: tries, contention_collisions: collisions,
            ...(beam === undefined ? {} : { contention_beam_collisions: beam }),
          },
        }
      : {}),
  };
}

function direction(dir: 'forward' | 'return', terminals?: ReturnType<typeof terminal>[]): DirectionStatus {
  return {
    direction: dir, modcod: null, esn0_db: 15, attenuation_db: 0, useful_rate_bps: 8e6, delay_ms: 250,
    ber: 0, queue_packets: 0, queue_bytes: 0, counters: COUNTERS,
    ...(terminals ? { terminals } : {}),
  };
}

function ev(at: string, forward: DirectionStatus, ret: DirectionStatus): RunEvent {
  return { id: 1, run_id: 1, experiment_id: 1, at, state: 'running', progress: 0.5, message: '', metrics: { forward, return: ret } };
}

/**
 * Two terminals of a beam with a DAMA return beam: `clear` at 32APSK-class MODCOD 27, `rainy` at 9.
 * Their contention requests so far: clear tried 9 times and lost 4 (3 against rainy, 1 to the
 * background load), rainy tried 6 times and lost 3 (all against clear).
 */
function beamEvent(at: string, clearKbps: number, rainyKbps: number): RunEvent {
  return ev(
    at,
    direction('forward', [terminal('clear', 27, 16.2, 40), terminal('rainy', 9, 6.1, 3)]),
    direction('return', [
      terminal('clear', 7, 8, 0, { rbdc: 2048, vbdc: 0, kbps: clearKbps, contention: [9, 4, 3] }),
      terminal('rainy', 7, 8, 12, { rbdc: 512, vbdc: 30000, kbps: rainyKbps, contention: [6, 3, 3] }),
    ]),
  );
}

describe('beam terminals', () => {
  it('gives one row per terminal with its forward link and its return requests and grant', () => {
    const rows = terminalRows(beamEvent('2026-11-27T20:00:00Z', 1288, 322).metrics);
    expect(rows).toEqual([
      {
        name: 'clear', modcod: { id: 27, name: 'M27' }, esn0Db: 16.2, queuePackets: 40, returnQueuePackets: 0, requestedRbdcKbps: 2048, requestedVbdcBytes: 0, grantedKbps: 1288,
        contention: { tries: 9, successes: 5, beamCollisions: 3, backgroundCollisions: 1 },
      },
      {
        name: 'rainy', modcod: { id: 9, name: 'M9' }, esn0Db: 6.1, queuePackets: 3, returnQueuePackets: 12, requestedRbdcKbps: 512, requestedVbdcBytes: 30000, grantedKbps: 322,
        contention: { tries: 6, successes: 3, beamCollisions: 3, backgroundCollisions: 0 },
      },
    ]);
  });

  it('has no rows for a link without a beam, and no grant without DAMA', () => {
    expect(terminalRows(ev('2026-11-27T20:00:00Z', direction('forward'), direction('return')).metrics)).toEqual([]);
    const rows = terminalRows(ev('2026-11-27T20:00:00Z', direction('forward', [terminal('a', 13, 9, 0)]), direction('return')).metrics);
    expect(rows.map((r) => [r.name, r.grantedKbps, r.returnQueuePackets, r.contention])).toEqual([['a', null, null, null]]);
  });

  it('counts every collision as background load where the emulator does not split them', () => {
    const old = ev(
      '2026-11-27T20:00:00Z',
      direction('forward', [terminal('a', 13, 9, 0)]),
      direction('return', [terminal('a', 7, 8, 0, { rbdc: 0, vbdc: 0, kbps: 64, contention: [5, 2, undefined] })]),
    );
    expect(terminalRows(old.metrics)[0]?.contention).toEqual({ tries: 5, successes: 3, beamCollisions: 0, backgroundCollisions: 2 });
  });

  it('shows the newest row of each terminal in a table and draws its grant over the run', async () => {
    let live: LiveState = emptyLive();
    live = addLiveEvent(live, beamEvent('2026-11-27T20:00:00Z', 64, 64));
    live = addLiveEvent(live, beamEvent('2026-11-27T20:00:01Z', 1288, 322));
    expect(live.terminals).toEqual(['clear', 'rainy']);
    expect(latestTerminals(live).map((r) => r.grantedKbps)).toEqual([1288, 322]);
    strokes.length = 0;
    render(<LiveTerminals live={live} name="run-1-live" contention={false} />);
    const table = screen.getByTestId('beam-terminals');
    const heads = within(table).getAllByRole('columnheader').map((h) => h.textContent);
    expect(heads).toEqual([
      'Terminal', 'Forward MODCOD', 'Es/N0 (dB)', 'Forward queue (packets)', 'Granted (kbit/s)',
      'Requested RBDC (kbit/s)', 'Requested VBDC (bytes)', 'Return queue (packets)',
    ]);
    const rainy = within(screen.getByTestId('terminal-rainy')).getAllByRole('cell').map((c) => c.textContent);
    expect(rainy).toEqual(['M9 (9)', '6.1', '3', '322', '512', '30000', '12']);
    expect(within(screen.getByTestId('terminal-clear')).getByTestId('terminal-granted')).toHaveTextContent('1288');
    const granted = screen.getByRole('figure', { name: 'Granted return capacity per terminal (live)' });
    const labels = [...granted.querySelectorAll('.u-legend .u-label')].map((e) => e.textContent);
    expect(labels).toEqual(['t (s)', 'clear', 'rainy']);
    screen.getByRole('figure', { name: 'MODCOD per terminal (live)' });
    // the link has no contention access: its zero counts are not shown
    expect(screen.queryByTestId('beam-contention')).toBeNull();
    // each terminal's line drawn through both heartbeats on both charts (MODCOD and grant)
    await waitFor(() => {
      for (const colour of [PALETTE[0], PALETTE[1]]) expect(strokes.filter((s) => s.style === colour && s.points >= 2).length).toBeGreaterThanOrEqual(2);
    });
  });

  it('leaves the grant out of a beam without DAMA and draws nothing for a one-terminal run', () => {
    let live = addLiveEvent(emptyLive(), ev('2026-11-27T20:00:00Z', direction('forward', [terminal('a', 13, 9, 0)]), direction('return')));
    render(<LiveTerminals live={live} name="x" contention={true} />);
    expect(within(screen.getByTestId('beam-terminals')).getAllByRole('columnheader')).toHaveLength(4);
    expect(screen.queryByRole('figure', { name: /Granted/ })).toBeNull();
    // contention access needs DAMA: a beam without it has no split to show
    expect(screen.queryByTestId('beam-contention')).toBeNull();
    live = addLiveEvent(emptyLive(), ev('2026-11-27T20:00:00Z', direction('forward'), direction('return')));
    const { container } = render(<LiveTerminals live={live} name="y" contention={true} />);
    expect(container).toBeEmptyDOMElement();
  });

  it('shows each terminal\'s contention split so far where the link has contention access', () => {
    let live = addLiveEvent(emptyLive(), beamEvent('2026-11-27T20:00:00Z', 64, 64));
    live = addLiveEvent(live, beamEvent('2026-11-27T20:00:01Z', 1288, 322));
    render(<LiveTerminals live={live} name="run-2-live" contention={true} />);
    const table = screen.getByTestId('beam-contention');
    expect(within(table).getByText('Contention requests per terminal (so far)')).toBeTruthy();
    expect(within(table).getAllByRole('columnheader').map((h) => h.textContent)).toEqual([
      'Terminal', 'Tries', 'Successes', 'Collisions with beam terminals', 'Collisions with background load',
    ]);
    const cells = (name: string) => within(screen.getByTestId(`contention-${name}`)).getAllByRole('cell').map((c) => c.textContent);
    expect(cells('clear')).toEqual(['9', '5', '3', '1']);
    expect(cells('rainy')).toEqual(['6', '3', '3', '0']);
  });

  it('shows a finished run\'s final split from its result', () => {
    const rows = finishedContention([
      { terminal: 'clear', tries: 40, successes: 31, beam_collisions: 5, background_collisions: 4 },
      { terminal: 'rainy', tries: 12, successes: 7, beam_collisions: 5, background_collisions: 0 },
    ]);
    render(<ContentionTable rows={rows} caption="Contention requests per terminal (whole run)" />);
    const cells = (name: string) => within(screen.getByTestId(`contention-${name}`)).getAllByRole('cell').map((c) => c.textContent);
    expect(cells('clear')).toEqual(['40', '31', '5', '4']);
    expect(cells('rainy')).toEqual(['12', '7', '5', '0']);
  });
});
