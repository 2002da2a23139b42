/**
 * The live library's in-memory step (issue 35 "Incremental analysis and index updates"): a batch of new songs is
 * added to the serving generation without a rebuild. See docs/architecture.md "Live library (incremental index)".
 */
import { appendRows, type AppendOptions } from '@polyphony/vector-engine';
import type { Generation } from '../../core/generation';
import type { TrackMetaFields } from '../../maps/track-meta-store';

/** Neighbours whose map positions place a new song (weighted by similarity). */
export const MAP_NEIGHBOURS = 8;

/** One song of a delta batch. */
export interface DeltaTrack {
  /** Canonical id. */
  itemId: string;
  /** Its embedding (the generation's dimension, any non-zero norm). */
  vector: Float32Array;
  /** Display metadata; undefined = none known yet (the song is then not shown until the next rebuild). */
  meta: TrackMetaFields | undefined;
  /** Its provider ids per server (what makes it available there). */
  mappings: Array<{ serverId: string; providerId: string }>;
}

/** A stored delta batch: the store's sequence number and its songs, in row order. */
export interface DeltaBatch {
  seq: number;
  tracks: DeltaTrack[];
  /**
   * The mapping-log position read before the tracks' mappings were read (DeltaRecord.mappingSeq; null: unknown, the
   * whole log). Absent: the mappings are known to be current (tests), nothing is replayed.
   */
  mappingSeq?: number | null;
}

/** What `applyDelta` did. */
export interface DeltaOutcome {
  gen: Generation;
  /** Rows appended. */
  added: number;
  /** Songs already in the generation (a redelivered or overlapping batch): only their mappings were applied. */
  present: number;
  /** Songs refused (wrong dimension, zero vector, repeated in the batch), with the reason. */
  refused: Array<{ itemId: string; reason: string }>;
}

/**
 * The generation with the batch's new songs appended (a new object: the one given keeps answering the requests that
 * hold it), as rows `size .. size + m - 1` in batch order:
 *  - index: `appendRows` (the nearest existing IVF cell, the existing quantiser; no training);
 *  - map coordinates: the similarity-weighted mean position of its MAP_NEIGHBOURS nearest songs of the generation;
 *  - availability: every server's map grown to the new size (`GenerationMaps.grownTo`, same log position) and the
 *    song's mappings applied; then, with `batch.mappingSeq`, the maps' log position is lowered to it (a new maps object
 *    even when no row is appended), so the caller's next catch-up (MapFollower.catchUp) replays the log after the
 *    batch's read over its mappings. The argument of MapFollower.carry: each entry sets a provider id's whole mapping,
 *    so replaying from a position at or before the read gives the log head's mapping for every provider id, and a
 *    batch replayed long after (a replica that starts later) cannot bring back a mapping removed since;
 *  - display metadata: the store grown (`TrackMetaStore.grownTo`) and the song's record added;
 *  - artists, links, PCA basis: unchanged (new songs join artist mixtures at the next full rebuild).
 * Songs already in the generation are not appended again (idempotent on redelivery), but their mappings are applied.
 * `revision` goes up by one and `deltaSeq` becomes `batch.seq` even when nothing was appended, so every replica
 * that applied the same batches has the same rows in the same order.
 * Cost: nlist x dim per song to place it and one k-NN query per song for its map position, plus copies of the
 * vectors (or codes and the vector file), the maps and 4 bytes a row of metadata positions.
 */
export function applyDelta(gen: Generation, batch: DeltaBatch, storage: AppendOptions = {}): DeltaOutcome {
  const dim = gen.index.dim;
  const refused: DeltaOutcome['refused'] = [];
  const fresh: DeltaTrack[] = [];
  const seen = new Set<string>();
  let present = 0;
  for (const t of batch.tracks) {
    if (gen.index.rowOf(t.itemId) >= 0) {
      present++;
      continue;
    }
    if (seen.has(t.itemId)) {
      refused.push({ itemId: t.itemId, reason: 'repeated in the batch' });
      continue;
    }
    if (t.vector.length !== dim) {
      refused.push({ itemId: t.itemId, reason: `vector of ${t.vector.length} values, the index has ${dim}` });
      continue;
    }
    let norm = 0;
    for (let d = 0; d < dim; d++) norm += t.vector[d]! * t.vector[d]!;
    if (!(norm > 0) || !Number.isFinite(norm)) {
      refused.push({ itemId: t.itemId, reason: 'zero or non-finite vector' });
      continue;
    }
    seen.add(t.itemId);
    fresh.push(t);
  }
  const m = fresh.length;
  const vectors = new Float32Array(m * dim);
  fresh.forEach((t, i) => vectors.set(t.vector, i * dim));
  const index = m > 0 ? appendRows(gen.index, fresh.map((t) => t.itemId), vectors, storage) : gen.index;
  const size = gen.index.size;
  let coords = gen.coords;
  if (m > 0) {
    coords = new Float32Array(index.size * 2);
    coords.set(gen.coords.subarray(0, size * 2));
    for (let i = 0; i < m; i++) {
      const [x, y] = placeOnMap(gen, vectors.subarray(i * dim, (i + 1) * dim));
      coords[(size + i) * 2] = x;
      coords[(size + i) * 2 + 1] = y;
    }
  }
  const replay = batch.mappingSeq !== undefined && batch.tracks.some((t) => t.mappings.length > 0);
  const maps = m > 0 || replay ? gen.maps.grownTo(index) : gen.maps;
  if (replay) maps.seq = Math.min(maps.seq, batch.mappingSeq ?? 0);
  const meta = m > 0 ? gen.meta.grownTo(index.size) : gen.meta;
  for (const t of batch.tracks) {
    if (refused.some((r) => r.itemId === t.itemId && r.reason !== 'repeated in the batch')) continue;
    const row = index.rowOf(t.itemId);
    if (row < 0) continue;
    for (const mp of t.mappings) maps.apply(mp.serverId, mp.providerId, t.itemId);
    if (row >= size && t.meta && !meta.has(row)) meta.set(row, t.meta);
  }
  const next: Generation = { ...gen, index, coords, maps, meta, revision: (gen.revision ?? 0) + 1, deltaSeq: batch.seq, builtRows: gen.builtRows ?? gen.index.size };
  return { gen: next, added: m, present, refused };
}

/** Map position of a new song: the similarity-weighted mean of its nearest songs' positions ([0, 0] in an empty generation). */
function placeOnMap(gen: Generation, vector: Float32Array): [number, number] {
  if (gen.index.size === 0 || gen.coords.length < gen.index.size * 2) return [0, 0];
  const near = gen.index.search(vector, { k: Math.min(MAP_NEIGHBOURS, gen.index.size) });
  let wx = 0;
  let wy = 0;
  let w = 0;
  for (const h of near) {
    const weight = Math.max(1e-6, 1 - h.distance);
    wx += weight * gen.coords[h.row * 2]!;
    wy += weight * gen.coords[h.row * 2 + 1]!;
    w += weight;
  }
  return w > 0 ? [wx / w, wy / w] : [0, 0];
}
