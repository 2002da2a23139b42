/**
 * Incremental parser of a server-sent-events stream (pure, unit-tested): feed text chunks as they
 * arrive, get complete events back; a partial event waits for the next chunk. Handles `event:`,
 * multi-line `data:`, comments and CRLF line ends (per the HTML SSE format).
 */
export interface SseEvent {
  event: string;
  data: string;
}

export class SseParser {
  private buffer = '';

  /** Adds a chunk; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk.replace(/\r\n?/g, '\n');
    const out: SseEvent[] = [];
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
      }
      if (data.length) out.push({ event, data: data.join('\n') });
    }
    return out;
  }
}
