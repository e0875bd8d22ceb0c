import { render, screen } from '@testing-library/react';
import { beforeEach, describe, expect, it, vi } from 'vitest';

import type { Who } from '../api/client.ts';
import { AuthContext } from '../auth.tsx';
import { Home } from './Home.tsx';

// fetch is the boundary between the UI and the service. The API client takes globalThis.fetch when
// its module loads, so the stand-in is installed before any import.
const fetchMock = vi.hoisted(() => {
  const f = vi.fn<typeof fetch>();
  globalThis.fetch = f;
  return f;
});

const who: Who = { id: 1, name: 'me', role: 'submitter', scope: null, rate_limit_per_min: 600 };

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
}

function page(items: unknown[]) {
  return json({ items, total: items.length, limit: 50, offset: 0 });
}

/** The service's answers: no experiment yet; the library's scenarios named as given. */
function serve(scenarios: string[]) {
  fetchMock.mockImplementation((input) => {
    const url = new URL((input as Request).url);
    if (url.pathname === '/api/scenarios') {
      const name = url.searchParams.get('name') ?? '';
      return Promise.resolve(
        page(
          scenarios
            .map((s, i) => ({ id: 40 + i, name: s, created_at: '2026-11-26T12:00:00Z', created_by: 1, revisions: 1, latest: null }))
            .filter((s) => s.name.includes(name)),
        ),
      );
    }
    return Promise.resolve(page([]));
  });
}

function show() {
  render(
    <AuthContext.Provider value={{ who, token: 't', signOut: () => undefined }}>
      <Home />
    </AuthContext.Provider>,
  );
}

beforeEach(() => {
  fetchMock.mockReset();
});

describe('Home', () => {
  it('offers the library rain-fade comparison after the quickstart', async () => {
    serve(['quickstart', 'geo-rain-comparison']);
    show();
    const link = await screen.findByRole('link', { name: /Open the scenario and run it/ });
    expect(link.getAttribute('href')).toBe('#/scenarios/41');
    const start = screen.getByRole('heading', { name: 'Start here' });
    const rain = screen.getByRole('heading', { name: /which transport helps when it rains/ });
    expect(start.compareDocumentPosition(rain) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  it('shows no rain-fade card when the library lacks the scenario', async () => {
    serve(['quickstart']);
    show();
    await screen.findByText('No experiment yet.');
    expect(screen.queryByRole('heading', { name: /which transport helps when it rains/ })).toBeNull();
  });
});
