import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { beforeEach, describe, expect, it, vi } from 'vitest';

import type { Who } from '../api/client.ts';
import { AuthContext } from '../auth.tsx';
import { ReportView, ReproductionsPage, type Claim, type Report } from './Reproductions.tsx';

// fetch is the boundary between the UI and the service. The API client takes globalThis.fetch when
// its module loads, so the stand-in is installed before any import.
const fetchMock = vi.hoisted(() => {
  const f = vi.fn<typeof fetch>();
  globalThis.fetch = f;
  return f;
});

const base: Omit<Claim, 'id' | 'verdict' | 'mean' | 'ci' | 'n' | 'band'> = {
  paper: 'eten',
  source: 'ETEN report (BBN TR 8333)',
  section: '3.3',
  figure: 'Fig. 4',
  statement: 'BETEN 2.4-3x NewReno at BER 1.56e-5',
  measure: 'ratio(goodput_bps, beten/stock)',
  point: { 'link.forward.bit_errors.ber': 1.56e-5 },
  direction: '>',
  neutral: 1,
  note: '',
  linux_note: 'Linux has RACK',
  scenario: 'eten-sim1-lfn',
  subset: 'ci',
  seeds: [101, 102],
  experiment_id: 7,
  results_dir: null,
  versions: { commit: 'abc123', kernel: '6.1.0', satlab: '0.1.0' },
};

const REPORT: Report = {
  schema: 'satlab.reproduction/1',
  commit: 'abc123',
  generated_at: '2026-11-26T12:00:00+00:00',
  summary: { holds: 1, direction: 1, fails: 0, 'no-data': 1, total: 3 },
  claims: [
    { ...base, id: 'beten-high-ber', verdict: 'holds', mean: 2.7, ci: [2.5, 2.9], n: 2, band: [2.0, 4.5] },
    { ...base, id: 'oracle-high-ber', verdict: 'direction', mean: 1.4, ci: null, n: 2, band: [3.0, 4.5] },
    { ...base, id: 'beten-low-ber', verdict: 'no-data', mean: null, ci: null, n: 0, band: [0.9, 1.1], experiment_id: null, results_dir: 'results/x' },
  ],
  parts: [],
};

function who(role: string): Who {
  return { id: 1, name: 'me', role, scope: null, rate_limit_per_min: 600 };
}

/** The page as a user of `role` sees it. */
function renderPage(role: string) {
  render(
    <AuthContext.Provider value={{ who: who(role), token: 't', signOut: () => undefined }}>
      <ReproductionsPage />
    </AuthContext.Provider>,
  );
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

beforeEach(() => {
  fetchMock.mockReset();
});

describe('ReportView', () => {
  it('shows the summary counts and each claim with its verdict, value, CI and chart', () => {
    render(<ReportView report={REPORT} />);
    const summary = screen.getByRole('list', { name: 'Summary' });
    expect(within(summary).getByText('holds:')).toHaveTextContent('holds: 1');
    expect(within(summary).getByText('no data:')).toHaveTextContent('no data: 1');
    expect(within(summary).getByText('does not hold:')).toHaveTextContent('does not hold: 0');
    const rows = screen.getAllByRole('row').slice(1);
    expect(rows).toHaveLength(3);
    const [held, direction, missing] = rows as [HTMLElement, HTMLElement, HTMLElement];
    expect(held).toHaveTextContent('beten-high-ber');
    expect(held).toHaveTextContent('2.7 [2.5, 2.9]');
    expect(held).toHaveTextContent('[2, 4.5]');
    expect(within(held).getByText('holds')).toBeInTheDocument();
    expect(within(held).getByRole('link', { name: '#7' })).toHaveAttribute('href', '#/experiments/7');
    expect(within(held).getByTestId('ci')).toBeInTheDocument();
    expect(within(held).getByTestId('mean')).toBeInTheDocument();
    expect(within(direction).getByText('holds in direction only')).toBeInTheDocument();
    expect(within(direction).queryByTestId('ci')).toBeNull();
    expect(within(missing).getByText('no data')).toBeInTheDocument();
    expect(within(missing).queryByTestId('mean')).toBeNull();
    expect(missing).toHaveTextContent('results/x');
    // The chart puts the mean inside the shaded band when the claim holds.
    const band = within(held).getByTestId('band');
    const x0 = Number(band.getAttribute('x'));
    const x1 = x0 + Number(band.getAttribute('width'));
    const cx = Number(within(held).getByTestId('mean').getAttribute('cx'));
    expect(cx).toBeGreaterThan(x0);
    expect(cx).toBeLessThan(x1);
  });
});

describe('ReproductionsPage', () => {
  it('says when nothing ran, and a submitter starts the CI subset', async () => {
    fetchMock.mockResolvedValueOnce(json(404, { detail: 'no reproduction experiments', errors: [] }));
    fetchMock.mockResolvedValueOnce(
      json(201, {
        commit: 'abc123',
        subset: 'ci',
        estimate_s: 300,
        experiments: [{ scenario: 'eten-sim1-lfn-ci', experiment_id: 7, created: true, runs: 6, estimate_s: 300 }],
      }),
    );
    fetchMock.mockResolvedValue(json(200, REPORT));
    renderPage('submitter');
    expect(await screen.findByText('No reproduction has run yet.')).toBeInTheDocument();
    await userEvent.click(screen.getByRole('button', { name: 'Start the CI subset' }));
    expect(await screen.findByRole('status')).toHaveTextContent('Commit abc123: 1 experiments (1 new, 0 submitted before).');
    expect(await screen.findByText('beten-high-ber')).toBeInTheDocument();
    const post = fetchMock.mock.calls[1]?.[0] as Request;
    expect(post.method).toBe('POST');
    expect(new URL(post.url).pathname).toBe('/api/reproductions');
    expect(await post.json()).toEqual({ subset: 'ci' });
  });

  it('offers no start button to a viewer', async () => {
    fetchMock.mockResolvedValue(json(200, REPORT));
    renderPage('viewer');
    expect(await screen.findByText('beten-high-ber')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Start the CI subset' })).toBeNull();
  });
});
