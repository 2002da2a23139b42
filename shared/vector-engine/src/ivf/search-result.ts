/** The result and argument helpers shared by the IVF search paths (split out of ivf-index.ts). */
import type { SearchStats } from './ivf-types';
import type { Neighbour, TopK } from './top-k';

/**
 * The k best of `heap` without the excluded rows, ascending distance (ties: lower row first); fills `stats`
 * when given (see `SearchStats` for the meaning of each count).
 */
export function finish(
  heap: TopK,
  exclude: Set<number>,
  k: number,
  stats: SearchStats | undefined,
  mode: 'ivf' | 'exact',
  cellsProbed: number,
  distanceComputations: number,
  centroidComputations: number,
): Neighbour[] {
  if (stats) {
    stats.mode = mode;
    stats.cellsProbed = cellsProbed;
    stats.distanceComputations = distanceComputations;
    stats.centroidComputations = centroidComputations;
  }
  const sorted = heap.sorted();
  const out: Neighbour[] = [];
  for (const hit of sorted) {
    if (exclude.has(hit.row)) continue;
    out.push(hit);
    if (out.length === k) break;
  }
  return out;
}

/** The excluded rows as a set (empty when none). */
export function toSet(rows: Iterable<number> | undefined): Set<number> {
  return rows ? new Set(rows) : new Set();
}

/** `floor(v)` clamped to [lo, hi]. */
export function clampInt(v: number, lo: number, hi: number): number {
  const r = Math.floor(v);
  return r < lo ? lo : r > hi ? hi : r;
}
