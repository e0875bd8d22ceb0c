import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { beforeEach, describe, expect, it, vi } from 'vitest';

import { BudgetPanel } from './BudgetPanel.tsx';
import { traceText, WeatherForm } from './WeatherForm.tsx';

// fetch is the boundary between the UI and the service (installed before the client loads).
const fetchMock = vi.hoisted(() => {
  const f = vi.fn<typeof fetch>();
  globalThis.fetch = f;
  return f;
});

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

const TRACE = {
  header: ['SatLab weather trace', 'seed=7'],
  ticks: 3,
  step_ms: 100,
  values_db: [0, 1.5, 2.25],
  statistics: {
    rain_rate_001_mm_h: 29.62,
    p_rain_pct: 4.83,
    trace_rain_pct: 66.67,
    trace_duration_s: 0.2,
    trace_max_db: 2.25,
    clamped_ticks: 0,
    exceedances: [{ p_pct: 0.01, site_rain_db: 14.97, trace_rain_db: 2.25, trace_total_db: 2.25 }],
  },
  clear_sky_db: null,
  uplink_db: null,
  file: null,
};

beforeEach(() => {
  fetchMock.mockReset();
});

describe('WeatherForm', () => {
  it('sends the site, hands the trace on and shows the site statistics beside the trace', async () => {
    fetchMock.mockResolvedValue(json(TRACE));
    const onTrace = vi.fn();
    render(<WeatherForm tickMs={100} marginDb={0} onTrace={onTrace} />);
    await userEvent.click(screen.getByText(/Synthesise the weather of a site/));
    const seed = screen.getByLabelText('Seed');
    await userEvent.clear(seed);
    await userEvent.type(seed, '7');
    await userEvent.click(screen.getByRole('button', { name: 'Synthesise' }));
    await waitFor(() => {
      expect(onTrace).toHaveBeenCalled();
    });
    const req = fetchMock.mock.calls[0]?.[0] as Request;
    expect(new URL(req.url).pathname).toBe('/api/traces/synth');
    expect(await req.json()).toMatchObject({ lat: 43.6, freq_ghz: 19.7, step_ms: 100, seed: 7, clouds: false });
    expect(onTrace.mock.calls[0]?.[0]).toBe('# SatLab weather trace\n# seed=7\n0 0.0000\n1 1.5000\n2 2.2500\n');
    const table = await screen.findByTestId('weather-stats');
    expect(within(table).getByText('14.97')).toBeInTheDocument();
    expect(table).toHaveTextContent('R0.01 29.6 mm/h');
  });

  it('asks for the combined P.1853-2 model without the separate clouds and scintillation, and shows the P.618 total', async () => {
    const row = { p_pct: 0.01, site_rain_db: 14.97, trace_rain_db: 0, trace_total_db: 0.4, site_total_db: 17.31 };
    fetchMock.mockResolvedValue(json({ ...TRACE, statistics: { ...TRACE.statistics, exceedances: [row] } }));
    render(<WeatherForm tickMs={1000} marginDb={0} onTrace={vi.fn()} />);
    await userEvent.click(screen.getByText(/Synthesise the weather of a site/));
    await userEvent.click(screen.getByLabelText(/clouds/));
    await userEvent.selectOptions(screen.getByLabelText('Model'), 'combined');
    expect(screen.getByLabelText(/clouds/)).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Synthesise' }));
    const table = await screen.findByTestId('weather-stats');
    const req = fetchMock.mock.calls[0]?.[0] as Request;
    expect(await req.json()).toMatchObject({ model: 'combined', clouds: false, scintillation: false, step_ms: 1000 });
    expect(within(table).getByText('P.618 total less median gases (dB)')).toBeInTheDocument();
    expect(within(table).getByText('17.31')).toBeInTheDocument();
  });

  it('shows the service error of a modem log, line and limit', async () => {
    fetchMock.mockResolvedValue(
      json({ detail: 'csv: line 4: time 0.5 is not after', errors: ['csv: line 4: time 0.5 is not after'] }, 422),
    );
    render(<WeatherForm tickMs={100} marginDb={0.3} modcodSet="dvbs2x" onTrace={vi.fn()} />);
    const file = new File(['time_s,esn0_db\n0,1\n1,2\n0.5,3\n'], 'modem.csv', { type: 'text/csv' });
    fireEvent.change(screen.getByLabelText(/Modem log/), { target: { files: [file] } });
    expect(await screen.findByRole('alert')).toHaveTextContent('csv: line 4: time 0.5 is not after');
    const req = fetchMock.mock.calls[0]?.[0] as Request;
    expect(await req.json()).toMatchObject({ step_ms: 100, margin_db: 0.3, modcod_set: 'dvbs2x' });
  });

  it('writes the emulator trace format', () => {
    expect(traceText({ ...TRACE, header: [], values_db: [100] })).toBe('0 100.0000\n');
  });
});

describe('BudgetPanel', () => {
  it('shows each hop down to the clear-sky C/N', async () => {
    const hop = {
      direction: 'forward',
      station: 'terminal',
      frequency_ghz: 12,
      elevation_deg: 90,
      slant_range_km: 35785.863,
      eirp_dbw: 52,
      free_space_loss_db: 205.11,
      gas_db: 0.1,
      other_losses_db: 0.5,
      g_over_t_db_per_k: 20,
      boltzmann_dbw_per_k_hz: -228.6,
      symbol_rate_baud: 27.5e6,
      bandwidth_db_hz: 74.39,
      clear_sky_db: 20.5,
      unavailability_pct: 0.3,
      rain_db: 2,
      atmosphere_db: 2.3,
      availability_db: 18.3,
    };
    fetchMock.mockResolvedValue(
      json({
        availability_pct: 99.7,
        hops: [{ ...hop, hop: 'uplink', station: 'gateway', clear_sky_db: 26.6 }, { ...hop, hop: 'downlink' }],
        directions: [{ direction: 'forward', clear_sky_esn0_db: 17.49, availability_esn0_db: 15.29 }],
      }),
    );
    const onBudget = vi.fn();
    render(<BudgetPanel yaml="name: x" onBudget={onBudget} />);
    await userEvent.click(screen.getByRole('button', { name: 'Compute the budget' }));
    const table = await screen.findByTestId('budget-table');
    const row = within(table).getByRole('row', { name: /C\/N clear sky/ });
    expect(row).toHaveTextContent('20.50');
    // the trace preview then works with the budget's C/N, not the link's defaults
    expect(onBudget).toHaveBeenCalledWith({ up: 26.6, down: 20.5 });
    expect(screen.getByText(/forward: Es\/N0/)).toHaveTextContent('17.49 dB clear sky, 15.29 dB at 99.7 %');
    const req = fetchMock.mock.calls[0]?.[0] as Request;
    expect(await req.json()).toEqual({ yaml: 'name: x' });
  });
});
