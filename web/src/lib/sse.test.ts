import { describe, expect, it } from 'vitest';
import { followSse, SseParser, type SseMessage } from './sse.ts';

describe('SseParser', () => {
  it('parses the API stream, split anywhere, with comments and CRLF', () => {
    const text =
      'event: run\nid: 1\ndata: {"state": "queued"}\n\n: keepalive\n\n' +
      'event: run\r\nid: 2\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: end\nid: 2\ndata: {}\n\n';
    const p = new SseParser();
    const got: SseMessage[] = [];
    for (let i = 0; i < text.length; i += 7) got.push(...p.feed(text.slice(i, i + 7)));
    expect(got).toEqual([
      { event: 'run', id: '1', data: '{"state": "queued"}' },
      { event: 'run', id: '2', data: '{"a":\n1}' },
      { event: 'end', id: '2', data: '{}' },
    ]);
    expect(p.lastEventId).toBe('2');
  });

  it('defaults the event name and keeps the id across messages', () => {
    const p = new SseParser();
    expect(p.feed('id: 7\ndata: x\n\ndata:y\n\n')).toEqual([
      { event: 'message', id: '7', data: 'x' },
      { event: 'message', id: '7', data: 'y' },
    ]);
  });

  it('does not dispatch a message without data', () => {
    expect(new SseParser().feed('event: run\n\n')).toEqual([]);
  });
});

describe('followSse', () => {
  it('reconnects with Last-Event-ID and stops at event: end', async () => {
    const calls: (string | undefined)[] = [];
    const bodies = ['event: run\nid: 5\ndata: {"n":1}\n\n', 'event: run\nid: 6\ndata: {"n":2}\n\nevent: end\nid: 6\ndata: {}\n\n'];
    const fetchImpl = (_url: RequestInfo | URL, init?: RequestInit) => {
      const h = init?.headers as Record<string, string>;
      calls.push(h['Last-Event-ID']);
      const body = bodies.shift() ?? '';
      return Promise.resolve(new Response(body, { status: 200 }));
    };
    const seen: string[] = [];
    let ended = false;
    await followSse({
      url: '/x',
      token: 't',
      fetchImpl: fetchImpl,
      signal: new AbortController().signal,
      retryMs: 1,
      onMessage: (m) => seen.push(m.data),
      onEnd: () => {
        ended = true;
      },
    });
    expect(seen).toEqual(['{"n":1}', '{"n":2}']);
    expect(calls).toEqual([undefined, '5']);
    expect(ended).toBe(true);
  });
});
