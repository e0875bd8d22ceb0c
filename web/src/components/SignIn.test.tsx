import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { ApiError, type Who } from '../api/client.ts';
import { SignIn } from './SignIn.tsx';

const viewer: Who = { id: 2, name: 'ops', role: 'viewer', scope: null, rate_limit_per_min: 600 };

describe('SignIn', () => {
  it('checks the token and hands it over with who it belongs to', async () => {
    const check = vi.fn(() => Promise.resolve(viewer));
    const onSignedIn = vi.fn();
    render(<SignIn check={check} onSignedIn={onSignedIn} />);
    await userEvent.type(screen.getByLabelText('API token'), '  sl_abc  ');
    await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(check).toHaveBeenCalledWith('sl_abc');
    expect(onSignedIn).toHaveBeenCalledWith('sl_abc', viewer);
  });

  it('says so when the service refuses the token', async () => {
    const check = vi.fn(() => Promise.reject(new ApiError(401, 'the token is unknown')));
    const onSignedIn = vi.fn();
    render(<SignIn check={check} onSignedIn={onSignedIn} />);
    await userEvent.type(screen.getByLabelText('API token'), 'sl_bad');
    await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('This token is unknown, revoked or expired.');
    expect(screen.getByLabelText('API token')).toHaveAttribute('aria-invalid', 'true');
    expect(onSignedIn).not.toHaveBeenCalled();
  });

  it('asks for a token before calling the service', async () => {
    const check = vi.fn(() => Promise.resolve(viewer));
    render(<SignIn check={check} onSignedIn={vi.fn()} />);
    await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(screen.getByRole('alert')).toHaveTextContent('Paste an API token.');
    expect(check).not.toHaveBeenCalled();
  });
});
