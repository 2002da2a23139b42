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
}

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
}

/** Builds the media-server client of a connection (tests inject options such as fast retries). */
export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;
