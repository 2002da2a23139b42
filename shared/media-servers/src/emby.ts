/**
 * Emby client (4.8), per media-server-apis.md §3 and reference-implementation.md §4: the Jellyfin
 * model under the `/emby` prefix with `X-Emby-Token`, query-parameter playlist writes and
 * `POST /Items/Delete`.
 */
import { str } from './common';
import { NotFoundError, ProtocolError } from './errors';
import type { Query } from './http';
import { JellyfinFamilyClient, type JfItem } from './jellyfin-family';
import type { ClientOptions } from './options';
import type { LibraryInfo, ServerConnection } from './types';

/** Emby client. Creds: `{url, user_id, token}` (url with or without `/emby`). */
export class EmbyClient extends JellyfinFamilyClient {
  protected readonly artistsPath = '/Artists/AlbumArtists';

  constructor(conn: ServerConnection, opts: ClientOptions = {}) {
    const url = (conn.creds.url ?? '').replace(/\/+$/, '').replace(/\/emby$/i, '');
    super({ ...conn, creds: { ...conn.creds, url } }, opts, {
      type: 'emby',
      prefix: '/emby',
      authHeaders: (token) => ({ 'X-Emby-Token': token }),
    });
  }

  protected queryItems(query: Query, signal?: AbortSignal): Promise<{ Items?: JfItem[]; TotalRecordCount?: number }> {
    return this.http.getJson(`/Users/${encodeURIComponent(this.userId)}/Items`, { query, signal });
  }

  protected userParam(): Query {
    return { UserId: this.userId };
  }

  /**
   * `/Library/VirtualFolders` (bare array, what AudioMuse-AI parses); when absent (404) the
   * documented 4.8 form `/Library/VirtualFolders/Query` (`{Items}`).
   */
  protected override async listVirtualFolders(): Promise<Array<{ Name?: string; ItemId?: string; Id?: string; CollectionType?: string; Locations?: string[] }>> {
    try {
      return await super.listVirtualFolders();
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      const res = await this.http.getJson<{ Items?: unknown }>('/Library/VirtualFolders/Query');
      if (!res || !Array.isArray(res.Items)) throw new ProtocolError('emby: /Library/VirtualFolders/Query returned no Items array');
      return res.Items as Array<{ Name?: string; ItemId?: string; Id?: string; CollectionType?: string; Locations?: string[] }>;
    }
  }

  /** Non-admin fallback: `GET /Users/{uid}/Views` filtered to `CollectionType == "music"`. */
  protected async listUserViews(): Promise<LibraryInfo[]> {
    const res = await this.http.getJson<{ Items?: JfItem[] }>(`/Users/${encodeURIComponent(this.userId)}/Views`, {
      query: { IncludeExternalContent: false },
    });
    return this.itemsOf(res)
      .filter((v) => v.CollectionType === 'music' && str(v.Id))
      .map((v) => ({ id: v.Id as string, name: v.Name ?? '' }));
  }

  /** `POST /Playlists?Name=&Ids=&UserId=&MediaType=Audio` (query parameters, no body). */
  protected async createPlaylistRequest(name: string, firstBatch: string[]): Promise<string> {
    const res = await this.http.requestJson<{ Id?: string | number }>('POST', '/Playlists', {
      query: { Name: name, Ids: firstBatch.join(','), UserId: this.userId, MediaType: 'Audio' },
    });
    const id = str(res?.Id);
    if (!id) throw new ProtocolError('emby: POST /Playlists returned no Id');
    return id;
  }

  protected addToPlaylistRequest(playlistId: string, ids: string[]): Promise<void> {
    return this.http.send('POST', `/Playlists/${encodeURIComponent(playlistId)}/Items`, {
      query: { Ids: ids.join(','), UserId: this.userId },
    });
  }

  /** `POST /Items/Delete?Ids=` (AudioMuse-AI); deleting twice is harmless, so it may be retried. */
  protected deleteItemRequest(id: string): Promise<void> {
    return this.http.send('POST', '/Items/Delete', { query: { Ids: id }, idempotent: true });
  }
}
