/**
 * Client factory and credential validation for the five server kinds.
 */
import { EmbyClient } from './emby';
import { JellyfinClient } from './jellyfin';
import { LyrionClient } from './lyrion';
import { NavidromeClient } from './navidrome';
import type { ClientOptions } from './options';
import { PlexClient } from './plex';
import { SERVER_TYPES, type MediaServerClient, type ServerConnection, type ServerType } from './types';

/**
 * Required credential keys per kind (reference `MEDIASERVER_CRED_KEY_BY_FIELD`). Navidrome also
 * accepts `{url, api_key}` (OpenSubsonic API-key auth) instead of `user` + `password`.
 */
export const REQUIRED_CRED_KEYS: Readonly<Record<ServerType, readonly string[]>> = {
  jellyfin: ['url', 'user_id', 'token'],
  emby: ['url', 'user_id', 'token'],
  navidrome: ['url', 'user', 'password'],
  lyrion: ['url'],
  plex: ['url', 'token'],
};

/** One credential problem. */
export interface CredsProblem {
  key: string;
  problem: 'missing' | 'invalid_url';
}

/** True for an absolute `http:` / `https:` URL with a host. */
export function isValidServerUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * Every problem with `creds` for `type`: required keys that are absent or blank, and a `url` that
 * is not an absolute http(s) URL. Empty array = valid.
 */
export function credsProblems(type: ServerType, creds: Record<string, string | undefined>): CredsProblem[] {
  const present = (k: string): boolean => typeof creds[k] === 'string' && (creds[k] as string).trim() !== '';
  let required = REQUIRED_CRED_KEYS[type];
  if (type === 'navidrome' && present('api_key') && !present('user')) required = ['url'];
  const problems: CredsProblem[] = required.filter((k) => !present(k)).map((key) => ({ key, problem: 'missing' as const }));
  if (present('url') && !isValidServerUrl((creds.url as string).trim())) problems.push({ key: 'url', problem: 'invalid_url' });
  return problems;
}

/**
 * The keys of `creds` that are missing (required for `type`: jellyfin/emby url,user_id,token;
 * navidrome url,user,password or url,api_key; lyrion url; plex url,token) or invalid (`url` not an
 * absolute http(s) URL). Empty array = valid. Use {@link credsProblems} for the reason per key.
 */
export function validateCreds(type: ServerType, creds: Record<string, string | undefined>): string[] {
  return credsProblems(type, creds).map((p) => p.key);
}

/** Factory options: the brief's `{timeoutMs, retries}` plus the other {@link ClientOptions}. */
export type CreateClientOptions = ClientOptions;

/**
 * Builds the client for `conn.type`. Credentials are trimmed; the URL loses trailing slashes.
 * @throws TypeError for an unknown type or invalid credentials (see {@link validateCreds}).
 */
export function createMediaServerClient(conn: ServerConnection, opts: CreateClientOptions = {}): MediaServerClient {
  if (!(SERVER_TYPES as readonly string[]).includes(conn.type)) throw new TypeError(`unknown media-server type: ${String(conn.type)}`);
  const problems = credsProblems(conn.type, conn.creds);
  if (problems.length) {
    throw new TypeError(`${conn.type}: invalid credentials: ${problems.map((p) => `${p.key} ${p.problem === 'missing' ? 'missing' : 'is not an http(s) URL'}`).join(', ')}`);
  }
  const creds: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(conn.creds)) creds[k] = typeof v === 'string' ? (k === 'password' ? v : v.trim()) : v;
  creds.url = (creds.url ?? '').replace(/\/+$/, '');
  const normalised: ServerConnection = { ...conn, creds };
  switch (conn.type) {
    case 'jellyfin':
      return new JellyfinClient(normalised, opts);
    case 'emby':
      return new EmbyClient(normalised, opts);
    case 'navidrome':
      return new NavidromeClient(normalised, opts);
    case 'lyrion':
      return new LyrionClient(normalised, opts);
    case 'plex':
      return new PlexClient(normalised, opts);
  }
}
