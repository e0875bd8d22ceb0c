// Token management logic that is not layout: the state of a token at a moment, and the create
// form's fields turned into the API's TokenIn body (or the field errors, named like the API's).
import type { Schemas } from '../api/client.ts';

export type TokenOut = Schemas['TokenOut'];
export type TokenIn = Schemas['TokenIn'];

export function tokenState(t: TokenOut, now: Date = new Date()): 'active' | 'revoked' | 'expired' {
  if (t.revoked_at) return 'revoked';
  if (t.expires_at && Date.parse(t.expires_at) <= now.getTime()) return 'expired';
  return 'active';
}

export interface TokenForm {
  name: string;
  role: TokenIn['role'];
  expiresInDays: string;
  scope: string;
}

/** The request body, or `field: reason` lines (bounds as in api/satlab/service/schemas.py TokenIn). */
export function tokenBody(f: TokenForm): { body: TokenIn } | { errors: string[] } {
  const errors: string[] = [];
  const name = f.name.trim();
  if (!name) errors.push('name: give the token a name (who or what uses it)');
  else if (name.length > 100) errors.push('name: at most 100 characters');
  const body: TokenIn = { name, role: f.role };
  if (f.expiresInDays.trim() !== '') {
    const d = Number(f.expiresInDays);
    if (!Number.isFinite(d) || d <= 0 || d > 3650) errors.push('expires_in_days: a number of days > 0 and ≤ 3650');
    else body.expires_in_days = d;
  }
  const scope = f.scope
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (scope.length > 50) errors.push('scope: at most 50 patterns');
  else if (scope.length) body.scope = scope;
  return errors.length ? { errors } : { body };
}
