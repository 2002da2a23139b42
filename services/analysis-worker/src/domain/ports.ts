import type { BrowseUnanalyzableRowDto, UnanalyzableReasonCode, EmbeddingSwitchStatus, IndexLive, StoreLearnedFeaturesRequest, LyricsPendingPage, PutFingerprintRequest, PutLyricsRequest, ResolveIdentityRequest, ResolveIdentityResponse } from '@polyphony/contracts';
import type { MediaServerClient, ServerConnection } from '@polyphony/media-servers';
import type { Lease, TaskRunStore } from '@polyphony/platform';

/** A configured media server with its connection (the one schema: ServerInfoSchema in @polyphony/contracts). */
import type { ServerInfo } from '@polyphony/contracts';
export type { ServerInfo };

/** What the analysis needs from the registry. */
export interface RegistryPort {
  /** Every configured server (all are active), default first. */
  listServers(): Promise<ServerInfo[]>;
  getServer(id: string): Promise<ServerInfo>;
}

/** What this process analyses with: the learned model's id (tags_model) and the embedder version it stores. */
export interface LearnedTarget {
  model: string;
  embedderVersion: string;
}

/** What the analysis needs from the catalogue-identity service. */
export interface CataloguePort {
  /** Provider ids among `providerIds` that already have a mapping on the server. */
  mappedProviderIds(serverId: string, providerIds: string[]): Promise<Set<string>>;
  /**
   * Of these listed tracks, the mapped ones whose stored file stamp is set and differs from the listed `fileStamp`:
   * files changed in place (issue 35), analysed again with `changedFile`. Optional: without it nothing is re-analysed.
   */
  changedProviderIds?(serverId: string, tracks: ReadonlyArray<{ id: string; fileStamp?: string }>): Promise<Set<string>>;
  resolve(request: ResolveIdentityRequest): Promise<ResolveIdentityResponse>;
  /**
   * Of these mapped provider ids of a server, those whose song has no learned features from `want.model`
   * (tagsModel differs or is null) or no vector of `want.embedderVersion` (an embedder switch), one provider id
   * per song: provider id -> song id.
   */
  songsNeedingTags(serverId: string, providerIds: string[], want: LearnedTarget): Promise<Map<string, string>>;
  /** Replaces a song's learned features, and adds its vector of another embedder version when given (PUT /internal/tracks/:itemId/learned). */
  storeLearned(itemId: string, learned: StoreLearnedFeaturesRequest): Promise<void>;
  /** Where the catalogue stands in an embedder switch; the call switches when the target version covers the catalogue (GET /internal/embedding/switch). */
  embeddingSwitch(): Promise<EmbeddingSwitchStatus>;
  /** Stores the outcome of a lyrics lookup (PUT /internal/tracks/:itemId/lyrics). */
  storeLyrics(itemId: string, outcome: PutLyricsRequest): Promise<void>;
  /** Songs without a lyrics lookup yet (GET /internal/lyrics/pending), for the backfill. */
  pendingLyrics(after: string | undefined, limit: number): Promise<LyricsPendingPage>;
  /**
   * Stores a song's recording fingerprint (PUT /internal/tracks/:itemId/fingerprint). Optional: a catalogue port
   * without it (tests, benchmarks) means songs are analysed without fingerprints.
   */
  storeFingerprint?(itemId: string, print: PutFingerprintRequest): Promise<void>;
  /**
   * Of these mapped provider ids of a server, those whose song has no recording fingerprint of the current landmark
   * codec version (none at all, or one an older codec wrote), one provider id per song: provider id -> song id
   * (POST /internal/fingerprints/missing with `codec`). The analysis run's backfill pass.
   */
  songsWithoutFingerprint?(serverId: string, providerIds: string[]): Promise<Map<string, string>>;
}

export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;

/** What the analysis needs from the index service: the generation every replica serves (GET /internal/index/live). */
export interface IndexPort {
  /** The answering replica's generation plus every replica's heartbeat report (`IndexLive`). */
  live(): Promise<IndexLive>;
}

/**
 * Final outcomes of one track in one run. `retagged`: an already-mapped song got its missing (or other-model) MusiCNN
 * tags, nothing else changed. `fingerprinted`: an already-mapped song without a recording fingerprint got one (the
 * backfill: audio fetched and fingerprinted, nothing re-analysed).
 */
export type TrackOutcome = 'analyzed' | 'mapped_existing' | 'skipped_mapped' | 'retagged' | 'fingerprinted' | 'failed' | 'excluded' | 'cancelled';

/** What a claim found: the claim is ours, the track is final, another live attempt holds it, or there is no run row. */
export type TrackClaim = { state: 'claimed' } | { state: 'absent' } | { state: 'final'; outcome: TrackOutcome } | { state: 'busy'; until: Date };

/** A run's per-track state as the track workers use it (analysis.run_tracks and analysis.exclusions; store/run.repository.ts). */
export interface TrackClaimStore {
  /** Whether the run was cancelled. */
  isCancelled(runId: string): Promise<boolean>;
  /** Claims a queued track for one processing attempt (`owner`) for `leaseSeconds` (database clock). */
  claimTrack(runId: string, serverId: string, providerId: string, owner: string, leaseSeconds: number): Promise<TrackClaim>;
  /** Extends `owner`'s live claim; false when it is no longer `owner`'s or the track is final. */
  renewClaim(runId: string, serverId: string, providerId: string, owner: string, leaseSeconds: number): Promise<boolean>;
  /** Gives `owner`'s claim back (the attempt ended without an outcome). */
  releaseClaim(runId: string, serverId: string, providerId: string, owner: string): Promise<void>;
  /** Records a track's final outcome; false when it already had one. */
  recordOutcome(runId: string, serverId: string, providerId: string, outcome: TrackOutcome, itemId?: string, error?: string): Promise<boolean>;
  /** Excludes a file (undecodable or unreadable) until its metadata hash changes, with what the server reported of it. */
  exclude(serverId: string, file: ExcludedFile, metadataHash: string, code: UnanalyzableReasonCode, reason: string): Promise<void>;
}

/** What the server reported of an excluded file (kept for the Browse page). */
export interface ExcludedFile {
  providerId: string;
  title: string;
  artist: string;
  album?: string | null;
  path?: string | null;
  durationSeconds?: number | null;
}

/** A file the analysis skipped and why. */
export interface Exclusion {
  serverId: string;
  providerId: string;
  reason: string;
}

/** The excluded files (analysis.exclusions). */
export interface ExclusionStore {
  /** The newest 1,000 exclusions of one server, or of every server. */
  exclusions(serverId?: string): Promise<Exclusion[]>;
  /** Browse rows of the excluded files (newest first), with a substring filter over title, artist, album and path. */
  unanalyzable(serverId: string | undefined, q: string | undefined, limit: number, offset: number): Promise<Array<Omit<BrowseUnanalyzableRowDto, 'server' | 'reason'>>>;
  /** Excluded files of the same selection, counted up to `cap + 1`. */
  countUnanalyzable(serverId: string | undefined, q: string | undefined, cap: number): Promise<number>;
  /** The dashboard's analysis numbers: files excluded, tracks waiting, active coordinators. */
  stats(): Promise<{ unanalyzable_tracks: number; queue_backlog: number; active: number }>;
}

/** Durable per-server state of a run (one row per server, in analysis order). */
export interface RunServerRow {
  serverId: string;
  serverName: string;
  position: number;
  status: 'pending' | 'running' | 'done' | 'failed' | 'cancelled';
  /** Tracks listed so far by the enumeration (reset when an interrupted enumeration starts over). */
  seen: number;
  /** Tracks skipped by the enumeration because their provider id was already mapped. */
  skippedMapped: number;
  /** Tracks skipped by the enumeration because they are excluded (undecodable, same metadata). */
  excluded: number;
  enumerated: boolean;
  /** Consecutive failed attempts to read the server's catalogue (reset by every page read). */
  failures: number;
  error?: string;
}

/** Per-outcome counts of the tracks of one server in one run (`queued`: enqueued, not finished). */
export type OutcomeCounts = Record<TrackOutcome | 'queued', number>;

/**
 * Persistence of analysis runs as the run coordinator uses it (store: store/run.repository.ts): the platform
 * task-run table `analysis.runs`, the durable per-server state of a run (`analysis.run_servers`), per-track
 * outcomes (one row per run, server and provider file) and exclusions. Writes taking a `lease` are fenced
 * (LeaseLostError once the run was cancelled or taken over).
 */
export interface AnalysisRunStore {
  /** The platform task-run store of `analysis.runs` (the task host drives it). */
  readonly tasks: TaskRunStore;
  /** Database clock (the index compares its build start with it). */
  now(): Promise<Date>;
  /** Creates the per-server rows once (a takeover finds them and keeps the original order). */
  initServers(lease: Lease, servers: Array<{ id: string; name: string }>): Promise<void>;
  /** The per-server rows of a run, in analysis order. */
  servers(runId: string): Promise<RunServerRow[]>;
  /** Updates a server row (fenced by the run's lease generation). */
  updateServer(lease: Lease, serverId: string, patch: Partial<Pick<RunServerRow, 'status' | 'seen' | 'skippedMapped' | 'excluded' | 'enumerated' | 'failures' | 'error'>>): Promise<void>;
  /** Provider ids among `providerIds` that already have a row (queued or finished) in this run. */
  inRun(runId: string, serverId: string, providerIds: string[]): Promise<Set<string>>;
  /** Records tracks as queued (not yet published); returns the provider ids that were new. */
  enqueue(runId: string, serverId: string, providerIds: string[]): Promise<string[]>;
  /** Marks queued tracks as published (the broker confirmed their messages). */
  markPublished(runId: string, serverId: string, providerIds: string[]): Promise<void>;
  /** Queued tracks whose message was never confirmed (a coordinator stopped between insert and publish). */
  unpublished(runId: string, serverId: string, limit: number): Promise<string[]>;
  /**
   * Records a track's final outcome once: a queued row becomes final, an absent row is inserted, a
   * final row is never changed (a redelivered message does not count twice). Returns false when a
   * final outcome was already recorded.
   */
  recordOutcome(runId: string, serverId: string, providerId: string, outcome: TrackOutcome, itemId?: string, error?: string): Promise<boolean>;
  /** Outcome counts per server of one run. */
  outcomeCounts(runId: string): Promise<Map<string, OutcomeCounts>>;
  /** Exclusion of a provider file, if its metadata hash still matches. */
  isExcluded(serverId: string, providerIds: string[], hashes: Map<string, string>): Promise<Set<string>>;
}

/** One server's change-detection state (analysis.change_watch), as a claim returns it. */
export interface WatchState {
  serverId: string;
  /** The library's change token at the last successful check; null before the first (the baseline). */
  token: string | null;
  failures: number;
}

/** What a finished check writes back. */
export interface WatchOutcome {
  token: string | null;
  /** Seconds until the next check (the interval, or the backoff after a failure). */
  nextCheckSeconds: number;
  failures: number;
  lastError: string | null;
  /** The library changed: when it did and what it added and removed (left as they were otherwise). */
  change?: { added: number; removed: number };
}

/** The change detection's durable state and leases (analysis.change_watch; store/change-watch.repository.ts). */
export interface ChangeWatchStore {
  /** Creates the missing rows of these servers (due at once) and removes the rows of servers no longer listed. */
  sync(serverIds: string[]): Promise<void>;
  /**
   * Leases the due rows among `serverIds` (next check passed, or nudged, or - `intervalSeconds` aligned with
   * `serverIds`, the servers' current intervals - a last successful check older than the current interval, so a
   * shortened interval takes effect at once) to `owner` for `leaseSeconds`; a row leased by another live owner is
   * skipped, so one replica checks a server at a time. Consumes the nudge.
   */
  claimDue(serverIds: string[], owner: string, leaseSeconds: number, intervalSeconds?: number[]): Promise<WatchState[]>;
  /** Extends `owner`'s lease; false when the lease is no longer `owner`'s. */
  renew(serverId: string, owner: string, leaseSeconds: number): Promise<boolean>;
  /** Writes a check's outcome and releases the lease (only while `owner` holds it). */
  finish(serverId: string, owner: string, outcome: WatchOutcome): Promise<void>;
  /** Marks the server's check as wanted now (a webhook call); false for an unknown server row. */
  nudge(serverId: string): Promise<boolean>;
  /** Releases every lease `owner` holds (graceful stop: another replica checks at once). */
  releaseAll(owner: string): Promise<void>;
  /** Of these provider files, those with a published, unfinished analysis request younger than `maxAgeSeconds` (any run or batch). */
  inFlight(serverId: string, providerIds: string[], maxAgeSeconds: number): Promise<Set<string>>;
  /** Whether a full analysis run is live (NEW or RUNNING). */
  fullRunLive(): Promise<boolean>;
  /** Deletes finished track rows of change batches (no run row) older than `days`; returns how many. */
  pruneBatches(days: number): Promise<number>;
  /** Every server's state for the status view. */
  list(): Promise<Array<{ serverId: string; token: string | null; nextCheckAt: Date; checkedAt: Date | null; changedAt: Date | null; failures: number; lastError: string | null; lastAdded: number; lastRemoved: number }>>;
}
