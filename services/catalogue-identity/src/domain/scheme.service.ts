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
 *    pool (scheme.store.ts PgRelabelSource), its plans are applied in the same transaction together
 *    with the old -> new map for the index (relabel_map) and the new state; then commit.
 * 5. After commit: catalogue.ids.relabelled.v1 and catalogue.mapping.changed.v1 (no server: all
 *    servers) are published; the index repoints its ids from GET /internal/ids/relabel-map or rebuilds.
 *
 * A configured version LOWER than the stored one is refused (ids are never relabelled backwards): the
 * catalogue stays at its version and a warning is logged.
 */
import type { DataSource } from 'typeorm';
import { type IdsRelabelledEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';
import { type BandLayout, bandLayoutForTolerance } from './identity/bands';
import { type RelabelSummary, planRelabel } from './identity/relabel';
import { type SchemeVersion, asSchemeVersion } from './identity/scheme';
import type { CatalogueSettings } from '../settings';
import { CATALOGUE_WRITE_LOCK, lockExclusive } from '../store/locks';
import { type AppliedRelabel, PgRelabelSource, RelabelWriter, countScores, readSchemeState, rebuildBandIndex, relabelMapPage, writeSchemeState } from '../store/scheme.store';
import type { ActiveScheme } from './identity.service';
import type { MappingChangedPublisher } from './mapping-events';

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
    private readonly ds: DataSource,
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
  relabelMap(toVersion: number, after: string | undefined, limit: number): ReturnType<typeof relabelMapPage> {
    return relabelMapPage(this.ds, toVersion, after, limit);
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
    const q = this.ds.createQueryRunner();
    await q.connect();
    let report: Omit<SchemeStartReport, 'elapsedMs'>;
    try {
      await q.startTransaction();
      try {
        await lockExclusive(q, [CATALOGUE_WRITE_LOCK]);
        const state = await readSchemeState(q, true);
        let target: SchemeVersion = configured;
        if (state && state.version > configured) {
          this.logger.warn('CATALOGUE_ID_SCHEME_VERSION is lower than the catalogue; ids are never relabelled backwards', { stored: state.version, configured });
          target = asSchemeVersion(state.version);
        }
        const bandsStale = state !== null && state.bandLayoutId !== layout.id;
        if (state && state.version === target && !bandsStale) {
          report = { active: { version: target, layout }, action: 'noop', fromVersion: state.version, bandsRebuilt: false, planMs: 0, applyMs: 0 };
        } else if (!state && (await countScores(q)) === 0) {
          await writeSchemeState(q, target, layout.id, false);
          report = { active: { version: target, layout }, action: 'initialised', fromVersion: null, bandsRebuilt: false, planMs: 0, applyMs: 0 };
        } else {
          let bandsRebuilt = false;
          if (bandsStale || !state) {
            const n = await rebuildBandIndex(q, layout, this.options.chunkSize);
            this.logger.info('signature band index rebuilt', { layout: layout.id, songs: n });
            bandsRebuilt = true;
          }
          if (state && state.version === target) {
            await writeSchemeState(q, target, layout.id, false);
            report = { active: { version: target, layout }, action: 'noop', fromVersion: state.version, bandsRebuilt, planMs: 0, applyMs: 0 };
          } else {
            const writer = new RelabelWriter(q, layout, this.options.chunkSize);
            await writer.begin();
            if (this.options.poolSize < 2) throw new Error('the relabel needs DB_POOL_SIZE >= 2 (one connection holds its transaction, others read)');
            const source = new PgRelabelSource(this.ds, Math.max(1, Math.min(this.options.concurrency, this.options.poolSize - 1)));
            const expectedRows = await countScores(q);
            const t0 = Date.now();
            const summary = await planRelabel(source, { ...tunables.identity, schemeVersion: target }, writer.sink, { chunkSize: this.options.chunkSize, layout, expectedRows });
            const t1 = Date.now();
            const applied = await writer.apply(target);
            await writeSchemeState(q, target, layout.id, true);
            const planMs = t1 - t0;
            const applyMs = Date.now() - t1;
            report = { active: { version: target, layout }, action: 'relabelled', fromVersion: state?.version ?? null, bandsRebuilt, summary, applied, planMs, applyMs };
          }
        }
        await q.commitTransaction();
      } catch (err) {
        await q.rollbackTransaction();
        throw err;
      }
    } finally {
      await q.release();
    }
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
