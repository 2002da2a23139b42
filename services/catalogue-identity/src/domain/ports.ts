/**
 * The catalogue domain's ports: what it needs from its own database (implemented in `store/*.repository.ts`; domain code
 * imports these, never a store class) and from other services (`peer-ports.ts`: the registry, the media-server
 * client factory and the index, with their HTTP implementations; re-exported here).
 */
import {
  type CatalogueStats,
  type EmbeddingSwitchStatus,
  type LearnedFeatures,
  type LyricsPendingPage,
  type MappingChangesPage,
  type MappingRowsPage,
  type PutLyricsRequest,
  type ResolveIdentityRequest,
  type SnapshotTrack,
  type SnapshotTrackBytes,
  type SweepRequestedEvent,
  type TaskState,
  type TrackDetail,
  type VersionedEmbedding,
  type SnapshotChangesResponse,
} from '@polyphony/contracts';
import type { Lease, TaskStore } from '@polyphony/platform';
import type { ListedDuration } from './durations';
import type { LocalSong, Match } from './sweep/matcher';
import type { MappedRow, RefreshPlan } from './sweep/refresh';
import type { RemoteIndex, Tier } from './sweep/remote-index';
import type { BandLayout } from './identity/bands';
import type { IdentityConfig } from './identity/constants';
import type { IdentityDecision } from './identity/decide';

export { HttpIndexPort, HttpRegistryPort, type IndexPort, type IndexRebuildResult, type MediaClientFactory, type RegistryPort, type ServerInfo } from './peer-ports';

// ---- The catalogue's own database (store/*.repository.ts) ----

/** Result of a duration back-fill. */
export interface BackfillResult {
  readonly mappingsUpdated: number;
  readonly scoresFilled: number;
  readonly rejectedEntries: number;
  readonly conflictingItems: number;
}

/** Counts of a server deletion. */
export interface ServerDeletionResult {
  readonly mappingsDeleted: number;
  readonly artistsDeleted: number;
  /** Songs that were mapped only on this server and are now orphans (kept, hidden by every mask). */
  readonly orphaned: number;
}

/** The track mapping (catalogue.track_server_map). */
export interface MappingStore {
  /** Provider ids among `providerIds` that have a mapping on the server. */
  lookupMapped(serverId: string, providerIds: readonly string[]): Promise<string[]>;
  /** Mapped ids whose stored file stamp is set and differs from the aligned listed stamp (issue 35). */
  lookupChanged(serverId: string, providerIds: readonly string[], stamps: ReadonlyArray<string | null>): Promise<string[]>;
  /** Input resolver: provider ids of the server -> song ids; song ids and unknown ids pass through (same order and length). */
  resolveInput(serverId: string | undefined, ids: readonly string[]): Promise<string[]>;
  /** Output mapping: song id -> the server's provider id; songs not on the server are absent. */
  mapOutput(serverId: string, itemIds: readonly string[]): Promise<Record<string, string>>;
  /** Version counter of a server's availability set. */
  availabilityVersion(serverId: string): Promise<number>;
  /** The song ids available on a server, with the set's version. */
  availability(serverId: string): Promise<{ version: number; itemIds: string[] }>;
  /** Songs with a file in one of the server's `libraryIds`, and the count of its songs with no recorded library (issue 34). */
  libraryAvailability(serverId: string, libraryIds: readonly string[]): Promise<{ itemIds: string[]; unknownLibrary: number }>;
  /** Removes a server's mapping, Chromaprint and artist rows (never songs: those mapped nowhere else become orphans). */
  deleteServer(serverId: string): Promise<ServerDeletionResult>;
  /** Fills missing durations from a server's listing (entries beyond `toleranceSeconds` of a stored duration are rejected). */
  backfillDurations(serverId: string, listing: readonly ListedDuration[], toleranceSeconds: number): Promise<BackfillResult>;
}

/** The mapping change log (catalogue.mapping_log) and the full map, paged. */
/**
 * The change feed of snapshot rows (issue 35; store/change-feed.repository.ts): the ids of songs whose snapshot row
 * may differ since a reader's mark, and the next mark (`changed: null` + `reason` when there is no usable delta).
 */
export interface SnapshotChangeFeed {
  changesSince(q: { since?: string; catalogue?: string; limit: number }): Promise<SnapshotChangesResponse>;
}

export interface MappingLogStore {
  /**
   * One page of every mapping row, keyset-paged (`after`: the previous page's opaque cursor).
   * @throws ValidationError (400) when `after` is not a cursor of this page
   */
  rows(after: string | undefined, limit: number): Promise<MappingRowsPage>;
  /** Log entries after position `after`, in commit order. */
  changes(after: number, limit: number): Promise<MappingChangesPage>;
}

/** Artist names per server (catalogue.artist_server_map). */
export interface ArtistStore {
  /** A display name or provider artist id of a server -> the artist's name and its provider id there (null when unknown). */
  resolve(serverId: string, value: string): Promise<{ artistName: string; providerArtistId: string | null }>;
  /** Artist names -> the server's provider artist ids; names not on the server are absent. */
  mapNames(serverId: string, names: readonly string[]): Promise<Record<string, string>>;
}

/** Songs (catalogue.score and their mappings). */
export interface TrackStore {
  find(itemId: string, includeEmbedding?: boolean): Promise<TrackDetail | undefined>;
  /** The songs of `itemIds` that exist (unknown ids are absent). */
  findMany(itemIds: readonly string[], includeEmbedding?: boolean): Promise<TrackDetail[]>;
  /** One snapshot page (songs with embeddings, descriptors and mapping rows) after the song id `after`. */
  snapshot(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrack[]; next: string | null; total?: number }>;
  /** The same page with vectors as bytes (the binary page). */
  snapshotBytes(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrackBytes[]; next: string | null; total?: number }>;
  /** The snapshot rows of `itemIds` (request order, each once; unknown ids and songs without an embedding absent). */
  snapshotByIds(itemIds: readonly string[]): Promise<SnapshotTrackBytes[]>;
  /** Replaces a song's learned features; false for an unknown song. */
  setLearned(itemId: string, learned: LearnedFeatures, keepExisting?: boolean): Promise<boolean>;
}

/** Where the embedder switch stands: the version served to the index, the version the workers analyse with, when it last switched. */
export interface EmbeddingState {
  servedVersion: string | null;
  targetVersion: string | null;
  switchedAt: Date | null;
}

/** Embedder versions of the stored vectors and the switch between them (store/embedding-switch.repository.ts). */
export interface EmbeddingVersionStore {
  /** The switch's state. */
  state(): Promise<EmbeddingState>;
  /** Records the version the workers analyse with now (the switch's target). */
  noteTarget(version: string): Promise<EmbeddingState>;
  /** Switches the served version to the target when every song has a vector of it; true when it switched. */
  promoteIfCovered(): Promise<boolean>;
  /** Checks coverage soon (debounced), off the caller's path. */
  scheduleCheck(): void;
  /** Stores a song's vector of another embedder version; false for an unknown song. */
  storeVector(itemId: string, vector: VersionedEmbedding): Promise<boolean>;
  /** Where the catalogue stands in an embedder switch (the call switches when the target version covers the catalogue). */
  status(): Promise<EmbeddingSwitchStatus>;
}

/** A lyrics search hit on one server. */
export interface LyricsHit {
  providerId: string;
  title: string;
  artist: string;
  album: string | null;
  albumArtist: string | null;
  score: number;
  snippet: string;
}

/** Lyrics texts and their full-text index (catalogue.lyrics). */
export interface LyricsStore {
  /** Stores the outcome of one lookup; false for an unknown song. */
  put(itemId: string, req: PutLyricsRequest): Promise<boolean>;
  /** Full-text search over the lyrics of the songs mapped on a server, best first. */
  search(serverId: string, query: string, limit: number): Promise<LyricsHit[]>;
  /** TF-IDF lyrics neighbours of a song among the songs of a server. */
  similar(itemId: string, serverId: string, limit: number): Promise<{ seedHasLyrics: boolean; matches: Array<{ itemId: string; similarity: number }> }>;
  /** Songs without a lookup yet, paged by song id. */
  pending(after: string | undefined, limit: number): Promise<LyricsPendingPage>;
  /** Content counts of the dashboard. */
  stats(): Promise<CatalogueStats>;
}

/** Song counts behind the feature probes: all songs, songs with learned tags, songs with lyrics. */
export interface CoverageCounts {
  songs: number;
  tagged: number;
  lyrics: number;
  /** Songs with a recording fingerprint of the current landmark codec version (search by recording; an older version's print is not counted). */
  fingerprinted: number;
}

/** The counts behind the feature probes. */
export interface CoverageStore {
  global(): Promise<CoverageCounts>;
  forServer(serverId: string): Promise<CoverageCounts>;
}

/** Result of {@link IdentityResolveStore.resolve}. */
export interface ResolveResult {
  readonly itemId: string;
  /** 'new': a score row was stored from this file (also on redelivery of that file); 'existing': only a mapping row. */
  readonly outcome: 'new' | 'existing';
  /** How the answer was reached. */
  readonly via: 'mapped' | 'merge' | 'new';
  /** The domain decision (absent when the file was already mapped). */
  readonly decision?: IdentityDecision;
  /** Transaction attempts used (1 unless a conflict forced a re-decision). */
  readonly attempts: number;
  /** True when this call wrote a mapping row. */
  readonly mappingWritten: boolean;
  /**
   * A `changedFile` request that re-decided identity (issue 35): `same` the mapping stayed (stamp updated), `moved` it
   * left `previousItemId` for `itemId`. Absent for every other answer.
   */
  readonly reanalysis?: 'same' | 'moved';
  readonly previousItemId?: string;
}

/**
 * Thrown when the catalogue's served embedder version is not the request's `embedderVersion` once the decision
 * holds its locks (an embedder switch committed in between): the caller chooses the vector again.
 */
export class ServedVersionChanged extends Error {
  constructor(readonly expected: string, readonly served: string | null) {
    super(`served embedder version is ${served}, the request was prepared for ${expected}`);
    this.name = 'ServedVersionChanged';
  }
}

/** Options of one resolve. */
export interface ResolveOptions {
  /** Identity config; `schemeVersion` must be the version the catalogue is at (ids are minted with it). */
  readonly config: IdentityConfig;
  /** Band layout the signature_band table is built with. */
  readonly layout: BandLayout;
  /** Decision attempts before giving up (default 6). */
  readonly maxAttempts?: number;
}

/** The resolve path's writes and reads (store/identity.repository.ts): the same/different decision under the catalogue's locks, and the mapping row. */
export interface IdentityResolveStore {
  /**
   * Resolves one analysed provider file to a song id (see IdentityResolver for the decision).
   * @throws ServedVersionChanged when an embedder switch committed in between (the caller chooses the vector again)
   */
  resolve(req: ResolveIdentityRequest, options: ResolveOptions): Promise<ResolveResult>;
}

/** Kinds of batch task this service runs. */
export type BatchTaskType = 'sweep' | 'alignment' | 'cleaning';

/** One row of catalogue.batch_task (a sweep, alignment or cleaning on the task host). */
export interface BatchTask {
  readonly id: string;
  readonly type: BatchTaskType;
  readonly state: TaskState;
  /** The server of a one-server sweep; null for alignments and cleanings. */
  readonly serverId: string | null;
  /** Prune stale mappings (manual sweeps, alignments). */
  readonly fullRefresh: boolean;
  /** Orphan deletion asked by the run (cleaning); null = follow the CLEANING_CATALOGUE setting. */
  readonly cleanCatalogue: boolean | null;
  /** What started it: 'api', 'save' (a server save), 'schedule'. */
  readonly trigger: string;
  /** Task ids of requests coalesced into this one. */
  readonly aliases: string[];
  readonly cancelRequested: boolean;
  readonly seq: number;
  readonly progress: number;
  readonly message: string;
  readonly details: Record<string, unknown>;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  /** Grows by one at every claim (first run or takeover); fences the runner's writes. */
  readonly leaseGeneration: number;
}

/** Outcome of a sweep request. */
export interface SweepAdmission {
  /** 'queued': a new task; 'coalesced': joined `task` as an alias; 'duplicate': this task id was seen before. */
  readonly outcome: 'queued' | 'coalesced' | 'duplicate';
  /** The task that will do the work. */
  readonly task: BatchTask;
  /** Queued sweeps/alignments revoked by `cancelRunning` (now REVOKED). */
  readonly revoked: BatchTask[];
  /** Running sweeps/alignments ended (REVOKED, also in `revoked`) by `cancelRunning`. */
  readonly cancelledRunning: string[];
}

/**
 * The catalogue's batch-task queue (catalogue.batch_task) as the task host and the batch runner use it:
 * the host's TaskStore (claim, fenced snapshots, finish, cancel) plus admission. Implemented by
 * store/batch-task.repository.ts.
 */
export interface BatchTaskStore extends TaskStore<BatchTask> {
  /** Queues a sweep or alignment, or coalesces it into a queued one (see SweepAdmission). */
  requestSweep(e: SweepRequestedEvent): Promise<SweepAdmission>;
  /** Queues a cleaning; ConflictError (409) while a sweep, alignment or cleaning is queued or running. */
  admitCleaning(id: string, cleanCatalogue: boolean | null, trigger: 'api' | 'schedule'): Promise<BatchTask>;
  /** Rewrites the details of a task this lease ran and that was revoked meanwhile; undefined when the lease is lost. */
  amendRevoked(lease: Lease, details: Record<string, unknown>): Promise<BatchTask | undefined>;
  /** True while a task is queued (NEW). */
  hasQueued(): Promise<boolean>;
}

/** Counts of one chunk write. */
export interface ChunkWriteResult {
  /** Mapping rows inserted (a provider id mapped meanwhile by analysis is left as it is). */
  readonly written: number;
  /** Mapping rows of this sweep deleted again (ambiguous or taken over). */
  readonly retracted: number;
  /** `written` and `retracted` per match tier. */
  readonly writtenByTier: Partial<Record<Tier, number>>;
  readonly retractedByTier: Partial<Record<Tier, number>>;
}

/** Counts of one refresh chunk write. */
export interface RefreshWriteResult {
  readonly scoresUpdated: number;
  readonly mappingsUpdated: number;
  readonly durationsFilled: number;
  readonly pruned: number;
}

/** Orphan figures of the catalogue. */
export interface OrphanReport {
  /** Songs in the catalogue (score rows). */
  readonly catalogue: number;
  /** Songs mapped on no server. */
  readonly orphans: number;
  /** Up to `sampleLimit` orphans (id, title, artist, album), by id. */
  readonly sample: Array<{ itemId: string; title: string; artist: string; album: string | null }>;
  /** Distinct albums among the orphans. */
  readonly orphanAlbums: number;
}

/**
 * Persistence of the sweep and the cleaning (store: store/sweep.repository.ts). Only mapping rows are removed by a
 * sweep or a cleaning prune; score rows go only through `deleteOrphansIf` (opt-in orphan deletion of the cleaning).
 * Writes of a server throw ConflictError `server_deleted` when the server was deleted while the task ran.
 */
export interface SweepStore {
  /** Songs in the catalogue (score rows). */
  songCount(): Promise<number>;
  /** Mapping rows of the server. */
  mappingCount(serverId: string): Promise<number>;
  /** The database clock (mapping rows written before it are older than a listing fetched after it). */
  now(): Promise<Date>;
  /**
   * Flags in `remote` every provider id the server already has a mapping for (keyset pages of
   * `pageSize`; memory: one page).
   * @returns stored mapping rows and how many of them are in the listing.
   */
  markMapped(serverId: string, remote: RemoteIndex, pageSize: number): Promise<{ stored: number; listed: number }>;
  /**
   * One chunk of the local catalogue for a sweep of `serverId`: songs NOT mapped on that server, after
   * `after` in id order, with every file path known for them (the song's own path and each mapping row's,
   * across all servers).
   * @returns the songs and the keyset cursor of the next chunk (null at the end).
   */
  localChunk(serverId: string, after: string | null, limit: number): Promise<{ songs: LocalSong[]; next: string | null; scanned: number }>;
  /**
   * Writes one chunk's matches: retractions first (rows of this sweep that turned ambiguous or were
   * taken over; only rows carrying the sweep's tier for that song, so an analysis row is never touched),
   * then the new rows with the match tier, the server's own path (and folder), artist id and listed
   * duration. Bumps the server's availability counter when anything changed.
   */
  writeMatches(serverId: string, writes: readonly Match[], retracts: readonly Match[], remote: RemoteIndex): Promise<ChunkWriteResult>;
  /**
   * One chunk of the server's mapping rows for the refresh/prune pass: the rows of up to `limit` songs
   * after `after` (song id order), grouped by song, provider ids in byte order; `olderThanListing` when
   * the row was written before `listingStartedAt`; `metadataAuthority` when this server speaks for the
   * song's metadata (store: `metadataAuthoritySql`; `defaultServerId` = the default server, null when
   * none is known).
   */
  mappedChunk(serverId: string, after: string | null, limit: number, listingStartedAt: Date, defaultServerId?: string | null): Promise<{ rows: MappedRow[]; next: string | null }>;
  /** Writes the listed stamp of the server's mappings that have none (never overwrites one); returns rows written. */
  fillMissingStamps(serverId: string, providerIds: readonly string[], stamps: readonly string[]): Promise<number>;
  /**
   * Writes one refresh chunk (see domain/sweep/refresh.ts): song metadata (stored values kept where the
   * server reports none), mapping rows, back-filled durations, and the stale rows' deletion (only rows
   * older than `listingStartedAt`). Bumps the availability counter when rows were deleted.
   */
  applyRefresh(serverId: string, plan: RefreshPlan, listingStartedAt: Date): Promise<RefreshWriteResult>;
  /**
   * Upserts the server's artist links (provider artist id -> name) in statements of `batch` rows; a row
   * whose name did not change is not rewritten.
   * @returns rows inserted or renamed.
   */
  upsertArtists(serverId: string, links: ReadonlyMap<string, string>, batch?: number): Promise<number>;
  /** Distinct songs mapped on the server. */
  matchedCount(serverId: string): Promise<number>;
  /**
   * Orphans: songs mapped on no server (spec "Cleaning" 3). One statement for the counts, one for the
   * sample.
   */
  orphanReport(sampleLimit: number): Promise<OrphanReport>;
  /**
   * Deletes the orphan songs (score rows mapped on no server; their embedding and band rows go with
   * them) when `allowed(orphans, catalogue)` still holds for the counts taken inside the same
   * transaction. The transaction holds the catalogue write lock EXCLUSIVE, so no resolve, relabel or
   * server deletion changes the mappings between the re-count and the deletion (resolves wait for the
   * few seconds it takes).
   * @returns the re-counted figures, whether the deletion was refused on them, and songs deleted.
   */
  deleteOrphansIf(allowed: (orphans: number, catalogue: number) => boolean): Promise<{ orphans: number; catalogue: number; refused: boolean; deleted: number }>;
}

/** One browse query of the catalogue (domain/browse.service.ts): the songs a filter keeps, as songs or grouped. */
export interface BrowseSelection {
  kind: 'songs' | 'artists' | 'albums';
  filter: 'all' | 'unique' | 'duplicates' | 'orphan';
  /** Case-insensitive substring, already trimmed; undefined = no text filter. */
  q?: string;
  /** Registry id of the selected server; undefined = every server. */
  serverId?: string;
}

/** Pages of catalogue.score grouped per browse kind (store/browse.repository.ts). */
export interface BrowseStore {
  /** Rows `offset`..`offset + limit - 1` of the selection in its stable order (songs: artist, album, title, id). */
  rows(sel: BrowseSelection, limit: number, offset: number): Promise<Array<Record<string, unknown>>>;
  /** Rows of the selection, counted up to `cap + 1` (so the caller can tell a capped count). */
  count(sel: BrowseSelection, cap: number): Promise<number>;
}
