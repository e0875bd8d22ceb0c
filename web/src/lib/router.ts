// A tiny hash router: #/path?query. Hash routes work behind the API's static file server (which
// knows nothing about client routes) and survive reloads.
import { useSyncExternalStore } from 'react';

export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function subscribe(cb: () => void): () => void {
  globalThis.addEventListener('hashchange', cb);
  return () => {
    globalThis.removeEventListener('hashchange', cb);
  };
}

export function parseHash(hash: string): Route {
  const h = hash.replace(/^#\/?/, '');
  const [path = '', q = ''] = h.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q) };
}

export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => globalThis.location.hash);
  return parseHash(hash);
}

export function navigate(to: string): void {
  globalThis.location.hash = to.startsWith('#') ? to : `#${to}`;
}
