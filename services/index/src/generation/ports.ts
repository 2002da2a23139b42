import type { SnapshotTrackBytes } from '@polyphony/contracts';
import type { Lease, TaskRun, TaskStore } from '@polyphony/platform';
import type { StoredCell } from '@polyphony/vector-engine';
import type { ArtistProfileRecord } from '../artists/artist-fit';
import type { MapMethod, ReuseLineage } from '../core/generation';
import type { TrackMeta, TrackVectorBatch } from '../core/track-records';
import type { FeedBase } from './snapshot-delta';

/** A build row (`index.builds`). */
export interface BuildRecord {
  generation: number;
  state: 'building' | 'live' | 'retired' | 'failed';
  taskId: string | null;
  dim: number | null;
  nlist: number | null;
  itemCount: number | null;
  centroids: Float32Array | null;
  pca: Float32Array | null;
  createdAt: Date;
  finishedAt: Date | null;
  /** Embedder version of the build's vectors; null when unknown (empty index, or built before it was recorded). */
  embedderVersion: string | null;
  /** Reuse lineage (`Generation.lineage`); undefined when the build is its own root (or was stored before lineages). */
  lineage?: ReuseLineage;
  /** The Poincaré ball's basis (`encodeBallBasis` bytes); null = fitted by each replica. */
  ball: Buffer | null;
}

/** One completed cell as the build hands it over (copied: the build reuses its arrays). */
export interface CellRecord {
  cellId: number;
  rowIds: Int32Array;
  ids: string[];
  vectors: Float32Array;
}

/** The quantiser of a stored quantised generation (`index.quantisers`). */
export interface StoredQuantiserRecord {
  mode: 'int8' | 'pq';
  /** PQ sub-spaces (null for int8). */
  pqM: number | null;
  codeSize: number;
  /** `Quantiser.toParams()` values. */
  params: Float32Array;
}

/** The generations in the index schema as the build and the loader use them (store: generation.repository.ts). */
export interface GenerationStore {
  /** Inserts a `building` row and returns its generation number (a bigserial, so numbers only grow). */
  createBuild(taskId: string, reason: string): Promise<number>;
  /** Records the trained centroids and sizes of a build. */
  saveTrained(generation: number, dim: number, nlist: number, count: number, centroids: Float32Array): Promise<void>;
  /** Records the build's reuse lineage (before its activation). */
  saveLineage(generation: number, lineage: ReuseLineage): Promise<void>;
  /**
   * Records the build's delta base (snapshot-delta.ts `FeedBase`: change-feed mark and catalogue, row count, link
   * contributions) before its activation, for the next build of a replica that did not keep it in memory.
   */
  saveFeedBase(generation: number, base: FeedBase): Promise<void>;
  /** The delta base stored with `generation`; undefined when none was stored (or the build row is gone). @throws when stored bytes are unreadable */
  feedBase(generation: number): Promise<FeedBase | undefined>;
  /**
   * Writes completed cells in one multi-row INSERT: row ids and vectors travel as two binary parameters
   * cut per cell by offset/length; item ids as one newline-joined text per cell (canonical ids never
   * contain newlines; unnest cannot take an array of arrays of varying length).
   */
  saveCells(generation: number, cells: readonly CellRecord[]): Promise<void>;
  /**
   * Stores the quantiser and the codes of a quantised generation (issue 19: replicas load them instead of
   * encoding again). `cells` yields the codes of every non-empty cell (`codeSize` bytes per row, rows
   * ascending within the cell; `cellsOfCodes` cuts them from a slot-ordered array); written in multi-row
   * INSERTs of about `flushBytes` bytes, so a lazily encoded stream is never held whole. Replaces an earlier
   * copy of the same mode.
   */
  saveQuantised(generation: number, q: StoredQuantiserRecord, cells: Iterable<{ cellId: number; codes: Uint8Array }> | AsyncIterable<{ cellId: number; codes: Uint8Array }>, flushBytes?: number): Promise<void>;
  /** The stored quantiser of a generation in `mode`, or undefined. */
  quantiser(generation: number, mode: 'int8' | 'pq'): Promise<StoredQuantiserRecord | undefined>;
  /** Streams the stored codes of a generation in `mode`, 256 cells per query, in cell order. */
  cellCodes(generation: number, mode: 'int8' | 'pq'): AsyncGenerator<{ cellId: number; codes: Uint8Array }>;
  /** Stores the map projection (2 floats per row, made by `method`) and the PCA basis of a generation. */
  saveProjection(generation: number, coords: Float32Array, basis: Float32Array | null, method?: MapMethod): Promise<void>;
  /** Stores the Poincaré ball's basis of a generation (`encodeBallBasis` bytes; issue 35 reuse). */
  saveBallBasis(generation: number, basis: Buffer): Promise<void>;
  /**
   * Stores artist profiles of a generation, `ordinal` = artist number (the iteration order); batches of 2000
   * rows, arrays as packed binary parameters. The records are consumed lazily, one batch at a time.
   */
  saveArtists(generation: number, records: Iterable<ArtistProfileRecord>): Promise<void>;
  /** Stores the provider artist links of a generation; batches of 5000. */
  saveLinks(generation: number, links: Iterable<{ serverId: string; key: string; providerId: string }>): Promise<void>;
  /** Marks a build failed (its partial rows are removed by the next successful activation). */
  markFailed(generation: number, error: string): Promise<void>;
  /**
   * Makes `generation` the live one in a single transaction: the previous live build is retired and the
   * catalogue copy loses every track only older builds marked. The OLDER generations' rows (retired, failed,
   * abandoned: cells, projections, artists by cascade) are deleted afterwards, once it is served (`dropOlderBuilds`).
   * `embedderVersion` is recorded on the build (the space its vectors, and anchors saved against it, live in).
   * `fence`: the lease of the build run doing it; the transaction locks that run's row and throws LeaseLostError
   * (nothing changed) unless the run is still RUNNING under that lease generation (not cancelled, not taken over).
   * @returns number of catalogue-copy rows deleted
   */
  activate(generation: number, embedderVersion: string | null, fence?: Lease, removed?: readonly string[]): Promise<number>;
  /** Deletes the builds older than `generation` and their rows (after it went live; see GenerationRepository). */
  dropOlderBuilds(generation: number): Promise<number>;
  /** When the build of `generation` started (its snapshot began after this instant); undefined when unknown. */
  buildStartedAt(generation: number): Promise<Date | undefined>;
  /**
   * Marks failed every build still `building` whose build run is not RUNNING any more (its process stopped and the
   * run ended, or it predates build runs); a build whose run is RUNNING is left to that run (or its takeover).
   * @returns their generation numbers
   */
  failInterrupted(): Promise<number[]>;
  /** The live build, or undefined. */
  live(): Promise<BuildRecord | undefined>;
  /**
   * Streams the stored cells of a generation, 64 per query, in cell order. The item ids of a cell come as one
   * newline-joined text (canonical ids contain no newline; one split instead of node-postgres' character-level
   * array parser over a million ids).
   */
  cells(generation: number): AsyncGenerator<StoredCell>;
  /** Stored map coordinates of a generation and the method that made them, or undefined. */
  projection(generation: number): Promise<{ coords: Float32Array; method: MapMethod } | undefined>;
  /** Artists, mixture components and songs of the stored profiles of a generation (capacities for a streaming load). */
  artistTotals(generation: number): Promise<{ artists: number; components: number; songs: number }>;
  /** Streams the stored artist profiles of a generation in artist order, keyset paged by ordinal (`pageSize` per query). */
  artists(generation: number, pageSize?: number): AsyncGenerator<ArtistProfileRecord>;
  /** Stored artist links of a generation. */
  links(generation: number): Promise<Array<{ serverId: string; key: string; providerId: string }>>;
}

/** The build's side of the catalogue copy (`index.tracks`; store: core/track.repository.ts). */
export interface TrackCopy {
  /** Upserts one snapshot page, marked with build `build`; tracks whose vector is not 200 float32 values are skipped. */
  upsertSnapshot(tracks: readonly SnapshotTrackBytes[], build: number): Promise<{ written: number; skipped: string[] }>;
  /** Rows marked with build `build`. */
  countSeen(build: number): Promise<number>;
  /** The rows marked with build `build`, in canonical-id byte order, `batchSize` at a time. */
  streamVectors(build: number, batchSize?: number): AsyncGenerator<TrackVectorBatch>;
  /** Display metadata of every row, in pages. */
  streamMetadata(batchSize?: number): AsyncGenerator<TrackMeta[]>;
}

/** What one index replica serves, as it last reported it (`index.replicas`). */
export interface ReplicaReport {
  replicaId: string;
  /** Generation the replica answers queries from (0 = nothing built yet). */
  generation: number;
  /** Songs in that generation. */
  items: number;
  /** When that generation's build began (database clock); every song stored before it is in it. */
  buildStartedAt: Date | null;
  heartbeatAt: Date;
  /** Heart-beat within the window the caller gave (database clock). */
  live: boolean;
}

/** Every replica's heartbeat report (`index.replicas`; store: replica.repository.ts). */
export interface ReplicaStore {
  /** Every replica's last report; `live` = heart-beat within `liveWithinMs`. */
  list(liveWithinMs: number): Promise<ReplicaReport[]>;
}

/** What a build request got (build-queue.repository.ts). */
export interface BuildAdmission {
  /** The queued (NEW) build run that will serve the request. */
  run: TaskRun;
  /** True when the request starts no build of its own now: it joined the queued build, or one is running. */
  coalesced: boolean;
}

/**
 * The queue of index builds (`index.build_runs`; store: build-queue.repository.ts): the task store of the index-build
 * task host (at most one running and one queued build across replicas) and admission of requests into it.
 */
export interface BuildQueue extends TaskStore<TaskRun> {
  /**
   * Queues a build with id `id`, or joins the queued one (its reason and requester added). `since` (default now): the
   * newest change the request is about; the run's `requested_at` is the latest `since` of its requests.
   */
  request(id: string, reason: string, requesterTaskId?: string, since?: Date): Promise<BuildAdmission>;
  /** Queued and running builds (RUNNING first). */
  liveRuns(): Promise<TaskRun[]>;
  /** The live generation when its build started at or after the run's last request (it covers the run), else undefined. */
  coveringGeneration(runId: string): Promise<number | undefined>;
}
