import { describe, expect, it } from 'vitest';
import { tokenBody, tokenState, type TokenOut } from './tokens.ts';

const base: TokenOut = {
  id: 1,
  name: 'ci',
  role: 'submitter',
  scope: null,
  rate_limit_per_min: null,
  created_at: '2026-11-01T00:00:00Z',
  expires_at: null,
  last_used_at: null,
  revoked_at: null,
};

describe('tokens', () => {
  it('tells active, expired and revoked tokens apart', () => {
    const now = new Date('2026-11-22T00:00:00Z');
    expect(tokenState(base, now)).toBe('active');
    expect(tokenState({ ...base, expires_at: '2026-11-21T23:59:59Z' }, now)).toBe('expired');
    expect(tokenState({ ...base, expires_at: '2026-12-01T00:00:00Z' }, now)).toBe('active');
    expect(tokenState({ ...base, expires_at: '2026-11-21T00:00:00Z', revoked_at: '2026-11-02T00:00:00Z' }, now)).toBe('revoked');
  });

  it('builds the API body from the form, with the bounds the API checks', () => {
    expect(tokenBody({ name: ' ci ', role: 'submitter', expiresInDays: '30', scope: 'nightly-*, quick' })).toEqual({
      body: { name: 'ci', role: 'submitter', expires_in_days: 30, scope: ['nightly-*', 'quick'] },
    });
    expect(tokenBody({ name: 'x', role: 'viewer', expiresInDays: '', scope: '' })).toEqual({ body: { name: 'x', role: 'viewer' } });
    expect(tokenBody({ name: '', role: 'admin', expiresInDays: '0', scope: '' })).toEqual({
      errors: ['name: give the token a name (who or what uses it)', 'expires_in_days: a number of days > 0 and ≤ 3650'],
    });
    expect(tokenBody({ name: 'x', role: 'admin', expiresInDays: 'soon', scope: '' })).toHaveProperty('errors');
  });
});
