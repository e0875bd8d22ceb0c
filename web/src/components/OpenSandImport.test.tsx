import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { beforeEach, describe, expect, it, vi } from 'vitest';

import { OpenSandImport } from './OpenSandImport.tsx';

// fetch is the boundary between the UI and the service (installed before the client loads).
const fetchMock = vi.hoisted(() => {
  const f = vi.fn<typeof fetch>();
  globalThis.fetch = f;
  return f;
});

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

beforeEach(() => {
  fetchMock.mockReset();
});

describe('OpenSandImport', () => {
  it('uploads the archive, creates the scenario and lists what was not mapped', async () => {
    fetchMock.mockResolvedValueOnce(
      json(200, {
        link: { forward: { symbol_rate_baud: 4e7 } },
        not_mapped: [
          {
            file: 'gw/profile.xml',
            setting: 'physical_layer/error_insertion/error_insertion_type',
            value: 'Gate',
            reason: 'a cliff',
          },
        ],
        files: [],
        entities: { gateway: 6 },
        scenario: {
          id: 9,
          name: 'os-link',
          created_at: '2026-11-26T12:00:00Z',
          created_by: 1,
          revisions: 1,
          latest: null,
        },
        uploads: [],
      }),
    );
    const created = vi.fn();
    render(<OpenSandImport onCreated={created} />);
    const user = userEvent.setup();
    await user.upload(screen.getByLabelText(/Archive/), new File([new Uint8Array([80, 75, 3, 4])], 'cfg.zip'));
    await user.type(screen.getByLabelText(/Scenario name/), 'os-link');
    await user.click(screen.getByRole('button', { name: 'Import' }));
    expect(await screen.findByRole('link', { name: 'os-link' })).toHaveAttribute('href', '#/scenarios/9');
    expect(screen.getByText('physical_layer/error_insertion/error_insertion_type')).toBeInTheDocument();
    expect(created).toHaveBeenCalled();
    const req = fetchMock.mock.calls[0]?.[0] as Request;
    expect(req.method).toBe('POST');
    expect(req.url).toContain('/api/opensand/import?create=true&name=os-link');
    expect(new Uint8Array(await req.arrayBuffer())).toEqual(new Uint8Array([80, 75, 3, 4]));
  });

  it('shows the service refusal', async () => {
    fetchMock.mockResolvedValueOnce(
      json(422, {
        detail: 'gw/topology.xml: refused: DTDForbidden',
        errors: ['gw/topology.xml: refused: DTDForbidden'],
      }),
    );
    render(<OpenSandImport />);
    const user = userEvent.setup();
    await user.upload(screen.getByLabelText(/Archive/), new File(['x'], 'cfg.zip'));
    await user.click(screen.getByRole('button', { name: 'Import' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('DTDForbidden');
  });
});
