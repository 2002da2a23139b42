import type { SnapshotTrack } from '@polyphony/contracts';
import type { MediaServerClient, ServerConnection } from '@polyphony/media-servers';

/** A configured media server with its connection (the one schema: ServerInfoSchema in @polyphony/contracts). */
import type { ServerInfo } from '@polyphony/contracts';
export type { ServerInfo };

/** What the playlist service needs from the registry. */
export interface RegistryPort {
  /** Every configured server (all are active), in registry order. */
  listServers(): Promise<ServerInfo[]>;
  /** One server by internal id; undefined when it does not exist (any more). */
  getServer(id: string): Promise<ServerInfo | undefined>;
  /**
   * One server with the connection of `userId`'s own linked account when there is a usable one (`account: 'user'`),
   * else the server's (`account: 'server'`); undefined when the server does not exist.
   */
  getServerForUser(id: string, userId: string | undefined): Promise<(ServerInfo & { account: PlaylistAccount }) | undefined>;
}

/** Whose media-server account holds a playlist: the creating user's own (private to them here) or the server's. */
export type PlaylistAccount = 'user' | 'server';

/** Title and artist of a catalogue song. */
export interface TrackTitle {
  title: string;
  author: string;
}

/** What the playlist service needs from the catalogue-identity service. */
export interface CataloguePort {
  /** Input resolver: provider ids of the server -> canonical ids; canonical and unknown ids pass through (same order and length). */
  resolveInput(serverId: string, ids: readonly string[]): Promise<string[]>;
  /** Output mapping: canonical id -> the server's provider id; ids not on the server are absent. */
  mapOutput(serverId: string, itemIds: readonly string[]): Promise<Map<string, string>>;
  /** The catalogue snapshot (songs with embeddings, descriptors and mapping rows), page by page. */
  snapshotPages(pageSize?: number): AsyncIterable<SnapshotTrack[]>;
  /** Titles of songs; unknown ids are absent. Throws when the lookup is unavailable (callers degrade). */
  lookupTitles(itemIds: readonly string[]): Promise<Map<string, TrackTitle>>;
  /** Metadata and each server's file path of songs (exports); unknown ids are absent. */
  lookupDetails(itemIds: readonly string[]): Promise<Map<string, TrackDetails>>;
}

/** What an export needs of a song: metadata, and the file path per server id (null/absent when the server gave none). */
export interface TrackDetails {
  title: string;
  artist: string;
  album: string | null;
  /** Seconds. */
  durationSeconds: number | null;
  paths: Map<string, string>;
}

/** Builds the media-server client of a connection (tests inject options such as fast retries). */
export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;

/** instant: written by POST /api/create_playlist; automatic: written by a clustering run; radio: by a radio run (index service). */
export type PlaylistKind = 'instant' | 'automatic' | 'radio' | 'album_of_the_week';

/** One track of a playlist we wrote: the canonical id and the provider id actually sent to the server. */
export interface WrittenTrack {
  itemId: string;
  providerId: string;
  /** Title/artist known at write time (null when unknown); refreshed from the catalogue on read. */
  title?: string | null;
  author?: string | null;
}

/** A playlist this service wrote on a media server. */
export interface WrittenPlaylist {
  id: string;
  serverId: string;
  providerPlaylistId: string;
  /** Name as written on the server, suffix included (`Mix_instant`, `Fast_Major_High_automatic`). */
  name: string;
  kind: PlaylistKind;
  runId: string | null;
  trackCount: number;
  createdAt: Date;
  /** The polyphony user who created it (null: a system playlist). */
  ownerUserId: string | null;
  /** `user`: written with the owner's own account and listed to the owner only; `server`: the server's account. */
  account: PlaylistAccount;
}

export interface WrittenPlaylistWithTracks extends WrittenPlaylist {
  tracks: Array<{ itemId: string; providerId: string; title: string | null; author: string | null }>;
}

/** The playlists this service wrote (playlist.playlists + playlist_tracks): the only source of what may be deleted on a server. */
export interface PlaylistStore {
  /** Records a playlist written on a server with its tracks in order. */
  record(p: { serverId: string; providerPlaylistId: string; name: string; kind: PlaylistKind; runId?: string; tracks: WrittenTrack[]; ownerUserId?: string; account?: PlaylistAccount }): Promise<WrittenPlaylist>;
  /** Our playlists of one kind on a server. */
  listByServerAndKind(serverId: string, kind: PlaylistKind): Promise<WrittenPlaylist[]>;
  /** Forgets one record; false when it was not there. */
  remove(id: string): Promise<boolean>;
  /** Forgets every record of a server; returns how many. */
  removeServer(serverId: string): Promise<number>;
  /**
   * Canonical ids, in order, of the newest playlist we wrote on a server whose provider playlist id or name equals `key`
   * (names case-insensitive, with or without the `_instant`/`_automatic`/`_radio` suffix) that `viewer` may see
   * (server-account playlists, and `viewer`'s own private ones); undefined when none.
   */
  trackIdsOf(serverId: string, key: string, viewer?: string): Promise<{ name: string; itemIds: string[] } | undefined>;
  /** Every playlist we wrote that `viewer` may see (as trackIdsOf), with its tracks in order; playlists oldest first. */
  listWithTracks(viewer?: string): Promise<WrittenPlaylistWithTracks[]>;
}
