import type { CooperativeScheduler, IvfIndex, KeptCells, KeptCodes } from '@polyphony/vector-engine';
import type { ArtistReuse } from '../artists/artist-model';
import type { MapMethod, ReuseLineage } from '../core/generation';
import { VECTOR_DIM } from '../core/track.repository';
import type { BallBasis } from '../hyperbolic/ball';
import type { PcaBasis } from '../maps/projection';
import type { BuildHost, RebuildOutcome } from './build-types';
import { GenerationReuse, RowMatcher, reuseLineage } from './reuse';

/* What one build (build-run.ts) takes over from the serving generation (generation/reuse.ts, issue 35): the row match,
   the kept IVF cells, basis, map, artist mixtures, codes and ball basis, and the lineage the new generation carries. */

/**
 * The reuse decisions of one build, in the order its phases ask: the fed rows are matched with the serving
 * generation as they stream (`startMatch`, `matcher`), the fed build asks for kept cells (`keptCells`), the map phase
 * for the kept basis and map (`map`), then the artists, quantisation and activation for what follows from those;
 * `lineage` gives the new generation's reuse lineage. `report` is the build outcome's `reuse` (absent when nothing was compared).
 */
export class BuildReuse {
  /** The fed rows matched with the serving generation as they stream (reuse on and a serving generation); dropped with the feed. */
  matcher: RowMatcher | undefined;
  /** The reuse plan from the matcher (taken when the fed build asks for kept cells). */
  private matched: GenerationReuse | undefined;
  /** The plan whose basis and map this build kept (set by `map`). */
  private kept: GenerationReuse | undefined;
  /** The fed build kept the serving generation's IVF cells. */
  cellsKept = false;
  private refusalNoted = false;
  report: RebuildOutcome['reuse'];

  constructor(private readonly host: BuildHost) {}

  /** Starts matching the fed rows (about `expected` of them) when reuse is on and a serving generation with a basis exists. */
  startMatch(expected: number | undefined): void {
    const prev = this.host.state.current();
    if (this.host.settings.reuseMaxChanged > 0 && prev.generation !== 0 && prev.index.size > 0 && prev.pca) this.matcher = new RowMatcher(prev, expected ?? 1024);
  }

  /**
   * Asked by the fed build after its ingest: the serving generation's cells when the rows matched while streaming
   * change at most `reuseMaxChanged` of the catalogue and its cells are balanced enough (`GenerationReuse.keptCells`),
   * else undefined (k-means). The match is kept for the map and artists either way. `feedStopped`: the feed was
   * stopped (read-back path), nothing is kept.
   */
  keptCells(count: number, version: string | undefined, feedStopped: boolean): KeptCells | undefined {
    const m = this.matcher;
    this.matcher = undefined;
    if (!m || feedStopped) return undefined;
    if (m.failure) this.host.note(`rows not matched while streaming (${m.failure}); matched after the build`);
    const plan = GenerationReuse.fromMatcher(m, count, version ?? null, VECTOR_DIM);
    if (!plan) return undefined;
    this.matched = plan;
    this.report = { changed: plan.changed, removed: plan.removed, fraction: plan.fraction, map: false, artistsKept: 0, artistsFitted: 0, matchMs: m.ms, matchedInSnapshot: true, cellsKept: false, cellsPlaced: 0 };
    if (plan.fraction > this.host.settings.reuseMaxChanged || this.refused(plan)) return undefined;
    const kept = plan.keptCells(this.host.settings.reuseMaxCellImbalance);
    this.host.note(kept ? `IVF cells kept (${kept.cells.nlist} cells, imbalance ${kept.imbalance.toFixed(1)}): ${plan.changed} rows to place` : 'IVF cells retrained: the serving generation has none or they are too uneven');
    this.cellsKept = kept !== undefined;
    return kept?.cells;
  }

  /** Records what the IVF build did with the kept cells (`placed` rows placed at their nearest centroid). */
  built(placed: number): void {
    if (!this.report) return;
    this.report.cellsKept = this.cellsKept;
    this.report.cellsPlaced = placed;
  }

  /**
   * Why this build must not keep the serving generation's cells, basis or map although few rows changed: it was
   * requested for measured drift (`BuildHost.fresh`), or the lineage's cumulative drift (`reuseLineage`) would pass
   * `reuseMaxDrift`. Notes the reason once; undefined = reuse allowed.
   */
  private refused(plan: GenerationReuse): string | undefined {
    const { carried, drift } = reuseLineage(plan);
    const why = this.host.fresh
      ? 'requested for measured drift'
      : drift > this.host.settings.reuseMaxDrift
        ? `${carried.placedRows} rows placed without training since the lineage's ${carried.trainedRows}-row root (${drift.toFixed(3)} > ${this.host.settings.reuseMaxDrift})`
        : undefined;
    if (why && !this.refusalNoted) {
      this.refusalNoted = true;
      this.host.note(`trained afresh (no cells, basis or map kept): ${why}`);
    }
    return why;
  }

  /**
   * The new generation's reuse lineage: carried on from the serving generation when this build kept its cells or its
   * map (`reuseLineage`), else the build is the root (its rows trained, nothing placed). Recorded in the report.
   */
  lineage(size: number): ReuseLineage {
    const plan = this.kept ?? this.matched;
    const lineage = plan && (this.cellsKept || this.report?.map) ? reuseLineage(plan).carried : { trainedRows: size, placedRows: 0 };
    if (this.report) this.report.lineage = lineage;
    return lineage;
  }

  /**
   * The serving generation's basis and map carried over (generation/reuse.ts) when this build changes at most
   * `reuseMaxChanged` of the rows; undefined (full layout) otherwise. The artists, codes and ball follow this answer.
   */
  async map(index: IvfIndex, version: string | undefined, scheduler: CooperativeScheduler): Promise<{ pca: PcaBasis; coords: Float32Array; mapMethod: MapMethod } | undefined> {
    this.kept = undefined;
    const max = this.host.settings.reuseMaxChanged;
    const prev = this.host.state.current();
    if (!(max > 0) || prev.generation === 0) return undefined;
    const t = performance.now();
    const plan = this.matched ?? (await GenerationReuse.plan(prev, index, version ?? null, scheduler));
    if (!plan) return undefined;
    if (!this.matched) this.report = { changed: plan.changed, removed: plan.removed, fraction: plan.fraction, map: false, artistsKept: 0, artistsFitted: 0, matchMs: performance.now() - t, matchedInSnapshot: false, cellsKept: false, cellsPlaced: 0 };
    const kept = plan.fraction <= max && !this.refused(plan) ? await plan.map(index, scheduler) : undefined;
    this.host.note(`${kept ? 'map, basis and unchanged artists kept' : 'full layout'}: ${plan.changed} of ${index.size} songs changed, ${plan.removed} removed (reuse up to ${max})`);
    if (!kept) return undefined;
    this.kept = plan;
    if (this.report) this.report.map = true;
    return kept;
  }

  /**
   * With the serving generation's basis kept (same prior), unchanged artists keep their mixtures: the `ArtistModel.fit`
   * reuse callback (undefined = fit every artist) and, after the fit, `artistsFitted(total)` records the counts.
   */
  artists(): { keep: ArtistReuse | undefined; artistsFitted: (total: number) => void } {
    const keep = this.kept?.artists();
    let count = 0;
    return {
      keep: keep
        ? (key, rows) => {
            const fit = keep(key, rows);
            if (fit) count++;
            return fit;
          }
        : undefined,
      artistsFitted: (total) => {
        if (!this.report) return;
        this.report.artistsKept = count;
        this.report.artistsFitted = total - count;
      },
    };
  }

  /** On kept cells, the serving generation's quantiser and the codes of unchanged rows (generation/reuse.ts); else undefined. */
  keptCodes(mode: 'int8' | 'pq', pqM: number): KeptCodes | undefined {
    return this.cellsKept ? this.matched?.keptCodes(mode, pqM) : undefined;
  }

  /** Reuse on and the map kept: the serving generation's ball basis and its unchanged rows (GenerationReuse.keptBallBasis). */
  keptBallBasis(index: IvfIndex): BallBasis | undefined {
    const carried = this.host.settings.reuseMaxChanged > 0 ? this.kept?.keptBallBasis(index) : undefined;
    if (carried && this.report) this.report.ballKept = true;
    return carried;
  }
}
