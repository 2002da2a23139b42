import { defineRoute } from './openapi';
import { OwnerSettingsDto, SettingsOwnerParam } from './settings';
import { z } from './zod';
import {
  ArtistMapOutputRequest,
  ArtistMapOutputResponse,
  ArtistResolveResponse,
  AvailabilityResponse,
  LibraryAvailabilityRequest,
  LibraryAvailabilityResponse,
  AvailabilityVersionResponse,
  DurationBackfillRequest,
  DurationBackfillResponse,
  MAPPING_PAGE_MAX,
  MappingChangesPage,
  MappingRowsPage,
  MapOutputRequest,
  MapOutputResponse,
  MappingLookupRequest,
  RemovalCheckResponse,
  MappingLookupResponse,
  RelabelMapPage,
  ResolveIdentityRequest,
  ResolveIdentityResponse,
  ResolveInputRequest,
  ResolveInputResponse,
  SnapshotPage,
  SnapshotTrack,
  TrackDetail,
  TrackLookupRequest,
  TrackLookupResponse,
  EmbeddingSwitchStatus,
} from './catalogue';
import { StoreLearnedFeaturesRequest } from './learned';
import { PlaylistTracksQuery, PlaylistTracksResponse } from './playlists';
import { RadioPlaylistRequest, RadioPlaylistResponse } from './anchors';
import { ReferenceVectorRequest, ReferenceVectorResponse } from './import';
import { AnalysisRunLive, AnalysisStats, CatalogueStats, IndexLive, IndexStats, LyricsPendingPage, LyricsSimilarRequest, LyricsSimilarResponse, PutLyricsRequest } from './semantic';
import { AiSettingsDto } from './chat';
import { ServerTypeSchema } from './servers';
import { SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE } from './snapshot-binary';

/**
 * Service-to-service routes (access `internal`): called with the signed internal identity by a
 * peer service, never routed by the gateway and left out of the public OpenAPI document. The
 * request and response schemas here are what the typed peer clients parse.
 */
const tags = ['internal'];
const internal = 'internal' as const;

/** Largest page of `/internal/snapshot/tracks` (rows with 200-float vectors). */
export const SNAPSHOT_MAX_LIMIT = 5000;
/** Largest page of `/internal/ids/relabel-map`. */
export const RELABEL_MAP_MAX_LIMIT = 5000;

/** Path parameter of the per-item catalogue routes. */
export const ItemIdParams = z.object({ itemId: z.string().min(1).max(500) });
/** Path parameter of the per-server availability routes. */
export const ServerIdParams = z.object({ serverId: z.string().min(1).max(200) });
/** `after` (exclusive item-id cursor) and `limit` of a snapshot page. */
/** Largest request of `/internal/snapshot/tracks/by-ids`. */
export const SNAPSHOT_BY_IDS_MAX = 1000;
/** POST /internal/snapshot/tracks/by-ids: content ids (1-1000, each 1-500 characters). */
export const SnapshotByIdsRequest = z.object({ itemIds: z.array(z.string().min(1).max(500)).min(1).max(SNAPSHOT_BY_IDS_MAX) });
/** The snapshot rows of the songs found (the same row as a snapshot page's: embedding as base64 float32). */
export const SnapshotByIdsResponse = z.object({ tracks: z.array(SnapshotTrack) });
/** Most changed ids one `/internal/snapshot/changes` answer lists (more = `changed: null`, the reader takes a full snapshot). */
export const SNAPSHOT_CHANGES_MAX = 100_000;
/**
 * GET /internal/snapshot/changes: `since` = the mark of the reader's last snapshot or delta (absent = only a mark is
 * wanted, e.g. before a full snapshot), `catalogue` = the catalogue identity that mark belongs to, `limit` = most ids.
 */
export const SnapshotChangesQuery = z.object({
  since: z.string().regex(/^[0-9]{1,20}$/).optional(),
  catalogue: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(0).max(SNAPSHOT_CHANGES_MAX).default(10_000),
});
/**
 * The catalogue's change feed (issue 35, catalogue-identity store/change-feed.repository.ts): `mark` (decimal xid8) and
 * `catalogue` (identity of this change log) to ask with next time; `changed` = every song id whose snapshot row may
 * differ since `since` (added, changed, mapped or unmapped, removed, relabelled: the reader re-reads them by id, an id
 * no longer found is removed), null when there is no usable delta: `reason` says why (no `since`, another
 * catalogue, a mark older than the log's floor or newer than the database, more than `limit` ids).
 */
export const SnapshotChangesResponse = z.object({
  catalogue: z.string(),
  mark: z.string(),
  changed: z.array(z.string()).nullable(),
  reason: z.enum(['first', 'other-catalogue', 'too-old', 'future', 'too-many']).optional(),
});
export type SnapshotChangesResponse = z.infer<typeof SnapshotChangesResponse>;
export const SnapshotQuery = z.object({ after: z.string().max(500).optional(), limit: z.coerce.number().int().min(1).max(SNAPSHOT_MAX_LIMIT).default(1000) });
/** An artist given by name or by the provider artist id of a server. */
export const ArtistResolveQuery = z.object({ serverId: z.string().min(1).max(200), value: z.string().max(1000) });
/** Page of the relabel map to scheme `toVersion` (keyset on the old id). */
export const RelabelMapQuery = z.object({
  toVersion: z.coerce.number().int().min(0).max(9),
  after: z.string().max(500).optional(),
  limit: z.coerce.number().int().min(1).max(RELABEL_MAP_MAX_LIMIT).default(1000),
});
/** `after` = the opaque cursor of the previous page (absent for the first). */
export const MappingRowsQuery = z.object({ after: z.string().max(2000).optional(), limit: z.coerce.number().int().min(1).max(MAPPING_PAGE_MAX).default(MAPPING_PAGE_MAX) });
/** `after` = the last mapping-log sequence number the reader holds. */
export const MappingChangesQuery = z.object({ after: z.coerce.number().int().min(0), limit: z.coerce.number().int().min(1).max(MAPPING_PAGE_MAX).default(MAPPING_PAGE_MAX) });
/** `embedding=1` (default) includes the vector, `0` leaves it out. */
export const TrackGetQuery = z.object({ embedding: z.enum(['0', '1', 'true', 'false']).optional() });
/** `after` (exclusive item-id cursor) and `limit` of a lyrics backfill page. */
export const LyricsPendingQuery = z.object({ after: z.string().max(500).optional(), limit: z.coerce.number().int().min(1).max(1000).default(200) });

/** The catalogue's identity scheme state and the identity thresholds in effect. */
export const IdentityStateResponse = z.object({
  /** Active scheme version; null before the start-time check ran. */
  schemeVersion: z.number().int().nullable(),
  bandLayoutId: z.string().nullable(),
  /** The version the settings ask for (a relabel runs at start when it differs). */
  configuredSchemeVersion: z.number().int(),
  /** Cosine distance (0..2) under which two embeddings can be the same recording. */
  duplicateDistanceThresholdCosine: z.number(),
  durationToleranceSeconds: z.number(),
  chromaprintGateEnabled: z.boolean(),
  signatureMaxHamming: z.number().int(),
  cleaningCatalogue: z.boolean(),
});

/** The resolved `server` selector: the registry's id, display name and media-server type. */
export const ResolvedServer = z.object({ id: z.string(), name: z.string(), server_type: z.string() });

/**
 * A configured media server as the registry hands it to the other services: id, display name,
 * kind, whether it is the default, and the decrypted connection (credentials, library filter).
 * The one schema of this shape: every service's RegistryPort parses `/internal/servers` with it.
 */
export const ServerInfoSchema = z.object({
  id: z.string(),
  name: z.string(),
  type: ServerTypeSchema,
  isDefault: z.boolean(),
  connection: z.object({
    type: ServerTypeSchema,
    creds: z.record(z.string().optional()),
    musicLibraries: z.array(z.string()).optional(),
  }),
  /** The server's change-detection setting (absent from registries older than issue 35: such a server is not watched). */
  changeDetection: z.object({ mode: z.enum(['off', 'poll', 'push']), intervalSeconds: z.number().int(), pushTokenSha256: z.string().nullable().optional() }).optional(),
});
export type ServerInfo = z.infer<typeof ServerInfoSchema>;
export const ServerInfoList = z.object({ servers: z.array(ServerInfoSchema) });

export const internalRoutes = {
  // registry
  serversResolve: defineRoute({ method: 'get', path: '/internal/servers/resolve', service: 'registry', access: internal, tags, summary: 'Resolve a `server` selector (display name or id; absent = default) to the server, or null', query: z.object({ server: z.string().max(200).optional() }), response: z.object({ server: ResolvedServer.nullable() }) }),
  serversList: defineRoute({ method: 'get', path: '/internal/servers', service: 'registry', access: internal, tags, summary: 'Every configured server with its decrypted connection (internal callers only)', response: ServerInfoList }),
  serverGet: defineRoute({ method: 'get', path: '/internal/servers/:id', service: 'registry', access: internal, tags, summary: 'One server with its decrypted connection; 404 when unknown', params: z.object({ id: z.string().min(1).max(200) }), response: ServerInfoSchema }),
  aiSettings: defineRoute({ method: 'get', path: '/internal/settings/ai', service: 'registry', access: internal, tags, summary: 'The AI provider settings (with secrets) for the chat and playlist services', response: AiSettingsDto }),
  // After aiSettings: `ai` is not an owner, so the fixed path must be matched first.
  ownerSettings: defineRoute({ method: 'get', path: '/internal/settings/:owner', service: 'registry', access: internal, tags, params: SettingsOwnerParam, summary: 'Effective non-secret settings one service applies (index, playlist, catalogue, analysis); read through SettingsReader', response: OwnerSettingsDto }),
  // catalogue
  identityResolve: defineRoute({ method: 'post', path: '/internal/identity/resolve', service: 'catalogue', access: internal, tags, summary: 'Resolve a media-server track to its catalogue item (create or match)', body: ResolveIdentityRequest, response: ResolveIdentityResponse }),
  identityState: defineRoute({ method: 'get', path: '/internal/identity/state', service: 'catalogue', access: internal, tags, summary: 'Identity scheme state (version, thresholds)', response: IdentityStateResponse }),
  tracksLookup: defineRoute({ method: 'post', path: '/internal/tracks/lookup', service: 'catalogue', access: internal, tags, summary: 'Track details of up to 5000 items', body: TrackLookupRequest, response: TrackLookupResponse }),
  trackLearned: defineRoute({ method: 'put', path: '/internal/tracks/:itemId/learned', service: 'catalogue', access: internal, tags, summary: 'Store the learned features (MusiCNN tags, moods) of an item (204; 404 when unknown)', params: ItemIdParams, body: StoreLearnedFeaturesRequest, status: 204 }),
  trackGet: defineRoute({ method: 'get', path: '/internal/tracks/:itemId', service: 'catalogue', access: internal, tags, summary: 'One track detail (`embedding=1` includes the vector); 404 when unknown', params: ItemIdParams, query: TrackGetQuery, response: TrackDetail }),
  changeNudge: defineRoute({ method: 'post', path: '/internal/change-watch/:serverId/nudge', service: 'analysis', access: internal, tags, summary: "A server's webhook reached the gateway: check the push token, then the server's change check runs at the next tick (202; 401 bad token, 404 unknown server, 409 change detection off)", params: ServerIdParams, body: z.object({ token: z.string().max(200).optional() }), status: 202 }),
  removalCheck: defineRoute({ method: 'post', path: '/internal/removals/:serverId', service: 'catalogue', access: internal, tags, summary: "Remove the server's mapping rows whose file is gone (one metadata listing; the cleaning's partial-listing rule)", params: ServerIdParams, response: RemovalCheckResponse }),
  mappingsLookup: defineRoute({ method: 'post', path: '/internal/mappings/lookup', service: 'catalogue', access: internal, tags, summary: 'Which provider ids of a server are already mapped', body: MappingLookupRequest, response: MappingLookupResponse }),
  idsResolveInput: defineRoute({ method: 'post', path: '/internal/ids/resolve-input', service: 'catalogue', access: internal, tags, summary: 'Client ids (provider ids of the server, or item ids) to item ids', body: ResolveInputRequest, response: ResolveInputResponse }),
  idsMapOutput: defineRoute({ method: 'post', path: '/internal/ids/map-output', service: 'catalogue', access: internal, tags, summary: 'Item ids to the provider ids of a server (missing = not on that server)', body: MapOutputRequest, response: MapOutputResponse }),
  idsRelabelMap: defineRoute({ method: 'get', path: '/internal/ids/relabel-map', service: 'catalogue', access: internal, tags, summary: 'Page of old → new item ids after an identity scheme change', query: RelabelMapQuery, response: RelabelMapPage }),
  availabilityVersion: defineRoute({ method: 'get', path: '/internal/availability/:serverId/version', service: 'catalogue', access: internal, tags, summary: 'Version counter of a server availability set', params: ServerIdParams, response: AvailabilityVersionResponse }),
  availability: defineRoute({ method: 'get', path: '/internal/availability/:serverId', service: 'catalogue', access: internal, tags, summary: 'Item ids available on a server', params: ServerIdParams, response: AvailabilityResponse }),
  libraryAvailability: defineRoute({ method: 'post', path: '/internal/availability/:serverId/libraries', service: 'catalogue', access: internal, tags, summary: 'Item ids with a file in some of the given libraries of a server (issue 34)', params: ServerIdParams, body: LibraryAvailabilityRequest, response: LibraryAvailabilityResponse }),
  mappingRows: defineRoute({ method: 'get', path: '/internal/mappings/rows', service: 'catalogue', access: internal, tags, summary: 'Page of all mapping rows (index id maps, full load)', query: MappingRowsQuery, response: MappingRowsPage }),
  mappingChanges: defineRoute({ method: 'get', path: '/internal/mappings/changes', service: 'catalogue', access: internal, tags, summary: 'Mapping log entries after a sequence number (index id maps, follow)', query: MappingChangesQuery, response: MappingChangesPage }),
  snapshotTracksByIds: defineRoute({ method: 'post', path: '/internal/snapshot/tracks/by-ids', service: 'catalogue', access: internal, tags, summary: "The snapshot rows (vectors, descriptors, mappings) of up to 1000 songs by content id, in the request's order; unknown ids and songs without an embedding are absent (the index's live library)", body: SnapshotByIdsRequest, response: SnapshotByIdsResponse }),
  snapshotChanges: defineRoute({ method: 'get', path: '/internal/snapshot/changes', service: 'catalogue', access: internal, tags, summary: 'The ids of songs whose snapshot row changed since a mark, and the next mark (change feed: index builds read only the delta)', query: SnapshotChangesQuery, response: SnapshotChangesResponse }),
  snapshotTracks: defineRoute({ method: 'get', path: '/internal/snapshot/tracks', service: 'catalogue', access: internal, tags, summary: 'Page of analysed tracks with vectors (index builds); JSON, or the binary page (raw float32 vectors) when Accept asks for it, or every page from `after` on in one streamed response (length-prefixed binary pages) when Accept asks for the snapshot stream', query: SnapshotQuery, response: SnapshotPage, alternateTypes: [SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE] }),
  artistsResolve: defineRoute({ method: 'get', path: '/internal/artists/resolve', service: 'catalogue', access: internal, tags, summary: 'Artist name or provider artist id of a server to the artist', query: ArtistResolveQuery, response: ArtistResolveResponse }),
  artistsMapOutput: defineRoute({ method: 'post', path: '/internal/artists/map-output', service: 'catalogue', access: internal, tags, summary: 'Artist names to the provider artist ids of a server', body: ArtistMapOutputRequest, response: ArtistMapOutputResponse }),
  durationsBackfill: defineRoute({ method: 'post', path: '/internal/durations/backfill', service: 'catalogue', access: internal, tags, summary: 'Fill missing track durations from a media-server listing', body: DurationBackfillRequest, response: DurationBackfillResponse }),
  trackLyrics: defineRoute({ method: 'put', path: '/internal/tracks/:itemId/lyrics', service: 'catalogue', access: internal, tags, summary: 'Store the lyrics (or none / instrumental) of an item (204; 404 when unknown)', params: ItemIdParams, body: PutLyricsRequest, status: 204 }),
  lyricsPending: defineRoute({ method: 'get', path: '/internal/lyrics/pending', service: 'catalogue', access: internal, tags, summary: 'Page of items without a lyrics row (backfill)', query: LyricsPendingQuery, response: LyricsPendingPage }),
  lyricsSimilar: defineRoute({ method: 'post', path: '/internal/lyrics/similar', service: 'catalogue', access: internal, tags, summary: 'Items with the most similar lyrics (TF-IDF)', body: LyricsSimilarRequest, response: LyricsSimilarResponse }),
  embeddingSwitch: defineRoute({ method: 'get', path: '/internal/embedding/switch', service: 'catalogue', access: internal, tags, summary: 'Embedder switch progress (served and target version, songs covered); switches when covered', response: EmbeddingSwitchStatus }),
  catalogueStats: defineRoute({ method: 'get', path: '/internal/stats', service: 'catalogue', access: internal, tags, summary: 'Catalogue counts for the dashboard', response: CatalogueStats }),
  // analysis
  referenceVector: defineRoute({ method: 'post', path: '/internal/analysis/reference-vector', service: 'analysis', access: internal, tags, summary: "The reference implementation's MusiCNN vector of one file (download, decode, MSD dense layer before its ReLU, mean over every 3 s patch of the first 600 s): the import's agreement check. 400 unknown server; 502 download failed; 422 undecodable; 503 model not installed", body: ReferenceVectorRequest, response: ReferenceVectorResponse }),
  analysisStats: defineRoute({ method: 'get', path: '/internal/analysis/stats', service: 'analysis', access: internal, tags, summary: 'Analysis numbers for the dashboard (excluded files, queued tracks, live claims)', response: AnalysisStats }),
  analysisRunLive: defineRoute({ method: 'get', path: '/internal/analysis/run', service: 'analysis', access: internal, tags, summary: 'Whether a full analysis run is live (NEW or RUNNING, its end-of-run rebuild included) and its task id', response: AnalysisRunLive }),
  // index
  indexStats: defineRoute({ method: 'get', path: '/internal/stats', service: 'index', access: internal, tags, summary: 'Index counts for the dashboard', response: IndexStats }),
  indexLive: defineRoute({ method: 'get', path: '/internal/index/live', service: 'index', access: internal, tags, summary: "This replica's live generation and every replica's report", response: IndexLive }),
  // playlist
  playlistTracks: defineRoute({ method: 'get', path: '/internal/playlists/tracks', service: 'playlist', access: internal, tags, summary: "Item ids of a server playlist (similar_tracks' playlist seed)", query: PlaylistTracksQuery, response: PlaylistTracksResponse }),
  playlistRadio: defineRoute({ method: 'post', path: '/internal/playlists/radio', service: 'playlist', access: internal, tags, summary: "Create or replace a radio's `<name>_radio` playlist on a server (radio runs of the index)", body: RadioPlaylistRequest, response: RadioPlaylistResponse }),
};
