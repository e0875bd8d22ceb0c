// The live run events of an experiment or a run (GET /api/experiments/{id}/events,
// GET /api/runs/{id}/events): followed over SSE while the page shows it.
import { useEffect, useRef } from 'react';
import type { RunEvent } from '../api/types.ts';
import { followSse } from './sse.ts';

export interface RunEventHandlers {
  /** Each `run` event (state, progress, heartbeat). */
  onRun: (ev: RunEvent) => void;
  /** The server ended the stream: the experiment or run is over. */
  onEnd?: () => void;
  /** The stream broke; it reconnects by itself. */
  onError?: () => void;
}

/**
 * Follows `url` while mounted, and anew when `url` or `token` changes. The handlers are read
 * when an event arrives, so a page may pass new ones on every render without reconnecting.
 */
export function useRunEvents(url: string, token: string, handlers: RunEventHandlers): void {
  const latest = useRef(handlers);
  useEffect(() => {
    latest.current = handlers;
  });

  useEffect(() => {
    const ctl = new AbortController();
    void followSse({
      url,
      token,
      signal: ctl.signal,
      onMessage: (m) => {
        if (m.event !== 'run') return;
        latest.current.onRun(JSON.parse(m.data) as RunEvent);
      },
      onEnd: () => {
        latest.current.onEnd?.();
      },
      onError: () => {
        latest.current.onError?.();
      },
    });
    return () => {
      ctl.abort();
    };
  }, [url, token]);
}
