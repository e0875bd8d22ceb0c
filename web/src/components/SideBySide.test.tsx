import { strokes } from '../test/canvas.ts';
import { render, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { RunOut } from '../api/client.ts';
import { OVERLAY_METRICS, overlayGrid, overlayGroups, type OverlayMetric } from '../lib/overlay.ts';
import { PALETTE } from '../lib/palette.ts';
import { OverlayChart, type OverlayData } from './SideBySide.tsx';

function metric(key: string): OverlayMetric {
  const m = OVERLAY_METRICS.find((x) => x.key === key);
  if (!m) throw new Error(key);
  return m;
}

function bucket(t0: number, mean: number) {
  return { t0, t1: t0 + 1, n: 5, min: mean, max: mean, mean };
}

// The cross-validation scenario's two runs: the same fade on the built-in emulator and on OpenSAND.
const satlab = { id: 11, label: 'link.backend=satlab' };
const opensand = { id: 12, label: 'link.backend=opensand' };
const data: OverlayData = {
  hi: 4,
  buckets: 4,
  missing: [],
  lines: [
    { run: satlab, series: 'link.forward.modcod', buckets: [bucket(0, 13), bucket(1, 9), bucket(2, 9), bucket(3, 13)] },
    { run: opensand, series: 'link.forward.modcod', buckets: [bucket(0, 13), bucket(1, 13), bucket(2, 9), bucket(3, 13)] },
  ],
};

function run(id: number, configuration: string, sweep: RunOut['sweep_value'], repetition: number, state = 'succeeded'): RunOut {
  return { id, configuration, sweep_value: sweep, repetition, state } as RunOut;
}

describe('Time series side by side', () => {
  it('draws and labels one line per run on one chart', async () => {
    strokes.length = 0;
    const { container } = render(<OverlayChart data={data} metric={metric('modcod')} name="x" />);
    const labels = [...container.querySelectorAll('.u-legend .u-label')].map((e) => e.textContent);
    expect(labels).toEqual(['t (s)', 'link.backend=satlab (run #11)', 'link.backend=opensand (run #12)']);
    // each run's line stroked in its own colour through all four buckets
    await waitFor(() => {
      for (const colour of [PALETTE[0], PALETTE[1]]) expect(strokes.some((s) => s.style === colour && s.points >= 4)).toBe(true);
    });
    expect(container.querySelector('figure')).toHaveAttribute('aria-label', 'MODCOD (forward)');
  });

  it('puts bucket means on the shared grid, scaled, one line per TCP connection', () => {
    const lines = [
      { run: satlab, series: 'tcp.server:5201-40000.delivery_rate_bps', buckets: [bucket(0, 2e6), bucket(2, 4e6)] },
      { run: satlab, series: 'tcp.server:5202-40002.delivery_rate_bps', buckets: [bucket(1, 1e6)] },
      { run: opensand, series: 'tcp.server:5201-41000.delivery_rate_bps', buckets: [bucket(3, 3e6)] },
    ];
    const grid = overlayGrid(lines, metric('delivery'), 0, 4, 4);
    expect(grid.xs).toEqual([0.5, 1.5, 2.5, 3.5]);
    expect(grid.series.map((s) => s.label)).toEqual([
      'link.backend=satlab (run #11) server:5201-40000',
      'link.backend=satlab (run #11) server:5202-40002',
      'link.backend=opensand (run #12)',
    ]);
    expect(grid.series.map((s) => s.values)).toEqual([
      [2, null, 4, null],
      [null, 1, null, null],
      [null, null, null, 3],
    ]);
  });

  it('says which runs did not record the series', () => {
    const { getByTestId } = render(<OverlayChart data={{ ...data, missing: [opensand] }} metric={metric('queue')} name="x" />);
    expect(getByTestId('overlay-missing')).toHaveTextContent('Not recorded by link.backend=opensand (run #12).');
  });

  it('offers one run per configuration at each sweep point and one per sweep value of each configuration', () => {
    const runs = [
      run(1, 'cubic', 'satlab', 0),
      run(2, 'cubic', 'satlab', 1),
      run(3, 'cubic', 'opensand', 1),
      run(4, 'cubic', 'opensand', 0, 'failed'),
      run(5, 'bbr', 'satlab', 0),
    ];
    const groups = overlayGroups(runs, ['link.backend']);
    expect(groups.map((g) => [g.label, g.runs.map((r) => `${r.label}#${r.id}`)])).toEqual([
      ['every configuration at satlab', ['cubic#1', 'bbr#5']],
      ['every sweep value of cubic', ['satlab#1', 'opensand#3']],
      ['every configuration at opensand', ['cubic#3']],
      ['every sweep value of bbr', ['satlab#5']],
    ]);
    expect(overlayGroups([run(7, 'reno', null, 0), run(8, 'cubic', null, 0)], []).map((g) => g.label)).toEqual(['every configuration']);
  });
});
