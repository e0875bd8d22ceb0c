// Who is signed in: the token (sessionStorage) and what GET /api/whoami says about it.
import { createContext, useContext } from 'react';
import type { Who } from './api/client.ts';

export interface Auth {
  who: Who;
  token: string;
  signOut: () => void;
}

export const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside the signed-in app');
  return a;
}
