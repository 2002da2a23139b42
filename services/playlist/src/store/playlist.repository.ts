import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';
import type { PlaylistKind, PlaylistStore, WrittenPlaylist, WrittenPlaylistWithTracks, WrittenTrack } from '../domain/ports';

// The records' types are the domain's (domain/ports.ts); re-exported for the modules that still import them from here.
export type { PlaylistKind, WrittenPlaylist, WrittenPlaylistWithTracks, WrittenTrack };

interface PlaylistRow {
  id: string;
  server_id: string;
  provider_playlist_id: string;
  name: string;
  kind: PlaylistKind;
  run_id: string | null;
  track_count: number;
  created_at: Date;
  owner_user_id: string | null;
  account: 'user' | 'server';
}
const toPlaylist = (r: PlaylistRow): WrittenPlaylist => ({
  id: r.id,
  serverId: r.server_id,
  providerPlaylistId: r.provider_playlist_id,
  name: r.name,
  kind: r.kind,
  runId: r.run_id,
  trackCount: r.track_count,
  createdAt: r.created_at,
  ownerUserId: r.owner_user_id ?? null,
  account: r.account ?? 'server',
});

/**
 * SQL condition: a playlist (table alias `p`) the viewer (parameter `$n`, null for none) may see: the server
 * account's, or their own private ones.
 */
const visibleTo = (n: number): string => `(p.account = 'server' OR p.owner_user_id = $${n}::text)`;

/**
 * Records of the playlists this service wrote (playlist.playlists + playlist.playlist_tracks). The
 * only source used to decide what may be deleted on a server: names on the server are never scanned.
 */
export class PlaylistRepository implements PlaylistStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Records a playlist just created on a server, with its tracks in order, in one transaction. A stale
   * record with the same provider playlist id on that server (the server reused an id after the playlist
   * was deleted outside this service) is replaced.
   */
  async record(p: { serverId: string; providerPlaylistId: string; name: string; kind: PlaylistKind; runId?: string; tracks: WrittenTrack[]; ownerUserId?: string; account?: 'user' | 'server' }): Promise<WrittenPlaylist> {
    return this.ds.transaction(async (m) => {
      await m.query(`DELETE FROM playlist.playlists WHERE server_id = $1 AND provider_playlist_id = $2`, [p.serverId, p.providerPlaylistId]);
      const rows: PlaylistRow[] = await m.query(
        `INSERT INTO playlist.playlists (id, server_id, provider_playlist_id, name, kind, run_id, track_count, owner_user_id, account)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [randomUUID(), p.serverId, p.providerPlaylistId, p.name, p.kind, p.runId ?? null, p.tracks.length, p.ownerUserId ?? null, p.account ?? 'server'],
      );
      const row = rows[0]!;
      if (p.tracks.length) {
        // One statement for all tracks: parallel arrays unnested WITH ORDINALITY give the positions.
        await m.query(
          `INSERT INTO playlist.playlist_tracks (playlist_id, position, item_id, provider_id, title, author)
           SELECT $1, t.ord - 1, t.item_id, t.provider_id, t.title, t.author
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS t(item_id, provider_id, title, author, ord)`,
          [row.id, p.tracks.map((t) => t.itemId), p.tracks.map((t) => t.providerId), p.tracks.map((t) => t.title ?? null), p.tracks.map((t) => t.author ?? null)],
        );
      }
      return toPlaylist(row);
    });
  }

  /** Our playlists of one kind on one server, oldest first. */
  async listByServerAndKind(serverId: string, kind: PlaylistKind): Promise<WrittenPlaylist[]> {
    const rows: PlaylistRow[] = await this.ds.query(`SELECT * FROM playlist.playlists WHERE server_id = $1 AND kind = $2 ORDER BY created_at, id`, [serverId, kind]);
    return rows.map(toPlaylist);
  }

  /** Forgets one record (after the playlist was deleted on its server). Returns false when it did not exist. */
  async remove(id: string): Promise<boolean> {
    const rows = await queryRows(this.ds, `DELETE FROM playlist.playlists WHERE id = $1 RETURNING id`, [id]);
    return rows.length > 0;
  }

  /** Forgets every record of a server (the server was deleted from the registry). Returns the count removed. */
  async removeServer(serverId: string): Promise<number> {
    const rows = await queryRows(this.ds, `DELETE FROM playlist.playlists WHERE server_id = $1 RETURNING id`, [serverId]);
    return rows.length;
  }

  /**
   * Canonical ids, in order, of the newest playlist we wrote on a server whose provider playlist id or
   * name equals `key` (names compared case-insensitively, with or without the `_instant`/`_automatic`/`_radio`
   * suffix). Undefined when no such playlist was written by this service.
   */
  async trackIdsOf(serverId: string, key: string, viewer?: string): Promise<{ name: string; itemIds: string[] } | undefined> {
    const rows: Array<{ id: string; name: string }> = await this.ds.query(
      `SELECT id, name FROM playlist.playlists p
        WHERE server_id = $1 AND ${visibleTo(3)} AND (provider_playlist_id = $2 OR lower(name) = lower($2) OR lower(name) IN (lower($2) || '_instant', lower($2) || '_automatic', lower($2) || '_radio'))
        ORDER BY (provider_playlist_id = $2) DESC, created_at DESC, id LIMIT 1`,
      [serverId, key, viewer ?? null],
    );
    const row = rows[0];
    if (!row) return undefined;
    const tracks: Array<{ item_id: string }> = await this.ds.query(`SELECT item_id FROM playlist.playlist_tracks WHERE playlist_id = $1 ORDER BY position`, [row.id]);
    return { name: row.name, itemIds: tracks.map((t) => t.item_id) };
  }

  /** Every playlist we wrote with its tracks in order; playlists oldest first. */
  async listWithTracks(viewer?: string): Promise<WrittenPlaylistWithTracks[]> {
    const playlists: PlaylistRow[] = await this.ds.query(`SELECT p.* FROM playlist.playlists p WHERE ${visibleTo(1)} ORDER BY p.created_at, p.id`, [viewer ?? null]);
    if (playlists.length === 0) return [];
    const tracks: Array<{ playlist_id: string; item_id: string; provider_id: string; title: string | null; author: string | null }> = await this.ds.query(
      `SELECT t.playlist_id, t.item_id, t.provider_id, t.title, t.author FROM playlist.playlist_tracks t JOIN playlist.playlists p ON p.id = t.playlist_id
        WHERE ${visibleTo(1)} ORDER BY t.playlist_id, t.position`,
      [viewer ?? null],
    );
    const byPlaylist = new Map<string, WrittenPlaylistWithTracks['tracks']>();
    for (const t of tracks) {
      let list = byPlaylist.get(t.playlist_id);
      if (!list) byPlaylist.set(t.playlist_id, (list = []));
      list.push({ itemId: t.item_id, providerId: t.provider_id, title: t.title, author: t.author });
    }
    return playlists.map((r) => ({ ...toPlaylist(r), tracks: byPlaylist.get(r.id) ?? [] }));
  }
}
