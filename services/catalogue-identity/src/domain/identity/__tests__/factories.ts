/**
 * Builders for identity unit tests (excluded from the tsc build by the package's `__tests__` rule).
 * Everything is seeded, so a failing case replays exactly.
 */
import type { TrackFile } from '../identity-candidate-source';
import type { IncomingTrack } from '../decide';
import type { RelabelMapping, RelabelRow } from '../relabel';
import { mulberry32 } from '@polyphony/vectors';

/** mulberry32 (the one in @polyphony/vectors): deterministic floats in [0, 1) from a 32-bit seed. */
export const rng = mulberry32;

/** Standard normal sample (Box-Muller). */
export function gaussian(r: () => number): number {
  const u = Math.max(r(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
}

/** A 200-d embedding with N(0, 1) components. */
export function randomEmbedding(r: () => number): Float64Array {
  return Float64Array.from({ length: 200 }, () => gaussian(r));
}

/** Copy of an embedding with N(0, sigma^2) noise per component (sigma 0.02 -> cosine distance ~2e-4, ~2-3 bits). */
export function perturb(e: ArrayLike<number>, sigma: number, r: () => number): Float64Array {
  return Float64Array.from({ length: e.length }, (_, i) => (e[i] as number) + sigma * gaussian(r));
}

/**
 * A different recording with the same signature: every deviation from the mean is scaled by its own
 * random positive factor (so it keeps its side), then the positive side is rescaled so the deviations
 * still sum to zero (the mean, hence every bit, is unchanged). Cosine distance is far above 0.01,
 * Hamming distance 0.
 */
export function sameSignatureDifferentSong(e: ArrayLike<number>, r: () => number): Float64Array {
  let mean = 0;
  for (let i = 0; i < e.length; i++) mean += e[i] as number;
  mean /= e.length;
  const dev = Float64Array.from({ length: e.length }, (_, i) => ((e[i] as number) - mean) * (0.2 + 1.6 * r()));
  let pos = 0;
  let neg = 0;
  for (const d of dev) {
    if (d > 0) pos += d;
    else neg -= d;
  }
  return dev.map((d) => mean + (d > 0 ? (d * neg) / pos : d));
}

/** A provider file. */
export function file(serverId: string, providerId: string, path: string | null = null): TrackFile {
  return { serverId, providerId, path };
}

/** An incoming analysed track with one file. */
export function track(embedding: ArrayLike<number>, durationSeconds: number | null, f: TrackFile, chromaprint: ArrayLike<number> | null = null): IncomingTrack {
  return { embedding, durationSeconds, chromaprint, files: [f] };
}

/** A mapping row of a relabel row. */
export function mapping(serverId: string, providerId: string, path: string | null, durationSeconds: number | null): RelabelMapping {
  return { serverId, providerId, path, durationSeconds };
}

/** A relabel row. */
export function row(oldId: string, embedding: ArrayLike<number> | null, durationSeconds: number | null, mappings: RelabelMapping[], extra: Partial<RelabelRow> = {}): RelabelRow {
  return { oldId, embedding, durationSeconds, mappings, ...extra };
}
