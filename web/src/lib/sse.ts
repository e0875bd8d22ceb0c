// Server-Sent Events over fetch. EventSource cannot send an Authorization header, and every SatLab
// endpoint needs one, so the stream is read with fetch and parsed here (the WHATWG "event stream"
// rules: lines end with LF, CR or CRLF; `:` starts a comment; `event`, `data` (joined with LF),
// `id`; a blank line dispatches). Reconnects resume with Last-Event-ID.

export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  /** The id of the last dispatched message (what Last-Event-ID should carry). */
  lastEventId: string | undefined;

  /** Feeds a chunk of text; returns the messages it completed. */
  feed(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // a lone CR at the end might be the first half of CRLF: wait for more
      if (m[0] === '\r' && m.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const msg = this.line(line);
      if (msg) out.push(msg);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') {
      if (!this.data.length) {
        this.event = '';
        return undefined;
      }
      const msg: SseMessage = { event: this.event || 'message', data: this.data.join('\n'), id: this.id };
      this.lastEventId = this.id ?? this.lastEventId;
      this.event = '';
      this.data = [];
      return msg;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    return undefined;
  }
}

export interface StreamOptions {
  url: string;
  token: string;
  onMessage: (msg: SseMessage) => void;
  /** Called once the server sends `event: end` (the stream then stops). */
  onEnd?: () => void;
  onError?: (err: unknown) => void;
  signal: AbortSignal;
  retryMs?: number;
  fetchImpl?: typeof fetch;
}

/** Follows an SSE endpoint until `event: end` or abort, reconnecting with Last-Event-ID. */
export async function followSse(opts: StreamOptions): Promise<void> {
  const doFetch = opts.fetchImpl ?? fetch;
  let lastId: string | undefined;
  while (!opts.signal.aborted) {
    const parser = new SseParser();
    try {
      const headers: Record<string, string> = {
        Authorization: `Bearer ${opts.token}`,
        Accept: 'text/event-stream',
      };
      if (lastId !== undefined) headers['Last-Event-ID'] = lastId;
      const res = await doFetch(opts.url, { headers, signal: opts.signal, cache: 'no-store' });
      if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const msg of parser.feed(value)) {
          if (msg.id !== undefined) lastId = msg.id;
          if (msg.event === 'end') {
            opts.onEnd?.();
            await reader.cancel().catch(() => undefined);
            return;
          }
          opts.onMessage(msg);
        }
      }
    } catch (err) {
      // the signal may have aborted while awaiting
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
      if (opts.signal.aborted) return;
      opts.onError?.(err);
    }
    await new Promise((r) => setTimeout(r, opts.retryMs ?? 1000));
  }
}
