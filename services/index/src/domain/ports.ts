import type { SnapshotTrack } from '@polyphony/contracts';
import type { Generation } from './generation';
import type { MappingSource } from './maps/generation-maps';
import type { MediaServerClient, ServerConnection, ServerType } from '@polyphony/media-servers';

/**
 * What the index needs from the catalogue-identity service (its internal API,
 * shared/contracts/src/catalogue.ts). Every call is one HTTP round trip. Track id translation and
 * availability are not here: they come from the mapping rows and log (`MappingSource`) into memory.
 */
export interface CataloguePort extends MappingSource {
  /** One keyset page of the catalogue snapshot (`after` = last item id of the previous page, null first). */
  snapshotPage(after: string | null, limit: number): Promise<{ tracks: SnapshotTrack[]; next: string | null }>;
  /** A provider artist id of the server or an artist name -> the artist's name (unknown values come back as given). */
  resolveArtist(serverId: string, value: string): Promise<{ artistName: string; providerArtistId: string | null }>;
  /** Artist names -> provider artist ids of the server; names unknown there are absent. */
  mapArtists(serverId: string, names: string[]): Promise<Record<string, string>>;
}

/** A registry row as the registry's internal API returns it (credentials included). */
export interface ServerInfo {
  id: string;
  name: string;
  type: ServerType;
  isDefault: boolean;
  connection: ServerConnection;
}

/** What the index needs from the registry. */
export interface RegistryPort {
  /** @throws AppError 404 when the server does not exist */
  getServer(id: string): Promise<ServerInfo>;
}

/** What the index needs from the playlist service. */
export interface PlaylistPort {
  /** Canonical ids, in order, of a playlist this service wrote on the server (by provider id or name); undefined when none. */
  playlistTracks(serverId: string, playlist: string): Promise<{ name: string; itemIds: string[] } | undefined>;
}

/**
 * Seeds that are points of the embedding space rather than songs: mood centroids and anchors (built by
 * the semantic features). A missing method means that seed kind is not available in this deployment.
 */
export interface NamedSeedSource {
  /** Unit vector of a mood's centroid in the generation. @throws AppError (4xx/503) when the mood has no centroid */
  mood?(gen: Generation, mood: string): Promise<Float32Array>;
  /** Unit vector and name of a saved anchor. @throws AppError (404) for an unknown anchor */
  anchor?(anchorId: string): Promise<{ vector: Float32Array; name: string }>;
}

/** Creates a media-server client for a connection (tests pass a factory for fakes). */
export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;
