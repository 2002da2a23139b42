import { mulberry32 } from '@polyphony/vectors';
import type { Landmarks } from './extract';
import { LandmarkIndex, SHARD_ROWS } from './landmark-index';

/** Every posting of `hash` as "row@frame", read back through the shards. */
function postingsOf(index: LandmarkIndex, hash: number): string[] {
  const out: string[] = [];
  const [lo, hi] = index.hashRange(hash);
  const postings = new Uint32Array(hi - lo);
  index.readPostings(lo, hi, postings, 0);
  index.shards.forEach(({ base, offsets }, s) => {
    for (let k = offsets[hash]!; k < index.shardEnd(s, hash); k++) out.push(`${base + (postings[k - lo]! >>> 16)}@${postings[k - lo]! & 0xffff}`);
  });
  return out.sort();
}

function randomSongs(seed: number, rows: readonly number[], perSong: number, hashes: number): Array<readonly [number, Landmarks]> {
  const rnd = mulberry32(seed);
  return rows.map((row) => {
    // Skewed hash use: low hash numbers are common, as short narrow peak pairs are in music.
    const h = Uint32Array.from({ length: perSong }, () => Math.floor(hashes * rnd() * rnd()));
    const t = Uint16Array.from({ length: perSong }, () => Math.floor(rnd() * 0xffff)).sort();
    return [row, { hashes: h, times: t }] as const;
  });
}

describe(LandmarkIndex.name, () => {
  it('When rows lie in several 65,536-row shards, then every posting reads back with its row and frame, 4 bytes each', () => {
    const rows = [0, 1, SHARD_ROWS - 1, SHARD_ROWS, SHARD_ROWS + 7, 3 * SHARD_ROWS + 2];
    const songs = randomSongs(1, rows, 300, 500);
    const index = LandmarkIndex.build(() => songs, { stopFraction: 0 });
    expect(index.size).toBe(rows.length * 300);
    expect(index.rowCount).toBe(3 * SHARD_ROWS + 3);
    expect(index.shards.map((s) => s.base)).toEqual([0, SHARD_ROWS, 3 * SHARD_ROWS]);
    expect(index.bytes).toBe(index.size * 4 + 3 * index.shards[0]!.offsets.byteLength);
    for (const hash of [0, 1, 17, 250, 499]) {
      const expected: string[] = [];
      for (const [row, lm] of songs) for (let i = 0; i < lm.hashes.length; i++) if (lm.hashes[i] === hash) expected.push(`${row}@${lm.times[i]}`);
      expect(postingsOf(index, hash)).toEqual(expected.sort());
    }
  });

  it('When a stop fraction is set, then the most common hashes holding at most that share of postings are left out and the rest are whole', () => {
    const songs = randomSongs(2, Array.from({ length: 50 }, (_, i) => i), 400, 2000);
    const whole = LandmarkIndex.build(() => songs, { stopFraction: 0 });
    const index = LandmarkIndex.build(() => songs, { stopFraction: 0.2 });
    expect(index.stopped.postings).toBeLessThanOrEqual(0.2 * whole.size);
    expect(index.stopped.postings).toBeGreaterThan(0.15 * whole.size);
    expect(index.size).toBe(whole.size - index.stopped.postings);
    const lengths = (ix: LandmarkIndex) => Array.from({ length: 2000 }, (_, h) => postingsOf(ix, h).length);
    const before = lengths(whole);
    const after = lengths(index);
    const stoppedHashes = before.map((n, h) => (after[h] === 0 && n > 0 ? h : -1)).filter((h) => h >= 0);
    expect(stoppedHashes.length).toBe(index.stopped.hashes);
    // Every stopped hash is at least as common as every kept one, and kept hashes keep all their postings.
    const minStopped = Math.min(...stoppedHashes.map((h) => before[h]!));
    for (let h = 0; h < 2000; h++) if (after[h]! > 0) {
      expect(after[h]).toBe(before[h]);
      expect(before[h]!).toBeLessThanOrEqual(minStopped);
    }
  });

  it('When the source yields other landmarks on the second pass, then the build fails instead of answering from a mixed index', () => {
    const first = randomSongs(3, [0, 1, 2], 100, 300);
    const other = randomSongs(4, [0, 1, 2], 100, 300);
    let pass = 0;
    expect(() => LandmarkIndex.build(() => (pass++ === 0 ? first : other), { stopFraction: 0 })).toThrow(/second pass/);
  });
});
