/**
 * Playlists of the MediaBrowser fakes (mediabrowser.ts): the store (playlists numbered 1…, entries with their own
 * `PlaylistItemId` counter, owned by the fake's user) and the shared playlist routes: `GET /Playlists/{id}/Items`
 * (paged, `PlaylistItemId` on each item), `DELETE /Playlists/{id}/Items?EntryIds=` and `DELETE /Items/{id}`
 * (a playlist; 401 without `canDelete`). Creation and adding are flavour routes (jellyfin.ts, emby.ts).
 */
import type { Request, Router } from 'express';
import { searchParams } from './common';
import type { MediaBrowserFake } from './mediabrowser';
import { CiQuery, MbType, type MbIdScheme, type MbPlaylist } from './mediabrowser-protocol';

/** The playlists of one fake server. */
export class MediaBrowserPlaylists {
  private readonly byNumber = new Map<number, MbPlaylist>();
  private nextPlaylist = 1;
  private nextEntry = 1;

  /** @param ids the flavour's id scheme; @param ownerId the fake user's id (owner of every playlist) */
  constructor(
    private readonly ids: MbIdScheme,
    private readonly ownerId: string,
  ) {}

  /** Entries created so far (+1): changes whenever an entry is added (part of item-query cache keys). */
  get entryCounter(): number {
    return this.nextEntry;
  }

  /** Playlist number `n`, or undefined. */
  get(n: number): MbPlaylist | undefined {
    return this.byNumber.get(n);
  }

  /** Every playlist, in creation order. */
  all(): MbPlaylist[] {
    return [...this.byNumber.values()];
  }

  /** A new playlist named `name` holding `trackIndices` (catalogue indices), created now. */
  create(name: string, trackIndices: number[], isPublic: boolean): MbPlaylist {
    const n = this.nextPlaylist++;
    const p: MbPlaylist = {
      n,
      id: this.ids.encode(MbType.Playlist, n),
      name,
      ownerId: this.ownerId,
      isPublic,
      entries: [],
      createdAt: new Date().toISOString(),
    };
    this.byNumber.set(n, p);
    this.addEntries(p, trackIndices);
    return p;
  }

  /** Appends one entry per track (duplicates allowed, as both servers do). */
  addEntries(p: MbPlaylist, trackIndices: number[]): void {
    for (const trackIndex of trackIndices) {
      p.entries.push({ entryId: this.ids.encode(MbType.Entry, this.nextEntry++), trackIndex });
    }
  }

  /** The playlist a provider id names, or undefined. */
  byId(id: string): MbPlaylist | undefined {
    const d = this.ids.decode(id);
    return d && d.type === MbType.Playlist ? this.byNumber.get(d.n) : undefined;
  }

  delete(p: MbPlaylist): void {
    this.byNumber.delete(p.n);
  }
}

/** The playlist routes both flavours share (see the module doc); behind the token check. */
export function playlistRoutes(fake: MediaBrowserFake, r: Router): void {
  const q = (req: Request) => new CiQuery(searchParams(req));
  r.get('/Playlists/:pid/Items', (req, res) => {
    const p = fake.playlistById(String(req.params.pid));
    if (!p) {
      res.status(404).type('text/plain').send('Playlist not found');
      return;
    }
    const cq = q(req);
    const start = Math.max(0, cq.int('StartIndex') ?? 0);
    const limit = cq.int('Limit');
    const fields = new Set(cq.list('Fields').map((f) => f.toLowerCase()));
    const items = p.entries
      .slice(start, limit === undefined ? undefined : start + limit)
      .map((e) => ({ ...fake.audioDto(e.trackIndex, fields, true), PlaylistItemId: e.entryId }));
    res.json(fake.queryResult(items, p.entries.length, start));
  });
  r.delete('/Playlists/:pid/Items', (req, res) => {
    const p = fake.playlistById(String(req.params.pid));
    if (!p) {
      res.status(404).type('text/plain').send('Playlist not found');
      return;
    }
    const entryIds = new Set(q(req).list('EntryIds'));
    p.entries = p.entries.filter((e) => !entryIds.has(e.entryId));
    res.status(204).end();
  });
  r.delete('/Items/:id', (req, res) => {
    const p = fake.playlistById(String(req.params.id));
    if (!p) {
      res.status(404).type('text/plain').send('Item not found');
      return;
    }
    if (!fake.opts.canDelete) {
      res.status(401).type('text/plain').send('Unauthorized access');
      return;
    }
    fake.deletePlaylist(p);
    res.status(204).end();
  });
}
