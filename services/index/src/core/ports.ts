import type { SnapshotPageBytes } from '../maps/wire';
import type { SnapshotChangesResponse } from '@polyphony/contracts';
import type { Generation } from './generation';
import type { MappingSource } from '../maps/generation-maps';
import type { MediaServerClient, ServerConnection } from '@polyphony/media-servers';
import type { SearchHit, TrackDetails, TrackFilter } from './track-records';

export type { SearchHit, TrackDetails, TrackFilter, TrackMeta } from './track-records';

/**
 * What the index needs from the catalogue-identity service (its internal API,
 * shared/contracts/src/catalogue.ts). Every call is one HTTP round trip. Track id translation and
 * availability are not here: they come from the mapping rows and log (`MappingSource`) into memory.
 */
export interface CataloguePort extends MappingSource {
  /**
   * One keyset page of the catalogue snapshot (`after` = last item id of the previous page, null first), each
   * embedding as little-endian float32 bytes (`maps/wire.ts` parseSnapshotAnswer); `total` on the first page when
   * the catalogue sends it.
   */
  snapshotPage(after: string | null, limit: number): Promise<SnapshotPageBytes>;
  /**
   * The snapshot from `after` on (null = from the start) in pages of `limit` songs as one streamed answer, when the
   * catalogue streams it (`pages`: ends after the page with `next: null`; throws a transient 503 when the stream is
   * cut, `cancel` closes it early); `page` when it answered one page instead (a catalogue older than the stream).
   * Optional: without it the build pages with `snapshotPage` (generation/snapshot-pages.ts).
   */
  snapshotStream?(after: string | null, limit: number): Promise<{ pages: AsyncIterable<SnapshotPageBytes>; cancel(): void } | { page: SnapshotPageBytes }>;
  /**
   * The catalogue's change feed (GET /internal/snapshot/changes; issue 35): the ids changed since `since` (the mark and
   * catalogue of an earlier answer; undefined = a mark only) up to `limit` ids, and the next mark. Undefined when the
   * catalogue has no change feed (an older catalogue: 404). Optional: without it every build reads the full snapshot.
   */
  snapshotChanges?(since: { mark: string; catalogue: string } | undefined, limit: number): Promise<SnapshotChangesResponse | undefined>;
  /** The snapshot rows of songs by content id (up to 1000 a call; unknown ids and songs without an embedding absent). */
  tracksByIds(itemIds: readonly string[]): Promise<SnapshotPageBytes['tracks']>;
  /** A provider artist id of the server or an artist name -> the artist's name (unknown values come back as given). */
  resolveArtist(serverId: string, value: string): Promise<{ artistName: string; providerArtistId: string | null }>;
  /** Artist names -> provider artist ids of the server; names unknown there are absent. */
  mapArtists(serverId: string, names: string[]): Promise<Record<string, string>>;
}

/** A configured media server with its connection (the one schema: ServerInfoSchema in @polyphony/contracts). */
import type { ServerInfo } from '@polyphony/contracts';
export type { ServerInfo };

/** What the index needs from the registry. */
export interface RegistryPort {
  /** @throws AppError 404 when the server does not exist */
  getServer(id: string): Promise<ServerInfo>;
}

/** What the index needs from the playlist service. */
export interface PlaylistPort {
  /** Canonical ids, in order, of a playlist this service wrote on the server (by provider id or name); undefined when none. */
  /** `viewer`: the signed-in user asking (their private playlists are found for them only). */
  playlistTracks(serverId: string, playlist: string, viewer?: string): Promise<{ name: string; itemIds: string[] } | undefined>;
}

/**
 * Seeds that are points of the embedding space rather than songs: mood centroids and anchors (built by
 * the semantic features). A missing method means that seed kind is not available in this deployment.
 */
export interface NamedSeedSource {
  /**
   * Unit vector of a mood's centroid in the generation (`centroidIndex` 0 or absent = the whole mood, i > 0
   * one of its clusters). @throws AppError (4xx/503) when the mood has no such centroid
   */
  mood?(gen: Generation, mood: string, centroidIndex?: number): Promise<Float32Array>;
  /**
   * Unit vector, name and exclusions of a saved anchor (by id, or by name), checked against the
   * generation's dimension. @throws AppError (404) for an unknown anchor, (409) for one saved in another
   * embedding space
   */
  anchor?(anchorId: string, gen: Generation): Promise<NamedAnchor>;
}

/** Creates a media-server client for a connection (tests pass a factory for fakes). */
export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;

/** A saved anchor as a seed: unit centroid, and the exclusions re-applied where it is used. */
export interface NamedAnchor {
  id: number;
  name: string;
  vector: Float32Array;
  /** Unit vectors with their radius (cosine distance; null = the caller's default). */
  exclusions: Array<{ vector: Float32Array; distance: number | null }>;
}

/**
 * Query-time reads of the index's catalogue copy (`index.tracks`, store: core/track.repository.ts) that the
 * request features make: display details, raw vectors, title lookup, token search.
 */
export interface TrackReader {
  /** Details of each known id (absent ids are left out). */
  details(ids: readonly string[]): Promise<Map<string, TrackDetails>>;
  /** The stored float32 vector of each known id. */
  rawVectors(ids: readonly string[]): Promise<Map<string, Float32Array>>;
  /** Canonical ids of the songs with this folded title and artist. */
  findByTitleArtist(titleN: string, artistN: string): Promise<string[]>;
  /** Songs matching every folded token (title, artist, album), at most `limit`, optionally filtered. */
  search(tokens: readonly string[], limit: number, filter?: TrackFilter): Promise<SearchHit[]>;
}
