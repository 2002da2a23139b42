/**
 * Jellyfin client (10.x / 12.x), per media-server-apis.md §2 and reference-implementation.md §4.
 * Auth: `Authorization: MediaBrowser Token="…"` (Jellyfin 12 disables the legacy `X-Emby-Token`).
 */
import { str } from './common';
import { ProtocolError } from './errors';
import type { Query } from './http';
import { JellyfinFamilyClient, type JfItem } from './jellyfin-family';
import { CLIENT_NAME, CLIENT_VERSION, type ClientOptions } from './options';
import type { LibraryInfo, ServerConnection } from './types';

/**
 * The `Authorization` header value Jellyfin parses (`MediaBrowser` scheme, URL-encoded values).
 * @param token API key or user access token.
 */
export function jellyfinAuthorization(token: string): string {
  const q = (v: string): string => `"${encodeURIComponent(v)}"`;
  return `MediaBrowser Client=${q(CLIENT_NAME)}, Device=${q(CLIENT_NAME)}, DeviceId=${q(CLIENT_NAME)}, Version=${q(CLIENT_VERSION)}, Token=${q(token)}`;
}

/** Jellyfin client. Creds: `{url, user_id, token}`; library filter = view / virtual-folder ids. */
export class JellyfinClient extends JellyfinFamilyClient {
  protected readonly artistsPath = '/Artists';

  constructor(conn: ServerConnection, opts: ClientOptions = {}) {
    super(conn, opts, {
      type: 'jellyfin',
      prefix: '',
      authHeaders: (token) => ({ Authorization: jellyfinAuthorization(token) }),
    });
  }

  protected queryItems(query: Query, signal?: AbortSignal): Promise<{ Items?: JfItem[]; TotalRecordCount?: number }> {
    return this.http.getJson('/Items', { query: { userId: this.userId, ...query }, signal });
  }

  protected userParam(): Query {
    return { userId: this.userId };
  }

  /** Non-admin fallback: `GET /UserViews?userId=` filtered to `CollectionType == "music"`. */
  protected async listUserViews(): Promise<LibraryInfo[]> {
    const res = await this.http.getJson<{ Items?: JfItem[] }>('/UserViews', { query: { userId: this.userId } });
    return this.itemsOf(res)
      .filter((v) => v.CollectionType === 'music' && str(v.Id))
      .map((v) => ({ id: v.Id as string, name: v.Name ?? '' }));
  }

  /** `POST /Playlists` with a JSON body; the result carries only `Id`. */
  protected async createPlaylistRequest(name: string, firstBatch: string[]): Promise<string> {
    const res = await this.http.requestJson<{ Id?: string }>('POST', '/Playlists', {
      json: { Name: name, Ids: firstBatch, UserId: this.userId, MediaType: 'Audio' },
    });
    const id = str(res?.Id);
    if (!id) throw new ProtocolError('jellyfin: POST /Playlists returned no Id');
    return id;
  }

  protected addToPlaylistRequest(playlistId: string, ids: string[]): Promise<void> {
    return this.http.send('POST', `/Playlists/${encodeURIComponent(playlistId)}/Items`, {
      query: { ids: ids.join(','), userId: this.userId },
    });
  }

  protected deleteItemRequest(id: string): Promise<void> {
    return this.http.send('DELETE', `/Items/${encodeURIComponent(id)}`);
  }
}
