import { SyntheticMixture } from '@polyphony/testkit';

/**
 * Test vectors: `count` rows of a seeded SyntheticMixture (`dim`, `clusters`, `intrinsicDim`, `seed`), stream
 * `streamSeed`, with ids suffixed `_s<streamSeed>` so streams never share an id (`plainFirst`: stream 1 keeps the
 * mixture's own ids). Row-major floats, not normalised.
 */
export function mixturePoints(
  count: number,
  streamSeed: number,
  mixture: { dim: number; clusters: number; intrinsicDim: number; seed: number },
  plainFirst = false,
): { ids: string[]; vectors: Float32Array } {
  const ids: string[] = [];
  const vectors = new Float32Array(count * mixture.dim);
  let at = 0;
  for (const b of new SyntheticMixture(mixture).batches(count, 1000, streamSeed)) {
    ids.push(...b.ids.map((id) => (plainFirst && streamSeed === 1 ? id : `${id}_s${streamSeed}`)));
    vectors.set(b.vectors, at);
    at += b.vectors.length;
  }
  return { ids, vectors };
}
