import type { Readable } from 'node:stream';
import type { AxiosResponse } from 'axios';
import { ProtocolError } from './errors';

/** Largest body read into memory for a non-download response: 64 MiB (a 1,000-track Plex page is about 2 MB). */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** One response header as a string (first value of a list). */
export function headerOf(res: AxiosResponse | undefined, name: string): string | undefined {
  const v = (res?.headers as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(v)) return v[0] === undefined ? undefined : String(v[0]);
  return v === undefined || v === null ? undefined : String(v);
}

/** Every response header, names lower-cased, first value of a list. */
export function flatHeaders(res: AxiosResponse): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const key of Object.keys(res.headers ?? {})) out[key.toLowerCase()] = headerOf(res, key);
  return out;
}

/** Reads at most 4 KiB of an error body, then drops the stream. */
export async function readSnippet(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of stream) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      chunks.push(b);
      n += b.length;
      if (n >= 4096) break;
    }
  } catch {
    /* body unreadable: keep what arrived */
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a whole (small) response stream as UTF-8, capped at {@link MAX_BODY_BYTES}. */
export async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    n += b.length;
    if (n > MAX_BODY_BYTES) {
      stream.destroy();
      throw new ProtocolError(`response body larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `Retry-After` as ms: delta-seconds or an HTTP date; undefined when absent or invalid. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
