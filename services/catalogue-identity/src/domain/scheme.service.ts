/**
 * Start-time id-scheme check and one-time relabel (spec "Content identity" 4, "Versioning" 2; issue 4
 * "Scheme versions and legacy relabelling"). Runs in the service's start hook, never through the job
 * queue:
 *
 * 1. One transaction takes the catalogue write lock EXCLUSIVE (waits for in-flight resolves of any
 *    replica, blocks new ones) and reads the stored state.
 * 2. Stored version == CATALOGUE_ID_SCHEME_VERSION and same band layout: commit, done (an instant no-op:
 *    one lock and one single-row read).
 * 3. Fresh catalogue (no state, no rows): the state row is written with the configured version.
 * 4. Otherwise the domain planner (relabel.ts) runs over the stored rows in chunks read by a bounded
 *    pool (scheme.repository.ts PgRelabelSource), its plans are applied in the same transaction together
 *    with the old -> new map for the index (relabel_map) and the new state; then commit.
 * 5. After commit: catalogue.ids.relabelled.v1 and catalogue.mapping.changed.v1 (no server: all
 *    servers) are published; the index repoints its ids from GET /internal/ids/relabel-map or rebuilds.
 *
 * A configured version LOWER than the stored one is refused (ids are never relabelled backwards): the
 * catalogue stays at its version and a warning is logged.
 */
import { type IdsRelabelledEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';
import { type BandLayout, bandLayoutForTolerance } from './identity/bands';
import { type RelabelChunkPlan, type RelabelRowSource, type RelabelSummary, planRelabel } from './identity/relabel';
import { type SchemeVersion, asSchemeVersion } from './identity/scheme';
import type { CatalogueSettings } from '../settings';
import type { ActiveScheme } from './identity.service';
import type { MappingChangedPublisher } from './mapping-events';

/** The stored scheme state. */
export interface SchemeState {
  readonly version: number;
  readonly bandLayoutId: string;
  readonly relabelledAt: Date | null;
}

/** Counts of an applied relabel. */
export interface AppliedRelabel {
  readonly renamed: number;
  readonly merged: number;
  readonly detachedMappings: number;
  readonly signaturesIndexed: number;
}

/** One page of the old -> new id map of a relabel; `next` is the last old id of a full page (null at the end). */
export interface RelabelMapPage {
  entries: Array<{ oldId: string; newId: string; kind: 'relabel' | 'merge' | 'unsignable' }>;
  next: string | null;
}

/** Collects a relabel's chunk plans and applies them at the end, in the scheme transaction. */
export interface RelabelPlanWriter {
  /** Stores one chunk plan (passed to planRelabel as its sink). */
  readonly sink: (plan: RelabelChunkPlan) => Promise<void>;
  /** Applies every stored plan and records the map for `toVersion`. */
  apply(toVersion: number): Promise<AppliedRelabel>;
}

/** What the scheme check reads and writes inside its transaction (which holds the catalogue write lock). */
export interface SchemeTx {
  /** The state row, locked (null on a fresh catalogue). */
  readState(): Promise<SchemeState | null>;
  /** Writes the state row; `relabelled` stamps relabelled_at. */
  writeState(version: number, bandLayoutId: string, relabelled: boolean): Promise<void>;
  /** Number of score rows. */
  countScores(): Promise<number>;
  /** Recomputes the signature band index for `layout`, `chunkSize` rows at a time; returns the songs indexed. */
  rebuildBandIndex(layout: BandLayout, chunkSize: number): Promise<number>;
  /** A plan writer of this transaction (its scratch tables are created here and dropped at commit). */
  relabelWriter(layout: BandLayout, chunkSize: number): Promise<RelabelPlanWriter>;
  /** Reads score rows for the planner on other pool connections, `concurrency` chunks in flight. */
  relabelSource(concurrency: number): RelabelRowSource;
}

/** Port of the scheme's storage; implemented by store/scheme.repository.ts (PgSchemeRepository). */
export interface SchemeStorePort {
  /** Runs `fn` in one transaction holding the catalogue write lock: commits when it resolves, rolls back when it throws. */
  underWriteLock<T>(fn: (tx: SchemeTx) => Promise<T>): Promise<T>;
  /** One page of the old -> new map of the relabel to `toVersion`, keyset-paged by old id. */
  relabelMap(toVersion: number, after: string | undefined, limit: number): Promise<RelabelMapPage>;
}

/** What the start-time check did. */
export interface SchemeStartReport {
  readonly active: ActiveScheme;
  /** 'noop': already current; 'initialised': fresh catalogue; 'relabelled': the relabel ran. */
  readonly action: 'noop' | 'initialised' | 'relabelled';
  /** Stored version before the check (null on a fresh catalogue). */
  readonly fromVersion: number | null;
  /** Band index rebuilt for a new layout. */
  readonly bandsRebuilt: boolean;
  readonly summary?: RelabelSummary;
  readonly applied?: AppliedRelabel;
  /** Time spent planning (reading rows, deciding), ms; 0 without a relabel. */
  readonly planMs: number;
  /** Time spent applying the plans (all table writes), ms; 0 without a relabel. */
  readonly applyMs: number;
  /** Wall time of the check, ms. */
  readonly elapsedMs: number;
}

/** Options of the relabel. */
export interface SchemeServiceOptions {
  /** Score rows per chunk. */
  readonly chunkSize: number;
  /** Chunk reads in flight; capped at poolSize - 1 (one pool connection holds the relabel transaction). */
  readonly concurrency: number;
  /** Connection pool size of the DataSource (DB_POOL_SIZE); must be at least 2 for a relabel. */
  readonly poolSize: number;
}

/** Start-time scheme check and relabel. */
export class SchemeService {
  constructor(
    private readonly store: SchemeStorePort,
    private readonly settings: CatalogueSettings,
    private readonly bus: Bus,
    private readonly events: MappingChangedPublisher,
    private readonly logger: Logger,
    private readonly options: SchemeServiceOptions,
  ) {}

  /**
   * One page of the old -> new id map of the relabel to `toVersion` (GET /internal/ids/relabel-map:
   * index replicas repoint with it), keyset-paged by old id; `next` is the last old id of a full page.
   */
  relabelMap(toVersion: number, after: string | undefined, limit: number): Promise<RelabelMapPage> {
    return this.store.relabelMap(toVersion, after, limit);
  }

  /**
   * Brings the catalogue to the configured scheme version (see module docs).
   * @returns what was done and the scheme to resolve with.
   * @throws database errors (the transaction is rolled back; the next start retries).
   */
  async ensureCurrent(): Promise<SchemeStartReport> {
    const started = Date.now();
    this.settings.invalidate();
    const tunables = await this.settings.get();
    const configured = asSchemeVersion(tunables.identity.schemeVersion);
    const layout: BandLayout = bandLayoutForTolerance(tunables.identity.signatureMaxHamming);
    const report = await this.store.underWriteLock(async (tx): Promise<Omit<SchemeStartReport, 'elapsedMs'>> => {
      const state = await tx.readState();
      let target: SchemeVersion = configured;
      if (state && state.version > configured) {
        this.logger.warn('CATALOGUE_ID_SCHEME_VERSION is lower than the catalogue; ids are never relabelled backwards', { stored: state.version, configured });
        target = asSchemeVersion(state.version);
      }
      const active = { version: target, layout };
      const bandsStale = state !== null && state.bandLayoutId !== layout.id;
      if (state && state.version === target && !bandsStale) return { active, action: 'noop', fromVersion: state.version, bandsRebuilt: false, planMs: 0, applyMs: 0 };
      if (!state && (await tx.countScores()) === 0) {
        await tx.writeState(target, layout.id, false);
        return { active, action: 'initialised', fromVersion: null, bandsRebuilt: false, planMs: 0, applyMs: 0 };
      }
      let bandsRebuilt = false;
      if (bandsStale || !state) {
        const n = await tx.rebuildBandIndex(layout, this.options.chunkSize);
        this.logger.info('signature band index rebuilt', { layout: layout.id, songs: n });
        bandsRebuilt = true;
      }
      if (state && state.version === target) {
        await tx.writeState(target, layout.id, false);
        return { active, action: 'noop', fromVersion: state.version, bandsRebuilt, planMs: 0, applyMs: 0 };
      }
      const writer = await tx.relabelWriter(layout, this.options.chunkSize);
      if (this.options.poolSize < 2) throw new Error('the relabel needs DB_POOL_SIZE >= 2 (one connection holds its transaction, others read)');
      const source = tx.relabelSource(Math.max(1, Math.min(this.options.concurrency, this.options.poolSize - 1)));
      const expectedRows = await tx.countScores();
      const t0 = Date.now();
      const summary = await planRelabel(source, { ...tunables.identity, schemeVersion: target }, writer.sink, { chunkSize: this.options.chunkSize, layout, expectedRows });
      const t1 = Date.now();
      const applied = await writer.apply(target);
      await tx.writeState(target, layout.id, true);
      return { active, action: 'relabelled', fromVersion: state?.version ?? null, bandsRebuilt, summary, applied, planMs: t1 - t0, applyMs: Date.now() - t1 };
    });
    const elapsedMs = Date.now() - started;
    if (report.action === 'relabelled' && report.summary) {
      const s = report.summary;
      this.logger.info('catalogue ids relabelled', { from: report.fromVersion, to: report.active.version, ...s, elapsedMs });
      const event: IdsRelabelledEvent = { toVersion: report.active.version, relabelled: s.relabelled, merged: s.merged, unsignable: s.unsignable, detachedMappings: s.detachedMappings };
      try {
        await this.bus.publish(RoutingKeys.idsRelabelled, event);
        await this.events.now({ reason: 'relabel' });
      } catch (err) {
        this.logger.warn('relabel events not published', { err: (err as Error).message });
      }
    }
    return { ...report, elapsedMs };
  }
}
