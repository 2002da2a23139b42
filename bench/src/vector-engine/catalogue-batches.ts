import { syntheticSongs } from '@polyphony/testkit';
import type { VectorBatch } from '@polyphony/vector-engine';

/**
 * The FakePeers benchmark catalogue (`syntheticSongs`: 20-song artists, 10-song albums, seed 3) as IVF build batches
 * of `size` rows of `dim` float32 each, item ids in catalogue order. Shared by the coarse-quantiser and
 * recall-decomposition benches so both measure the same data.
 */
export function* catalogueBatches(n: number, size: number, dim: number): Generator<VectorBatch> {
  let ids: string[] = [];
  let vectors = new Float32Array(size * dim);
  for (const song of syntheticSongs(n, { songsPerArtist: 20, songsPerAlbum: 10, seed: 3 })) {
    vectors.set(song.vector, ids.length * dim);
    ids.push(song.itemId);
    if (ids.length === size) {
      yield { ids, vectors };
      ids = [];
      vectors = new Float32Array(size * dim);
    }
  }
  if (ids.length > 0) yield { ids, vectors: vectors.subarray(0, ids.length * dim) };
}
