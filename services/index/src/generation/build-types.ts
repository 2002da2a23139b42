import type { Lease, Logger } from '@polyphony/platform';
import type { VectorStoreSettings } from '../config';
import type { IndexState, ReuseLineage } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { MapFollower } from '../maps/generation-maps';
import type { GenerationStore, TrackCopy } from './ports';
import type { FeedBaseHolder } from './snapshot-delta';

/* The types of one index build (build-run.ts): what it reports, its tunables, what it uses of its service. */

/** What a finished build reports. */
export interface RebuildOutcome {
  generation: number;
  items: number;
  nlist: number;
  deletedTracks: number;
  skippedTracks: number;
  timingsMs: { snapshot: number; build: number; projection: number; artists: number; quantise: number; activate: number; cleanup: number; total: number };
  /** Snapshot wall time spent waiting for the catalogue's pages (fetch, JSON parse and validation not overlapped with writing) and waiting for the writes into `index.tracks` (a free writer, then the last writes), ms. */
  snapshotMs: { waitForPages: number; writeCopy: number };
  /** Process CPU time (user + system, every thread: the build and map workers included) of the same phases, ms. */
  cpuMs: { snapshot: number; build: number; projection: number; artists: number; quantise: number; activate: number; cleanup: number; total: number };
  /**
   * The IVF build itself (ivf-build.ts report, wall ms): ingest (during the snapshot when fed from it), train,
   * assign, arrange, emit (cells written to `index.cells` as they are emitted); `fedFromSnapshot` says which input path ran.
   */
  ivf: { ingest: number; train: number; assign: number; arrange: number; emit: number; total: number; fedFromSnapshot: boolean };
  /**
   * What the build took over from the generation it replaces (generation/reuse.ts): rows changed (new id or new
   * vector) and removed, their share, whether the basis and map were kept, how many artist mixtures were kept and
   * fitted, and the wall ms of matching the rows (part of the projection phase). Absent when nothing was compared.
   */
  reuse?: {
    changed: number;
    removed: number;
    fraction: number;
    map: boolean;
    artistsKept: number;
    artistsFitted: number;
    /** Wall ms of matching the rows: on the snapshot loop while pages streamed (`matchedInSnapshot`), else after the IVF build. */
    matchMs: number;
    matchedInSnapshot: boolean;
    /** The IVF build kept the serving generation's centroids and cells (no k-means); `cellsPlaced` rows were placed at their nearest centroid. */
    cellsKept: boolean;
    cellsPlaced: number;
    /** Quantised modes on kept cells: the serving generation's quantiser was kept and only this many rows encoded (the rest copied); absent otherwise. */
    codesEncoded?: number;
    /** The new generation's reuse lineage (root rows, rows placed without training since). */
    lineage?: ReuseLineage;
    /** The serving generation's ball basis was carried over and its unchanged rows handed to the new ball (copied, not projected). */
    ballKept?: boolean;
  };
  /**
   * The delta snapshot (issue 35, snapshot-delta.ts): the catalogue's change feed listed `listed` songs since the
   * serving generation's mark; `reread` songs were read by id (the listed ones, live appends, rows whose vector is not
   * a normalisation fixed point), `kept` rows were taken from the serving generation, `removed` ids left; `ms` = wall
   * ms of reading the feed and planning. Absent when the build read the full snapshot (`fullReason` then says why,
   * when the change feed was asked).
   */
  delta?: { listed: number; reread: number; kept: number; removed: number; ms: number };
  fullReason?: string;
  /**
   * Wall ms inside the activation: maps and display metadata loaded (`load`; of it, the maps alone under the way they
   * came: `maps.carried` from the serving generation's after a delta snapshot, MapFollower.carry, or `maps.loaded` from
   * the catalogue's pages), per-generation tables prepared (and `prepare.<task>`: each task's span from its start to its
   * end; they share the event loop), `stores`: the wait for the generation's parts written in the background (cells,
   * codes, artists, links; BackgroundStores), the database transaction.
   */
  activateMs: { load: number; prepare: number; commit: number; stores?: number; 'maps.carried'?: number; 'maps.loaded'?: number; [span: `prepare.${string}`]: number };
}

/** The build's tunables (RebuildOptions with defaults applied). */
export interface BuildSettings {
  snapshotPageSize: number;
  vectorBatchSize: number;
  snapshotWriters: number;
  cellFlushBytes: number;
  feedFromSnapshot: boolean;
  /** Keep the serving generation's basis, map, artist mixtures and IVF cells when at most this share of rows changed (0 = never; `INDEX_BUILD_REUSE_MAX_CHANGED`). */
  reuseMaxChanged: number;
  /** Keep the serving generation's IVF cells only while its largest cell / mean cell is at most this (`INDEX_LIVE_MAX_CELL_IMBALANCE`). */
  reuseMaxCellImbalance: number;
  /** Keep nothing once the lineage's rows placed without training pass this share of its root's rows (`INDEX_BUILD_REUSE_MAX_DRIFT`, reuse.ts). */
  reuseMaxDrift: number;
}

/** What one build uses of its service: stores, peers, the live state, and where it reports progress. */
export interface BuildHost {
  catalogue: CataloguePort;
  tracks: TrackCopy;
  generations: GenerationStore;
  state: IndexState;
  maps: MapFollower;
  logger: Logger;
  vectors: VectorStoreSettings;
  settings: BuildSettings;
  /** True when the build was requested for measured drift (the live library's `LIVE_DRIFT_REASON`): it keeps nothing of the serving generation. */
  fresh?: boolean;
  /** The lease of the build run: the activation is fenced by it (a coordinator that lost its run never activates). */
  fence?: Lease;
  /** The change-feed base of the serving generation, kept in memory between builds (snapshot-delta.ts); absent = no delta builds. */
  feedBase?: FeedBaseHolder;
  /** Appends a line to the task's log. */
  note(line: string): void;
  /** Reports RUNNING progress (percent 0-100) on the task board. */
  progress(percent: number, message: string): Promise<void>;
}
