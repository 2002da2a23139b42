/**
 * The Subsonic wire protocol of the fake Navidrome (subsonic.ts): the response envelope (JSON, JSONP, XML),
 * error codes, id kinds, request parameters and the view of the server state the endpoint modules read.
 * Internal to the fakes: only `SUBSONIC_ERRORS` is part of the testkit API (re-exported by subsonic.ts).
 */
import type { Request, Response } from 'express';
import type { FakeCatalogue } from './catalogue';
import { searchParams, toXml, type FakeCore, type HexIds } from './common';

/** Subsonic API version the fake reports (Navidrome 0.5x). */
export const API_VERSION = '1.16.1';
/** Kinds of id the fake encodes with {@link HexIds}: a song, an album, an artist, a playlist. */
export const ID_TRACK = 1;
export const ID_ALBUM = 2;
export const ID_ARTIST = 3;
export const ID_PLAYLIST = 5;

/** Subsonic error codes used here (subsonic.org API, "Error handling"). */
export const SUBSONIC_ERRORS = {
  generic: 0,
  missingParameter: 10,
  wrongCredentials: 40,
  conflictingAuth: 43,
  invalidApiKey: 44,
  notAuthorized: 50,
  notFound: 70,
} as const;

/** A Subsonic failure: answered as HTTP 200 with `status:"failed"` and `error{code,message}`. */
export class SubsonicError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** What an endpoint answers: the payload to wrap in the envelope, or 'sent' when it wrote the response itself. */
export type SubsonicAnswer = Record<string, unknown> | 'sent';

/**
 * The fake server's state as the endpoint modules (browse, playlists) read it. `visibleLibraries` is the set of
 * catalogue libraries of the request being answered (undefined = all: the main user or an API key).
 */
export interface SubsonicView {
  readonly catalogue: FakeCatalogue;
  readonly core: FakeCore;
  readonly ids: HexIds;
  readonly user: string;
  readonly enableDownloads: boolean;
  readonly maxIdsPerRequest: number | null;
  readonly visibleLibraries: string[] | undefined;
  /** The `song` (child) payload of catalogue track `i`. */
  song(i: number): Record<string, unknown>;
  /** The album payload of catalogue album `j`. */
  albumEntry(j: number): Record<string, unknown>;
  /** Catalogue index of a song id, or undefined when it names no song. */
  trackIndex(id: string): number | undefined;
}

/** The query parameters plus, for a `formPost` call, the form body's (repeated keys kept). */
export function requestParams(req: Request): URLSearchParams {
  const p = searchParams(req);
  if (typeof req.body === 'string' && req.body) for (const [k, v] of new URLSearchParams(req.body)) p.append(k, v);
  return p;
}

/**
 * Writes the `subsonic-response` envelope (HTTP 200 always): JSON with `f=json`, JSONP with `f=jsonp` (`callback`),
 * otherwise XML; `failed` replaces the payload with `error{code,message}` and status "failed".
 */
export function sendEnvelope(res: Response, params: URLSearchParams, serverVersion: string, payload: Record<string, unknown>, failed?: SubsonicError): void {
  const envelope: Record<string, unknown> = {
    status: failed ? 'failed' : 'ok',
    version: API_VERSION,
    type: 'navidrome',
    serverVersion,
    openSubsonic: true,
    ...(failed ? { error: { code: failed.code, message: failed.message } } : payload),
  };
  const f = params.get('f');
  if (f === 'json') {
    res.status(200).json({ 'subsonic-response': envelope });
  } else if (f === 'jsonp') {
    res.status(200).type('application/javascript').send(`${params.get('callback') ?? 'callback'}(${JSON.stringify({ 'subsonic-response': envelope })});`);
  } else {
    res.status(200).type('application/xml').send(`<?xml version="1.0" encoding="UTF-8"?>${toXml('subsonic-response', envelope, ' xmlns="http://subsonic.org/restapi"')}`);
  }
}

/** Integer parameter `name`, `dflt` when absent or empty; not a number → code 0. */
export function intParam(params: URLSearchParams, name: string, dflt: number): number {
  const v = params.get(name);
  if (v === null || v === '') return dflt;
  const n = Number.parseInt(v, 10);
  if (!Number.isFinite(n)) throw new SubsonicError(SUBSONIC_ERRORS.generic, `Invalid ${name}`);
  return n;
}

/** Parameter `name`; absent or empty → code 10 "required '<name>' parameter is missing". */
export function requiredParam(params: URLSearchParams, name: string): string {
  const v = params.get(name);
  if (v === null || v === '') throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, `required '${name}' parameter is missing`);
  return v;
}

/** Catalogue indices of song ids; an id naming no song → code 70. */
export function resolveSongs(view: SubsonicView, ids: string[]): number[] {
  return ids.map((id) => {
    const i = view.trackIndex(id);
    if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, `Song ${id} not found`);
    return i;
  });
}

/** An injected catalogue-page failure (`failAfterPages`): HTTP 500 text. */
export function fail500(res: Response): 'sent' {
  res.status(500).type('text/plain').send('Internal Server Error (injected by fake)');
  return 'sent';
}

/** Drops undefined/null, 0, '' and false values (Go `omitempty`), except the keys in `keep`. */
export function omitEmpty(o: Record<string, unknown>, keep: string[] = ['isDir']): Record<string, unknown> {
  for (const [k, v] of Object.entries(o)) {
    if (keep.includes(k)) continue;
    if (v === undefined || v === null || v === 0 || v === '' || v === false) delete o[k];
  }
  return o;
}
