import type { CooperativeScheduler } from '@polyphony/vector-engine';
import type { ArtistLinkCounter, Generation } from '../core/generation';
import { otherFeaturesOf, tagBytesOf } from '../core/track.repository';
import type { MappingTriple } from '../maps/generation-maps';
import type { SemanticDeltaSeed } from '../semantic/column-fill';
import type { BuildHost, RebuildOutcome } from './build-types';
import { LinkRecorder, mergeDelta, planDelta, type DeltaBatch, type FeedBase } from './snapshot-delta';

/* The delta snapshot of one build (build-run.ts phase 1; issue 35): where its base comes from (the build task's
   memory, else the serving generation's row in `index.builds`), the change feed asked, the plan, and the merged rows
   handed to the fed build. The planning and merging themselves are snapshot-delta.ts. */

/** The change-feed mark taken before a build read the catalogue, and the catalogue it belongs to. */
export interface FeedMark {
  mark: string;
  catalogue: string;
}

/** What the delta snapshot needs of its build's fed IVF build. */
export interface DeltaFeed {
  /** Starts the fed build for `expected` rows of embedder version `version`. */
  start(expected: number, version: string | undefined): void;
  /** Hands one batch of merged rows (build order) to the fed build. */
  feed(batch: DeltaBatch): void;
  /** Ends the feed (every row handed over). */
  end(): void;
}

/**
 * What a delta build needs to carry the serving generation's provider-id maps into its own (MapFollower.carry)
 * instead of loading them from the catalogue at activation.
 */
export interface DeltaMaps {
  /** The serving generation the kept rows were taken from. */
  generation: number;
  /** Per row of that generation (its size when the delta was read, live appends included): the row in the new one, or -1. */
  newRowOf: Int32Array;
  /** [serverId, providerId, itemId] of every mapping of the incoming (new and changed) rows. */
  incoming: MappingTriple[];
  /** The serving maps' log position read before the incoming rows were read. */
  since: number;
}

/** What the delta snapshot leaves its build. */
export interface DeltaRead {
  /** This build's own mark (absent when the change feed failed). */
  mark?: FeedMark;
  /** Records this build's link contributions (present with `mark`; the full snapshot goes on recording into it). */
  recorder?: LinkRecorder;
  /** Why the full snapshot runs (absent when the delta fed the build). */
  fullReason?: string;
  /** The delta that fed the build: the report, the ids that left the catalogue copy, wall ms of writing the copy. */
  delta?: { report: NonNullable<RebuildOutcome['delta']>; removed: string[]; writeMs: number };
  /** With `delta`: the text search's seed (each new row's base row, the changed rows' columns; `seedSemanticDelta`). */
  semantic?: SemanticDeltaSeed;
  /** With `delta`: what carries the serving generation's maps into the new one. */
  maps?: DeltaMaps;
}

/**
 * The delta base for a build over the serving generation `prev`: the one the build task holds in memory when it is
 * `prev`'s, else the one stored with `prev` (`GenerationStore.feedBase`: the first build after a restart, or on a
 * replica that did not build `prev`) when its recorded row count agrees with its link contributions and `prev` holds
 * at least that many rows; else undefined (full snapshot). A stored base that cannot be read costs the delta, not the build.
 */
export async function deltaBase(h: BuildHost, prev: Generation): Promise<FeedBase | undefined> {
  const held = h.feedBase?.get();
  if (held && held.generation === prev.generation) return held;
  if (prev.generation === 0) return undefined;
  const stored = await h.generations.feedBase(prev.generation).catch((err: unknown) => {
    h.note(`stored delta base of generation ${prev.generation} not read (${(err as Error).message})`);
    return undefined;
  });
  if (!stored) return undefined;
  if (stored.links.rows !== stored.rows || prev.index.size < stored.rows) {
    h.note(`stored delta base of generation ${prev.generation} not used: ${stored.rows} rows recorded, ${stored.links.rows} link rows, ${prev.index.size} rows served`);
    return undefined;
  }
  h.note(`delta base of generation ${prev.generation} read from its build row (mark ${stored.mark})`);
  h.feedBase?.set(stored);
  return stored;
}

/**
 * The delta snapshot (issue 35, snapshot-delta.ts), tried first when generation reuse is on and the build is fed from
 * the snapshot: the catalogue's change feed is asked for the songs changed since the delta base's mark (which also
 * gives this build its own mark, taken before anything is read); with a usable delta, only those songs are read (by
 * id), every other row is taken from the serving generation, the merged rows feed the build (`out`), the links are
 * counted into `links`, and only the changed rows are written into the catalogue copy. Anything else (no base, a mark
 * the catalogue refuses, too many changes, a fault of the feed) leaves the full snapshot to run (`fullReason`), with
 * the mark when one came back. With a delta it also leaves the build the serving rows' new rows and the incoming rows'
 * mappings (`maps`), with the serving maps' log position taken before anything was read.
 * @throws on abort, or a failed read or write of the delta (the build fails)
 */
export async function readDelta(h: BuildHost, generation: number, signal: AbortSignal, scheduler: CooperativeScheduler, links: ArtistLinkCounter, out: DeltaFeed): Promise<DeltaRead> {
  const t0 = performance.now();
  const prev = h.state.current();
  // Before any song is read (MapFollower.carry replays the log from here).
  const since = prev.maps.seq;
  const usable = await deltaBase(h, prev);
  const limit = Math.max(1000, Math.ceil(h.settings.reuseMaxChanged * prev.index.size));
  let failed: string | undefined;
  const answer = await h.catalogue.snapshotChanges!(usable ? { mark: usable.mark, catalogue: usable.catalogue } : undefined, limit).catch((err: unknown) => {
    // A fault of the feed costs the delta, not the build.
    failed = `change feed failed: ${(err as Error).message}`;
    return undefined;
  });
  if (!answer) {
    h.note(`full snapshot (${failed})`);
    return { fullReason: failed };
  }
  const mark = { mark: answer.mark, catalogue: answer.catalogue };
  const rec = new LinkRecorder();
  const plan = !usable ? 'no delta base (first build, a failed build, or a generation stored without its mark)' : answer.changed === null ? `change feed: ${answer.reason ?? 'no delta'}` : await planDelta(prev, usable, answer.changed, h.catalogue, signal);
  if (typeof plan === 'string') {
    h.note(`full snapshot (${plan})`);
    return { mark, recorder: rec, fullReason: plan };
  }
  const total = plan.kept + plan.incoming.length;
  out.start(total, prev.embedderVersion ?? undefined);
  // The text search's columns: kept rows come from the serving table (by base row), changed rows from their snapshot row.
  const semantic: SemanticDeltaSeed = { base: prev, sourceRow: new Int32Array(total), changed: [] };
  const maps: DeltaMaps = { generation: prev.generation, newRowOf: new Int32Array(prev.index.size).fill(-1), incoming: [], since };
  let row = 0;
  for (const b of mergeDelta(prev, plan)) {
    if (signal.aborted) throw new Error('index build aborted');
    out.feed(b);
    for (const src of b.sources) {
      if (typeof src === 'number') {
        rec.copyRow(usable!.links, src);
        semantic.sourceRow[row] = src;
        maps.newRowOf[src] = row;
      } else {
        rec.row(src);
        semantic.sourceRow[row] = -1;
        for (const m of src.mappings) maps.incoming.push([m.serverId, m.providerId, src.itemId]);
        semantic.changed.push([row, tagBytesOf(src.learned), otherFeaturesOf(src.learned)?.split(',').map(Number) ?? null, src.tempo, src.energy]);
      }
      row++;
    }
    await scheduler.maybeYield();
  }
  const rows = new Set(plan.incoming);
  for (const t of plan.fetched) if (!rows.has(t)) rec.skip(t);
  for (const [id, refs] of plan.skippedKept) rec.copySkipped(usable!.links, id, refs);
  rec.countInto(links);
  out.end();
  const tWrite = performance.now();
  for (let i = 0; i < plan.incoming.length; i += 1000) await h.tracks.upsertSnapshot(plan.incoming.slice(i, i + 1000), generation);
  const writeMs = performance.now() - tWrite;
  const listed = answer.changed!.length;
  h.note(`delta snapshot: ${listed} songs changed since generation ${usable!.generation}, ${plan.incoming.length} rows read, ${plan.kept} kept, ${plan.removed.length} removed`);
  return { mark, recorder: rec, delta: { report: { listed, reread: plan.reread, kept: plan.kept, removed: plan.removed.length, ms: performance.now() - t0 }, removed: plan.removed, writeMs }, semantic, maps };
}
