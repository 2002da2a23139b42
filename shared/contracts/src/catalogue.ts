import { ProviderTrackMessage } from './events';
import { LearnedFeatures } from './learned';
import { z } from './zod';

/**
 * Internal HTTP API of the catalogue-identity service (service-to-service only; the gateway never
 * routes /internal). Shapes shared by the analysis worker, the index and the playlist services.
 */

export const TrackMetadata = z.object({
  title: z.string().max(1000),
  artist: z.string().max(1000),
  artistId: z.string().max(500).optional(),
  album: z.string().max(1000).optional(),
  albumArtist: z.string().max(1000).optional(),
  year: z.number().int().optional(),
  /** 0-5 */
  rating: z.number().min(0).max(5).optional(),
  filePath: z.string().max(4000).optional(),
  /** The provider library the file was listed in (issue 34: `track_server_map.library_id`). */
  libraryId: z.string().max(200).optional(),
  /** The provider's stamp of the file's content (issue 35: `track_server_map.file_stamp`). */
  fileStamp: z.string().max(200).optional(),
});
export type TrackMetadata = z.infer<typeof TrackMetadata>;

export const Descriptors = z.object({
  /** BPM folded into 40-200 */
  tempo: z.number().optional(),
  key: z.string().max(3).optional(),
  scale: z.enum(['major', 'minor']).optional(),
  /** mean clipped RMS in dB */
  energy: z.number().optional(),
});
export type Descriptors = z.infer<typeof Descriptors>;

/** One 200-d vector of a named embedder version (e.g. the dsp-v1 vector sent alongside a learned one). */
export const VersionedEmbedding = z.object({
  embedderVersion: z.string().min(1).max(200),
  embedding: z.array(z.number()).length(200),
});
export type VersionedEmbedding = z.infer<typeof VersionedEmbedding>;

/** POST /internal/identity/resolve: resolve analyzed audio to a canonical id and add the mapping row. */
export const ResolveIdentityRequest = z.object({
  serverId: z.string(),
  providerId: z.string(),
  /** Raw 200-d embedding of the embedder below: the worker's active embedder (the learned one when its model is loaded, else dsp-v1). */
  embedding: z.array(z.number()).length(200),
  embedderVersion: z.string().min(1).max(200),
  /**
   * Vectors of other embedder versions of the same audio (a worker with the learned model also sends its dsp-v1 vector).
   * The catalogue keeps them, so the index and the identity gate can stay on the version that covers the whole
   * catalogue while an embedder switch is in progress (docs/architecture.md "Embedder versions").
   */
  alternateEmbeddings: z.array(VersionedEmbedding).max(4).optional(),
  /**
   * The version the worker stores when its analysis succeeds (its active embedder; default `embedderVersion`). It
   * becomes the catalogue's target version, so a track whose learned analysis failed (sent with dsp-v1 only) does
   * not turn the catalogue's switch around.
   */
  activeEmbedderVersion: z.string().min(1).max(200).optional(),
  /** Seconds from the decoded audio; absent = unknown (identity splits). */
  durationSeconds: z.number().positive().optional(),
  /** Raw Chromaprint (fpcalc -raw) of this provider file. */
  chromaprint: z.array(z.number().int()).max(20000).optional(),
  metadata: TrackMetadata,
  descriptors: Descriptors.default({}),
  /** MusiCNN tags, moods and other features when the learned model is installed (stored with a new song). */
  learned: LearnedFeatures.optional(),
  /**
   * Re-analysis of a file changed in place (issue 35; `metadata.fileStamp` required): when the provider file is mapped
   * and its stored `file_stamp` differs from `metadata.fileStamp`, identity is decided again from this audio (same
   * gates; the file's own mapping is no evidence of sameness): still the same song -> the mapping stays and its stamp,
   * Chromaprint and details are updated; another song -> the mapping moves to the existing or new content id, the old
   * song stays (never deleted). A mapping whose stamp already equals `metadata.fileStamp` is answered as it is
   * (idempotent under redelivery). Without it a mapped file is answered with its mapping.
   */
  changedFile: z.boolean().optional(),
});
export type ResolveIdentityRequest = z.infer<typeof ResolveIdentityRequest>;

export const ResolveIdentityResponse = z.object({
  itemId: z.string(),
  /** new: a new score row was stored (run the full pipeline); existing: only a mapping row was added. */
  outcome: z.enum(['new', 'existing']),
  /**
   * Only for a `changedFile` request that re-decided: `same` the file is still the song it was mapped to (stamp
   * updated), `moved` its mapping left `previousItemId` for `itemId`.
   */
  reanalysis: z.enum(['same', 'moved']).optional(),
  previousItemId: z.string().optional(),
});
export type ResolveIdentityResponse = z.infer<typeof ResolveIdentityResponse>;

/**
 * POST /internal/mappings/lookup: which of these provider ids already have a mapping on the server. With `stamps`
 * (the listing's file stamps, aligned with `providerIds`, null where the listing gave none; issue 35) the answer also
 * names in `changed` the mapped ids whose stored stamp is set and differs from the listed one (files changed in place).
 */
export const MappingLookupRequest = z.object({ serverId: z.string(), providerIds: z.array(z.string()).max(50_000), stamps: z.array(z.string().max(200).nullable()).max(50_000).optional() });
export const MappingLookupResponse = z.object({ mapped: z.array(z.string()), changed: z.array(z.string()).optional() });

/**
 * POST /internal/removals/:serverId (change detection, issue 35): the catalogue reads the server's
 * whole metadata listing (library filter applied; no download) and removes that server's mapping rows whose
 * provider file is no longer listed, by the cleaning's rules: nothing is removed when the listing looks
 * partial (fewer tracks than half the stored mappings: `refused`), rows written after the listing started are
 * kept, only mapping rows go (never a song). `fetched` tracks listed, `storedMappings` rows before, `pruned` removed.
 * `unmapped`: listed tracks without a mapping on the server (at most REMOVAL_CHECK_UNMAPPED_MAX, as the listing
 * gave them; `unmappedTotal` counts them all), so the caller can analyse songs added where no newest-album list shows them.
 */
export const REMOVAL_CHECK_UNMAPPED_MAX = 2000;
const ListedTrack = ProviderTrackMessage;
export const RemovalCheckResponse = z.object({
  fetched: z.number().int(),
  storedMappings: z.number().int(),
  pruned: z.number().int(),
  refused: z.boolean(),
  unmapped: z.array(ListedTrack).max(REMOVAL_CHECK_UNMAPPED_MAX),
  unmappedTotal: z.number().int(),
  /**
   * Listed tracks whose mapping on the server has a stored file stamp different from the listed one (changed in
   * place, issue 35; at most REMOVAL_CHECK_UNMAPPED_MAX, `changedTotal` counts them all). Mappings without a stored
   * stamp get the listed one written (`stampsFilled`), so a later change of that file is seen.
   */
  changed: z.array(ListedTrack).max(REMOVAL_CHECK_UNMAPPED_MAX).default([]),
  changedTotal: z.number().int().default(0),
  stampsFilled: z.number().int().default(0),
});
export type RemovalCheckResponse = z.infer<typeof RemovalCheckResponse>;

/** POST /internal/ids/resolve-input: provider ids of the server -> canonical ids; canonical and unknown ids pass through (same order). */
export const ResolveInputRequest = z.object({ serverId: z.string().optional(), ids: z.array(z.string()).max(50_000) });
export const ResolveInputResponse = z.object({ ids: z.array(z.string()) });

/** POST /internal/ids/map-output: canonical ids -> provider ids of the server; ids not on the server are absent from `map`. */
export const MapOutputRequest = z.object({ serverId: z.string(), itemIds: z.array(z.string()).max(50_000) });
export const MapOutputResponse = z.object({ map: z.record(z.string()) });

/** GET /internal/availability/:serverId -> canonical ids mapped on the server (and the change counter). */
export const AvailabilityResponse = z.object({ serverId: z.string(), version: z.number().int(), itemIds: z.array(z.string()) });

/**
 * POST /internal/availability/:serverId/libraries (issue 34): the songs with at least one file on the server in one of
 * `libraryIds` (`track_server_map.library_id`; provider library ids: Subsonic music-folder ids, Jellyfin/Emby library
 * view ids, Plex section keys). `unknownLibrary` counts the songs on the server none of whose files has a recorded
 * library yet (filled by the next sweep or analysis of the server): they are not in `itemIds`.
 */
export const LibraryAvailabilityRequest = z.object({ libraryIds: z.array(z.string().min(1).max(200)).max(1000) });
export const LibraryAvailabilityResponse = z.object({ serverId: z.string(), itemIds: z.array(z.string()), unknownLibrary: z.number().int() });

/** A catalogue song's display metadata (the media server's tags of its best file; seconds). */
const TrackMetadataFields = {
  title: z.string(),
  artist: z.string(),
  album: z.string().nullable(),
  albumArtist: z.string().nullable(),
  year: z.number().nullable(),
  rating: z.number().nullable(),
  durationSeconds: z.number().nullable(),
};

/** The analysis' DSP features of a song (tempo in BPM, key and scale names, energy); null until analysed. */
const TrackDspFields = {
  tempo: z.number().nullable(),
  key: z.string().nullable(),
  scale: z.string().nullable(),
  energy: z.number().nullable(),
};

/**
 * GET /internal/snapshot/tracks?after=<itemId>&limit=<n<=5000>: keyset-paged catalogue for
 * projections (the index). `embedding` is base64 of little-endian float32[200]. A caller whose `Accept` asks for
 * `SNAPSHOT_PAGE_BINARY_TYPE` gets the same page with raw vector bytes instead (snapshot-binary.ts; the index does).
 */
export const SnapshotTrack = z.object({
  itemId: z.string(),
  embedding: z.string(),
  embedderVersion: z.string(),
  ...TrackMetadataFields,
  ...TrackDspFields,
  /** MusiCNN tags, mood_vector, other_features; null (or absent from older producers) = not analysed with the learned model. */
  learned: LearnedFeatures.nullish(),
  /** Whether the song has stored lyrics (absent from older producers = unknown, read as false). */
  hasLyrics: z.boolean().optional(),
  /** Mapping rows: one per provider file. */
  mappings: z.array(z.object({ serverId: z.string(), providerId: z.string(), artistId: z.string().nullable() })),
});
export type SnapshotTrack = z.infer<typeof SnapshotTrack>;
export const SnapshotPage = z.object({
  tracks: z.array(SnapshotTrack),
  next: z.string().nullable(),
  /** First page only (absent from older producers): how many songs the snapshot held when that page was read; a capacity hint for the reader (rows may change while it pages), not a promise. */
  total: z.number().int().nonnegative().optional(),
});

/** Mapping row of a track as GET /internal/tracks/:itemId returns it. */
export const TrackMappingView = z.object({
  serverId: z.string(),
  providerId: z.string(),
  filePath: z.string().nullable(),
  artistId: z.string().nullable(),
  matchTier: z.string(),
  /** Metadata duration from the server's listing (duration back-fill), seconds. */
  durationSeconds: z.number().nullable(),
});
export type TrackMappingView = z.infer<typeof TrackMappingView>;

/** GET /internal/tracks/:itemId (404 when unknown); also the items of POST /internal/tracks/lookup. */
export const TrackDetail = z.object({
  itemId: z.string(),
  ...TrackMetadataFields,
  filePath: z.string().nullable(),
  ...TrackDspFields,
  lyrics: z.string().nullable(),
  /** MusiCNN tags, mood_vector, other_features; null = not analysed with the learned model. */
  learned: LearnedFeatures.nullish(),
  /** Version of the served vector (the one the index and the identity gate use). */
  embedderVersion: z.string(),
  /** Every embedder version the song has a vector of (served and alternates; absent from older producers). */
  embedderVersions: z.array(z.string()).optional(),
  /** base64 of little-endian float32[200]; absent in lookups unless asked for. */
  embedding: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  mappings: z.array(TrackMappingView),
});
export type TrackDetail = z.infer<typeof TrackDetail>;

/** POST /internal/tracks/lookup: several tracks at once (unknown ids are absent). */
export const TrackLookupRequest = z.object({ itemIds: z.array(z.string()).max(5000), includeEmbedding: z.boolean().default(false) });
export const TrackLookupResponse = z.object({ tracks: z.array(TrackDetail) });

/** POST /internal/durations/backfill: one whole-catalogue listing of a server (never per-id fetches). */
export const DurationBackfillRequest = z.object({
  serverId: z.string(),
  tracks: z.array(z.object({ providerId: z.string(), durationSeconds: z.number() })).max(2_000_000),
});
export type DurationBackfillRequest = z.infer<typeof DurationBackfillRequest>;
export const DurationBackfillResponse = z.object({
  mappingsUpdated: z.number().int(),
  scoresFilled: z.number().int(),
  rejectedEntries: z.number().int(),
  conflictingItems: z.number().int(),
});
export type DurationBackfillResponse = z.infer<typeof DurationBackfillResponse>;

/**
 * GET /internal/artists/resolve?serverId=&value=: `value` is a provider artist id of the server or an
 * artist name. Unknown values pass through as the name with providerArtistId null.
 */
export const ArtistResolveResponse = z.object({ artistName: z.string(), providerArtistId: z.string().nullable() });
export type ArtistResolveResponse = z.infer<typeof ArtistResolveResponse>;

/** GET /internal/availability/:serverId/version: the change counter alone (cheap poll for the mask cache). */
export const AvailabilityVersionResponse = z.object({ serverId: z.string(), version: z.number().int() });

/**
 * GET /internal/ids/relabel-map?toVersion=<v>&after=<oldId>&limit=<n<=5000>: old id -> new id of the
 * relabel to scheme version v (written in the relabel's own transaction), keyset-paged by old id.
 * kind 'merge' = the old song is a copy of the new id's song (drop its vector from an index).
 */
export const RelabelMapEntry = z.object({ oldId: z.string(), newId: z.string(), kind: z.enum(['relabel', 'merge', 'unsignable']) });
export const RelabelMapPage = z.object({ toVersion: z.number().int(), entries: z.array(RelabelMapEntry), next: z.string().nullable() });
export type RelabelMapPage = z.infer<typeof RelabelMapPage>;

/**
 * POST /internal/artists/map-output: artist names -> the server's provider artist id (matched by
 * normalised name; names unknown on the server are absent from `map`). Used by the index for the
 * `artist_id` of similar-artist results.
 */
export const ArtistMapOutputRequest = z.object({ serverId: z.string().min(1).max(200), names: z.array(z.string().max(1000)).max(50_000) });
export const ArtistMapOutputResponse = z.object({ map: z.record(z.string()) });

/** Largest page of the mapping endpoints below. */
export const MAPPING_PAGE_MAX = 20_000;

/**
 * GET /internal/mappings/rows?after=<cursor>&limit=<n<=20000>: every track mapping, keyset-paged by
 * (server id, provider id); a row is `[serverId, providerId, itemId]` (arrays, not objects: 3M rows at
 * 1M songs x 3 servers). `seq` is the mapping-log position read before the page: the page is at least as
 * new as the log up to `seq`, so a reader that loads every page and then applies the log after the first
 * page's `seq` holds the current maps (log entries carry the key's new state, so replaying is idempotent).
 */
export const MappingRowsPage = z.object({ seq: z.number().int(), rows: z.array(z.tuple([z.string(), z.string(), z.string()])), next: z.string().nullable() });
export type MappingRowsPage = z.infer<typeof MappingRowsPage>;

/**
 * GET /internal/mappings/changes?after=<seq>&limit=<n<=20000>: mapping-log entries with seq > after, in
 * commit order; a change is `[seq, serverId, providerId, itemId | null]` (null = the mapping was removed).
 * `seq` = the position to ask after next time (the last entry's seq, or `after` when none);
 * `more` = further entries exist; `reset` = entries after `after` were pruned by retention: reload the
 * maps from `/internal/mappings/rows`.
 */
export const MappingChangesPage = z.object({
  reset: z.boolean(),
  seq: z.number().int(),
  more: z.boolean(),
  changes: z.array(z.tuple([z.number().int(), z.string(), z.string(), z.string().nullable()])),
});
export type MappingChangesPage = z.infer<typeof MappingChangesPage>;


/**
 * GET /internal/embedding/switch: where the catalogue stands in an embedder switch (docs/architecture.md
 * "Embedder versions"). `servedVersion` = the version of the vectors the index and the identity gate use (null
 * while the catalogue is empty); `targetVersion` = the version the analysis workers produce now; `covered` = songs
 * with a vector of the target version, of `total` songs with a vector. The catalogue switches (served := target) once
 * covered = total; `switching` is true while served and target differ.
 */
export const EmbeddingSwitchStatus = z.object({
  servedVersion: z.string().nullable(),
  targetVersion: z.string().nullable(),
  covered: z.number().int(),
  total: z.number().int(),
  switching: z.boolean(),
  /** When the served version last changed (ISO), null when never. */
  switchedAt: z.string().nullable(),
});
export type EmbeddingSwitchStatus = z.infer<typeof EmbeddingSwitchStatus>;
