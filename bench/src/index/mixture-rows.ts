import type { SyntheticMixture } from '@polyphony/testkit';

/**
 * `count` rows of a synthetic mixture (`mix.batches`, 5,000 rows a batch, stream `streamSeed`) as one packed
 * Float32Array of `dim` values a row, with their ids prefixed by `prefix` (so two streams never share an id).
 * Used by the live-library benches (live-append, incremental-recall).
 */
export function takeMixtureRows(mix: SyntheticMixture, count: number, streamSeed: number, prefix: string, dim: number): { ids: string[]; vectors: Float32Array } {
  const ids: string[] = [];
  const vectors = new Float32Array(count * dim);
  let at = 0;
  for (const b of mix.batches(count, 5000, streamSeed)) {
    ids.push(...b.ids.map((id) => prefix + id));
    vectors.set(b.vectors, at);
    at += b.vectors.length;
  }
  return { ids, vectors };
}
