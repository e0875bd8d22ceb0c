import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';

import { StatusPanel } from './StatusPanel.tsx';

// fetch is the boundary between the UI and the service; only this unit test replaces it.
function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

function mockFetch(...answers: (Response | Error)[]) {
  const fetchMock = vi.fn<typeof fetch>();
  for (const answer of answers) {
    if (answer instanceof Error) {
      fetchMock.mockRejectedValueOnce(answer);
    } else {
      fetchMock.mockResolvedValueOnce(answer);
    }
  }
  vi.stubGlobal('fetch', fetchMock);
  return fetchMock;
}

/** The <dd> value of a row in the status list, found by its <dt> label. */
function rowValue(label: string): HTMLElement {
  const term = within(screen.getByRole('region', { name: 'Service status' })).getByText(label, {
    selector: 'dt',
  });
  const value = term.nextElementSibling;
  if (!(value instanceof HTMLElement)) {
    throw new Error(`no value for ${label}`);
  }
  return value;
}

describe('StatusPanel', () => {
  it('shows the service and the database as up when /api/health is ok', async () => {
    const fetchMock = mockFetch(
      jsonResponse(200, {
        status: 'ok',
        database: 'ok',
        postgres: '15.14',
        version: '0.1.0',
      }),
    );

    render(<StatusPanel pollIntervalMs={0} />);

    expect(screen.getByRole('status')).toHaveTextContent('Checking the service');
    expect(await screen.findByText('All systems operational.')).toBeInTheDocument();
    expect(rowValue('Service')).toHaveTextContent('Running');
    expect(rowValue('Database')).toHaveTextContent('Connected');
    expect(rowValue('Version')).toHaveTextContent('0.1.0');
    expect(rowValue('PostgreSQL')).toHaveTextContent('15.14');
    expect(fetchMock).toHaveBeenCalledTimes(1);
    expect(fetchMock.mock.calls[0]?.[0]).toBe('/api/health');
  });

  it('shows a database outage reported by the service (503, degraded)', async () => {
    mockFetch(
      jsonResponse(503, {
        status: 'degraded',
        database: 'unreachable',
        detail: 'connection refused',
        version: '0.1.0',
      }),
    );

    render(<StatusPanel pollIntervalMs={0} />);

    expect(
      await screen.findByText('The service is running but cannot reach its database.'),
    ).toBeInTheDocument();
    expect(rowValue('Service')).toHaveTextContent('Running (degraded)');
    expect(rowValue('Database')).toHaveTextContent('Unreachable');
    expect(screen.getByText('connection refused')).toBeInTheDocument();
  });

  it('shows a clear error when the service does not answer', async () => {
    mockFetch(new TypeError('Failed to fetch'));

    render(<StatusPanel pollIntervalMs={0} />);

    expect(await screen.findByText('Cannot reach the SatLab service.')).toBeInTheDocument();
    expect(screen.getByRole('status')).toHaveTextContent('Cannot reach the SatLab service.');
    expect(screen.getByText(/network error/)).toBeInTheDocument();
    expect(screen.getByText('make run')).toBeInTheDocument();
    expect(rowValue('Service')).toHaveTextContent('Unreachable');
    expect(rowValue('Database')).toHaveTextContent('Unknown');
  });

  it('treats a proxy error page (no health report) as unreachable', async () => {
    mockFetch(new Response('Bad Gateway', { status: 502 }));

    render(<StatusPanel pollIntervalMs={0} />);

    expect(await screen.findByText(/answered HTTP 502 without a health report/)).toBeInTheDocument();
    expect(rowValue('Service')).toHaveTextContent('Unreachable');
  });

  it('checks again from the keyboard and recovers', async () => {
    const user = userEvent.setup();
    const fetchMock = mockFetch(
      new TypeError('Failed to fetch'),
      jsonResponse(200, { status: 'ok', database: 'ok', version: '0.1.0' }),
    );

    render(<StatusPanel pollIntervalMs={0} />);
    expect(await screen.findByText('Cannot reach the SatLab service.')).toBeInTheDocument();

    const button = screen.getByRole('button', { name: 'Check again' });
    await user.tab();
    expect(button).toHaveFocus();
    await user.keyboard('{Enter}');

    expect(await screen.findByText('All systems operational.')).toBeInTheDocument();
    expect(rowValue('Database')).toHaveTextContent('Connected');
    expect(screen.queryByText('make run')).not.toBeInTheDocument();
    expect(fetchMock).toHaveBeenCalledTimes(2);
  });
});
