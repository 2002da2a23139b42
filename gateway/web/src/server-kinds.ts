/**
 * Credential fields of each media-server kind for the Setup form, derived from the contracts'
 * CREDENTIAL_SETS / OPTIONAL_CREDS / SECRET_KEYS (pure, unit-tested).
 */
import { CREDENTIAL_SETS, OPTIONAL_CREDS, SECRET_KEYS, type ServerTypeSchema } from '@polyphony/contracts';
import type { z } from 'zod';

export type ServerKind = z.infer<typeof ServerTypeSchema>;

export const KIND_LABELS: Record<ServerKind, string> = { jellyfin: 'Jellyfin', emby: 'Emby', navidrome: 'Navidrome', lyrion: 'Lyrion', plex: 'Plex' };

const LABELS: Record<string, string> = { url: 'Server URL', user_id: 'User ID', token: 'API token', user: 'Username', password: 'Password', api_key: 'API key' };

export interface CredField {
  key: string;
  label: string;
  secret: boolean;
  optional: boolean;
}

/**
 * Fields of a kind: the union of its accepted key sets. A key outside the first set, or in
 * OPTIONAL_CREDS, is optional; with several sets, keys not in every set are optional too.
 */
export function credentialFields(kind: ServerKind): CredField[] {
  const sets = CREDENTIAL_SETS[kind];
  const keys: string[] = [];
  for (const set of sets) for (const k of set) if (!keys.includes(k)) keys.push(k);
  for (const k of OPTIONAL_CREDS[kind]) if (!keys.includes(k)) keys.push(k);
  return keys.map((key) => {
    const inAll = sets.every((s) => s.includes(key));
    let label = LABELS[key] ?? key;
    if (kind === 'plex' && key === 'token') label = 'Plex token';
    if (kind === 'navidrome' && key === 'api_key') label = 'API key (OpenSubsonic; replaces the two fields above)';
    const optional = !inAll || OPTIONAL_CREDS[kind].includes(key);
    if (kind === 'lyrion' && optional) label = `${label} (optional)`;
    return { key, label, secret: SECRET_KEYS.includes(key), optional };
  });
}
