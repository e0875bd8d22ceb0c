import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { AggregateRow, MetricAggregate } from '../api/client.ts';
import { CompareChart, comparePoints } from './CompareChart.tsx';

function agg(mean: number | null, hw: number | null): MetricAggregate {
  return { mean, half_width: hw, n: 2, values: [] };
}

function row(configuration: string, sweep: AggregateRow['sweep_value'], mean: number, hw: number | null): AggregateRow {
  const none = agg(null, null);
  return {
    configuration,
    sweep_value: sweep,
    runs: 2,
    succeeded: 2,
    metrics: {
      goodput_bps: agg(mean, hw),
      total_goodput_bps: none,
      completion_s: none,
      mean_fct_s: none,
      retransmissions: none,
      jain_fairness: none,
    },
  };
}

describe('CompareChart', () => {
  it('computes the 95% band from the half width', () => {
    expect(comparePoints([row('cubic', 1e-6, 10e6, 1e6)], 'goodput_bps')).toEqual([
      { configuration: 'cubic', sweep: '1e-6', mean: 10e6, lo: 9e6, hi: 11e6, n: 2 },
    ]);
  });

  it('draws a line with a confidence band per configuration over the sweep', () => {
    const rows = [row('cubic', 1e-7, 20e6, 1e6), row('cubic', 1e-6, 10e6, 2e6), row('pep', 1e-7, 21e6, 1e6), row('pep', 1e-6, 18e6, null)];
    const { container } = render(<CompareChart rows={rows} metric="goodput_bps" sweepLabel="forward.bit_errors.ber" name="x" />);
    expect(container.querySelectorAll('polyline')).toHaveLength(2);
    expect(container.querySelectorAll('polygon')).toHaveLength(1); // pep has one interval only
    const dot = container.querySelector('circle[data-config="cubic"][data-sweep="1e-6"]');
    expect(dot?.getAttribute('data-value')).toBe('10000000');
    expect(dot?.textContent).toBe('cubic at 1e-6: 10.00 Mbit/s (95% CI 8.00 Mbit/s – 12.00 Mbit/s), n=2');
  });

  it('labels the points of a two-dimensional sweep by both values', () => {
    const paths = ['link.forward.bit_errors.ber', 'hosts.settings.rack'];
    const rows = [row('cubic', [1e-5, true], 8e6, 1e6), row('cubic', [1e-5, false], 6e6, 1e6), row('reno', [1e-5, true], 7e6, null), row('reno', [1e-5, false], 5e6, null)];
    expect(comparePoints(rows, 'goodput_bps', paths).map((p) => p.sweep)).toEqual(['ber=1e-5, rack=true', 'ber=1e-5, rack=false', 'ber=1e-5, rack=true', 'ber=1e-5, rack=false']);
    const { container, getByRole } = render(<CompareChart rows={rows} metric="goodput_bps" sweepLabel={paths.join(' × ')} sweepPaths={paths} name="x" />);
    expect(getByRole('img', { name: 'Goodput vs link.forward.bit_errors.ber × hosts.settings.rack' })).toBeInTheDocument();
    expect(container.querySelectorAll('polyline')).toHaveLength(2);
    const dot = container.querySelector('circle[data-config="reno"][data-sweep="ber=1e-5, rack=false"]');
    expect(dot?.getAttribute('data-value')).toBe('5000000');
  });

  it('draws bars with whiskers without a sweep', () => {
    const { container, getByRole } = render(
      <CompareChart rows={[row('cubic', null, 56422, 1000), row('reno', null, 49686, null)]} metric="goodput_bps" sweepLabel={undefined} name="x" />,
    );
    expect(getByRole('img', { name: 'Goodput per configuration' })).toBeInTheDocument();
    expect(container.querySelectorAll('rect[data-config]')).toHaveLength(2);
    expect(container.querySelector('rect[data-config="reno"]')?.getAttribute('data-value')).toBe('49686');
    expect(container.textContent).toContain('56.4 kbit/s');
  });
});
