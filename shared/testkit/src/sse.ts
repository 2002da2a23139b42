/**
 * Reading a server-sent-events answer in tests as the reference's clients read it (issue 30): the body
 * collected as text, split into frames on a blank line, each frame's `data:` lines joined and parsed as JSON.
 */

/** supertest `.parse()` callback that collects the streamed body as one string. */
export function collectText(res: { on(event: string, listener: (chunk: Buffer) => void): unknown }, cb: (err: Error | null, body: string) => void): void {
  let text = '';
  res.on('data', (c) => (text += c.toString()));
  res.on('end', () => cb(null, text));
}

/** The JSON frames of an event-stream body (CRLF accepted; frames without a data: line are skipped). */
export function sseDataFrames(body: string): Array<Record<string, any>> {
  return body
    .replace(/\r\n?/g, '\n')
    .split('\n\n')
    .map((block) => block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')))
    .filter((data) => data.length > 0)
    .map((data) => JSON.parse(data.join('\n')) as Record<string, any>);
}
