/**
 * Wire vocabulary of the MediaBrowser (Jellyfin/Emby) fakes: item kinds and id schemes, the options and flavour
 * contracts, case-insensitive query parameters and .NET date/tick formats (media-server-apis.md §2-3). The fake's
 * state and routes are in mediabrowser.ts.
 */
import type { Request, Router } from 'express';
import type { FakeCatalogue } from './catalogue';
import type { MediaBrowserFake } from './mediabrowser';

/** Item kinds that get ids. */
export const MbType = { Track: 1, Album: 2, Artist: 3, View: 4, Playlist: 5, Entry: 6, User: 7 } as const;
export type MbType = (typeof MbType)[keyof typeof MbType];

/** Id scheme of a flavour: encode a (type, n) pair, and decode it back. */
export interface MbIdScheme {
  encode(type: MbType, n: number): string;
  decode(id: string): { type: MbType; n: number } | undefined;
}

/** A playlist held by the fake. */
export interface MbPlaylist {
  n: number;
  id: string;
  name: string;
  ownerId: string;
  isPublic: boolean;
  /** In order; `entryId` is the `PlaylistItemId`. */
  entries: Array<{ entryId: string; trackIndex: number }>;
  createdAt: string;
}

/** Options common to both flavours. */
export interface MediaBrowserOptions {
  catalogue: FakeCatalogue;
  /** Access token (a user token of `userId`). Default `fake-token`. */
  token?: string;
  /** Hex user id (32 hex, no dashes). Default derived from the flavour. */
  userId?: string;
  userName?: string;
  /** Password for `POST /Users/AuthenticateByName`. Default `secret`. */
  password?: string;
  /** Admin users may read `/Library/VirtualFolders`; others get 403. Default true. */
  admin?: boolean;
  /** The user's "allow downloads" policy; without it `/Items/{id}/Download` is 403. Default true. */
  allowDownload?: boolean;
  /** Whether the user may delete items; without it `DELETE /Items/{id}` is 401 (Jellyfin quirk). Default true. */
  canDelete?: boolean;
  serverName?: string;
  version?: string;
  /**
   * Ids accepted per playlist create/add request (the batch size media-server-apis.md records for
   * the kind: 100). More → 400. `null` removes the cap (the real servers only have the URL limit).
   */
  maxIdsPerRequest?: number | null;
  /** Request-line limit in bytes (Kestrel `MaxRequestLineSize` default 8 KiB) → 414 when exceeded. */
  maxRequestLineBytes?: number;
  /** Also serve a non-music view ("Movies", CollectionType movies) so clients must filter. Default true. */
  withMoviesView?: boolean;
}

/** What differs between Jellyfin and Emby. */
export interface MediaBrowserFlavour {
  kind: 'jellyfin' | 'emby';
  ids: MbIdScheme;
  /** The token a request carries, or undefined (after the flavour's own header/query rules). */
  tokenOf(req: Request, q: CiQuery): string | undefined;
  /** Whether QueryResult carries `StartIndex` (Jellyfin) or not (Emby). */
  startIndexInResult: boolean;
  publicInfo(fake: MediaBrowserFake, req: Request): Record<string, unknown>;
  /** Flavour-only routes, mounted before the shared ones (inside the auth wall where noted by the flavour). */
  extraRoutes?(r: Router, fake: MediaBrowserFake): void;
  /** Public (no auth) flavour routes. */
  extraPublicRoutes?(r: Router, fake: MediaBrowserFake): void;
  /** Path prefixes the router is mounted at (Emby: `/emby` and `` ). */
  mounts: string[];
}

/** Case-insensitive view of the query (ASP.NET binding is case-insensitive). */
export class CiQuery {
  private readonly map = new Map<string, string[]>();
  constructor(params: URLSearchParams) {
    for (const [k, v] of params) {
      const key = k.toLowerCase();
      const list = this.map.get(key);
      if (list) list.push(v);
      else this.map.set(key, [v]);
    }
  }
  get(name: string): string | undefined {
    return this.map.get(name.toLowerCase())?.[0];
  }
  /** Comma-separated list (also accepts repeated keys). Empty entries dropped. */
  list(name: string, sep = ','): string[] {
    const all = this.map.get(name.toLowerCase()) ?? [];
    return all.flatMap((v) => v.split(sep)).map((s) => s.trim()).filter(Boolean);
  }
  int(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined || v === '') return undefined;
    const n = Number.parseInt(v, 10);
    return Number.isFinite(n) ? n : undefined;
  }
  bool(name: string): boolean | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    return v.toLowerCase() === 'true' || v === '1';
  }
}

/** ISO text → Jellyfin/.NET round-trip form `yyyy-MM-ddTHH:mm:ss.fffffffZ`. */
export function dotnetDate(iso: string): string {
  const d = new Date(iso);
  const base = d.toISOString().slice(0, 19);
  const ms = String(d.getUTCMilliseconds()).padStart(3, '0');
  return `${base}.${ms}0000Z`;
}

/** 100-ns ticks per second (`RunTimeTicks`). */
export const TICKS_PER_SECOND = 10_000_000;
