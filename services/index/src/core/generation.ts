import { ArtistModel } from '../artists/artist-model';
import { IdTableBuilder, DEFAULT_DIM, DEFAULT_NPROBE, IvfIndex } from '@polyphony/vector-engine';
import { GenerationMaps } from '../maps/generation-maps';
import { TrackMetaStore } from '../maps/track-meta-store';
import type { PcaBasis } from '../maps/projection';
import type { BallBasis } from '../hyperbolic/ball';

/**
 * Provider artist ids per server, taken from the catalogue snapshot's mapping rows at build time
 * (`mappings[].artistId`). For every (server, artist) the most frequent provider id wins.
 */
export class ArtistLinks {
  private readonly byKey = new Map<string, Map<string, string>>();
  private readonly byProvider = new Map<string, Map<string, string>>();

  /** Records that on `serverId`, the artist with folded name `key` has provider id `providerId`. */
  set(serverId: string, key: string, providerId: string): void {
    let k = this.byKey.get(serverId);
    if (!k) this.byKey.set(serverId, (k = new Map()));
    k.set(key, providerId);
    let p = this.byProvider.get(serverId);
    if (!p) this.byProvider.set(serverId, (p = new Map()));
    p.set(providerId, key);
  }

  /** Provider artist id of `key` on the server, or undefined. */
  providerIdOf(serverId: string | undefined, key: string): string | undefined {
    return serverId === undefined ? undefined : this.byKey.get(serverId)?.get(key);
  }

  /** Folded artist name behind a provider artist id of the server, or undefined. */
  keyOfProviderId(serverId: string | undefined, providerId: string): string | undefined {
    return serverId === undefined ? undefined : this.byProvider.get(serverId)?.get(providerId);
  }

  /** Every (server, key, provider id) triple, for persistence. */
  *entries(): Generator<{ serverId: string; key: string; providerId: string }> {
    for (const [serverId, m] of this.byKey) for (const [key, providerId] of m) yield { serverId, key, providerId };
  }
}

/**
 * Counts provider artist ids per (server, artist key) while the snapshot streams, then keeps the most
 * frequent one (ties: the smaller id, so the result does not depend on page order).
 */
export class ArtistLinkCounter {
  private readonly counts = new Map<string, Map<string, Map<string, number>>>();

  add(serverId: string, key: string, providerId: string): void {
    let s = this.counts.get(serverId);
    if (!s) this.counts.set(serverId, (s = new Map()));
    let a = s.get(key);
    if (!a) s.set(key, (a = new Map()));
    a.set(providerId, (a.get(providerId) ?? 0) + 1);
  }

  finish(): ArtistLinks {
    const links = new ArtistLinks();
    for (const [serverId, s] of this.counts) {
      for (const [key, ids] of s) {
        let best: string | undefined;
        let bestN = 0;
        for (const [id, n] of ids) if (n > bestN || (n === bestN && best !== undefined && id < best)) [best, bestN] = [id, n];
        if (best !== undefined) links.set(serverId, key, best);
      }
    }
    return links;
  }
}

/** Layout method of a generation's map. */
export type MapMethod = 'umap' | 'pca';

/**
 * Everything one index generation consists of in memory. Immutable once published: a request takes
 * one snapshot (`IndexState.current()`) and uses it throughout, so rows, masks, artists and map
 * coordinates always belong to the same generation.
 */
export interface Generation {
  /** 0 = nothing built yet. */
  readonly generation: number;
  readonly index: IvfIndex;
  readonly artists: ArtistModel;
  readonly links: ArtistLinks;
  /** 2-D basis; undefined for an empty index. */
  readonly pca: PcaBasis | undefined;
  /** Map coordinates, 2 floats per row, in about [-1, 1]. */
  readonly coords: Float32Array;
  /** How `coords` were made: UMAP (umap-projection.ts) from UMAP_MIN_SAMPLES rows on, PCA (projection.ts) below. */
  readonly mapMethod: MapMethod;
  readonly builtAt: Date | null;
  /**
   * Embedder version of the vectors (e.g. `dsp-v1`, `tfjs:musicnn-fusion-v1`); null when unknown (nothing built, or a
   * build stored before versions were recorded). Vectors saved against another version (anchors) are refused.
   */
  readonly embedderVersion: string | null;
  /** Provider <-> canonical maps and availability per server over this generation's rows (kept current from the catalogue's mapping log). */
  readonly maps: GenerationMaps;
  /** Display metadata of every row (title, artist, album, moods, tempo, energy), in memory: result rows need no database query (issue 19). */
  readonly meta: TrackMetaStore;
  /**
   * Live library (generation/live): how many stored delta batches of this generation are applied (absent or 0 = the
   * generation as built), and the store's sequence number of the last one. Rows added by deltas follow the built rows.
   */
  readonly revision?: number;
  readonly deltaSeq?: number;
  /** Rows of the generation as built (the live library's rows follow them); absent = every row. */
  readonly builtRows?: number;
  /**
   * Reuse lineage (generation/reuse.ts `reuseLineage`): rows of the build that last trained its IVF cells and laid out
   * its map, and rows placed without training since. Absent = the generation is its own root (trained, nothing placed).
   */
  readonly lineage?: ReuseLineage;
  /**
   * The Poincaré ball's basis (hyperbolic/ball.ts `BallBasis`) stored with the generation (`index.builds.ball`): set by
   * a build with generation reuse on (fitted, or carried over from the serving generation) and loaded with it, so
   * every replica lays out the ball of the builder. Absent: each replica fits it from the vectors (as before).
   */
  readonly ballBasis?: BallBasis;
}

/** A generation's reuse lineage (`index.builds.lineage_*`): see `Generation.lineage`. */
export interface ReuseLineage {
  /** Rows of the lineage's root build (the one that trained k-means and laid out the map). */
  readonly trainedRows: number;
  /** Rows placed without training since the root: changed + removed rows of every reusing build after it. */
  readonly placedRows: number;
}

/**
 * True when `gen` is a later live-library revision of `earlier`: same generation number, a higher revision, at least
 * as many rows, and `earlier`'s rows are its first rows (the live library only appends; checked on up to 65 spread
 * ids). Per-revision structures (the text-search table, the Poincaré ball) then carry `earlier`'s rows over.
 */
export function grewFrom(gen: Generation, earlier: Generation): boolean {
  if (earlier.generation !== gen.generation || (earlier.revision ?? 0) >= (gen.revision ?? 0)) return false;
  const size = earlier.index.size;
  if (size === 0 || size > gen.index.size) return false;
  const step = Math.max(1, Math.floor(size / 64));
  for (let r = 0; r < size; r += step) if (earlier.index.idOf(r) !== gen.index.idOf(r)) return false;
  return earlier.index.idOf(size - 1) === gen.index.idOf(size - 1);
}

/** Per row of `gen`, its row in `earlier` when `gen` grew from it (`grewFrom`): the first rows map to themselves, appended rows to -1. */
export function earlierRowsOf(gen: Generation, earlier: Generation): Int32Array {
  const out = new Int32Array(gen.index.size).fill(-1);
  for (let r = 0; r < earlier.index.size; r++) out[r] = r;
  return out;
}

/** Key of per-generation caches that must see rows added by the live library: `<generation>.<revision>`. */
export function generationKey(g: Pick<Generation, 'generation' | 'revision'>): string {
  return `${g.generation}.${g.revision ?? 0}`;
}

/**
 * Bytes held in memory by each structure of a generation (issue 19 memory accounting; typed-array capacities,
 * so growth slack counts): the index parts (`IvfIndex.memory`), the maps per server, the display metadata,
 * the artist model's arrays and the map coordinates. JS objects on the heap (artist names and keys, artist
 * links) are not counted here: the caller compares the total with `process.memoryUsage()`.
 */
export function generationMemory(gen: Generation): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(gen.index.memory())) out[`index.${k}`] = v;
  for (const [k, v] of Object.entries(gen.maps.bytesPerServer())) out[`maps.${k}`] = v;
  out.meta = gen.meta.bytes;
  out.artists = gen.artists.bytes;
  out.coords = gen.coords.byteLength;
  return out;
}

/** The generation served before any build exists: an empty index (built synchronously). */
export function emptyGeneration(dim = DEFAULT_DIM): Generation {
  const index = new IvfIndex({
    dim,
    nlist: 0,
    generation: 0,
    defaultNprobe: DEFAULT_NPROBE,
    centroids: new Float32Array(0),
    cellOffsets: new Int32Array(1),
    vectors: new Float32Array(0),
    rowOfSlot: new Int32Array(0),
    slotOfRow: new Int32Array(0),
    ids: new IdTableBuilder(16).finish(0),
  });
  return { generation: 0, index, artists: ArtistModel.empty(dim, 0), links: new ArtistLinks(), pca: undefined, coords: new Float32Array(0), mapMethod: 'pca', builtAt: null, embedderVersion: null, maps: new GenerationMaps(index), meta: new TrackMetaStore(0) };
}

/**
 * Holds the live generation. `swap` is one reference assignment, so every request is answered entirely
 * by the old or entirely by the new generation; the old one is garbage-collected when the last request
 * holding it finishes.
 */
export class IndexState {
  private live: Generation;
  private readonly listeners: Array<(g: Generation) => void> = [];
  private readonly preparers: Array<{ name: string; task: (g: Generation) => Promise<void> }> = [];

  constructor(initial: Generation) {
    this.live = initial;
  }

  current(): Generation {
    return this.live;
  }

  /** Publishes `next`; returns the previous generation. Listeners run synchronously after the swap. */
  swap(next: Generation): Generation {
    const previous = this.live;
    this.live = next;
    for (const l of this.listeners) l(next);
    return previous;
  }

  /** Called after every swap (caches keyed by generation drop their old entries). */
  onSwap(listener: (g: Generation) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Registers work that must be done for a generation before it is served (e.g. the semantic table of text
   * search): `prepare(next)` awaits every such task, so the work is part of a replica's load and of a build's
   * activation (before `/readyz` turns ready, while the old generation still answers), not background CPU
   * competing with queries right after the swap.
   */
  onPrepare(task: (g: Generation) => Promise<void>, name = `task${this.preparers.length + 1}`): void {
    this.preparers.push({ name, task });
  }

  /**
   * Runs every `onPrepare` task for `next` (concurrently) and waits for them. A failing task does not fail the
   * load: its error is handed to `onError` and the owner builds lazily on first use, as before.
   * @param spansMs filled with each task's wall time from its start to its end, ms, by name (the tasks share the event
   *   loop: a task's synchronous part delays the others, so the spans overlap and do not add up to the whole)
   */
  async prepare(next: Generation, onError: (err: unknown) => void = () => undefined, spansMs?: Record<string, number>): Promise<void> {
    await Promise.all(
      this.preparers.map(({ name, task }) => {
        const t = performance.now();
        return task(next)
          .catch(onError)
          .finally(() => {
            if (spansMs) spansMs[name] = performance.now() - t;
          });
      }),
    );
  }
}
