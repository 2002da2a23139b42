/**
 * Steering math (steering.ts) on hand-made data whose answers are worked out in the comments, and the concepts a
 * SemanticTable derives from its rows (carriers, direction, scale).
 */
import { MSD_TAGS, STEER_CONCEPTS } from '@polyphony/contracts';
import { mulberry32 as rng } from '@polyphony/vectors';
import type { Generation } from '../core/generation';
import { SemanticTable, type SemanticRowSource } from './semantic-table';
import { conceptPosition, deriveDirections, steeredScore, steerMinSongs, steerPool, STEER_POOL_MAX, STEER_POOL_MIN } from './steering';
import { OTHER_OFFSET } from './vocabulary';

describe('deriveDirections', () => {
  it('When three rows carry a concept and three do not, then the direction is the unit difference of the two means, scaled between the 5th and 95th percentile positions', () => {
    // Carriers at (1,0), (1,0), (0.8,0.6); the rest at (0,1) three times. Means: (0.9333, 0.2) and (0, 1);
    // difference (0.9333, -0.8), norm 1.2293 -> (0.7593, -0.6508).
    const vectors = Float32Array.from([1, 0, 1, 0, 0.8, 0.6, 0, 1, 0, 1, 0, 1]);
    const [dir] = deriveDirections(vectors, 2, [Uint8Array.from([1, 1, 1, 0, 0, 0])]);
    expect(dir).not.toBeNull();
    const d = dir!;
    const nx = 0.9333333 / Math.hypot(0.9333333, 0.8);
    expect(d.vector[0]).toBeCloseTo(nx, 5);
    expect(d.vector[1]).toBeCloseTo(-0.8 / Math.hypot(0.9333333, 0.8), 5);
    expect(Math.hypot(d.vector[0]!, d.vector[1]!)).toBeCloseTo(1, 6);
    expect({ strong: d.strong, weak: d.weak }).toEqual({ strong: 3, weak: 3 });
    // Positions: carriers 0.7593, 0.7593, 0.2169; the rest -0.6508 (x3). Sorted: -0.65, -0.65, -0.65, 0.2169, 0.7593, 0.7593.
    // 5th percentile = the lowest (pos 0.25 between two equal values); 95th = the highest (pos 4.75 between two equal values).
    expect(d.low).toBeCloseTo(-0.6508, 3);
    expect(d.high).toBeCloseTo(0.7593, 3);
    // A carrier sits at the top of the scale, a non-carrier at the bottom, the mixed (0.8, 0.6) song in between.
    expect(conceptPosition(d, Float32Array.from([1, 0]))).toBeCloseTo(1, 5);
    expect(conceptPosition(d, Float32Array.from([0, 1]))).toBeCloseTo(0, 5);
    expect(conceptPosition(d, Float32Array.from([0.8, 0.6]))).toBeCloseTo((0.2169 + 0.6508) / (0.7593 + 0.6508), 3);
    // Clamped outside the sample's range; read from an offset.
    expect(conceptPosition(d, Float32Array.from([9, 9, 2, -2]), 2)).toBe(1);
  });

  it('When fewer than the minimum rows carry (or lack) a concept, or both groups have the same mean, then it has no direction', () => {
    const vectors = Float32Array.from([1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1]);
    const [tooFew, tooMany, ok] = deriveDirections(vectors, 2, [Uint8Array.from([1, 1, 0, 0, 0, 0]), Uint8Array.from([1, 1, 1, 1, 0, 0]), Uint8Array.from([1, 1, 0, 0, 0, 1])], 3);
    expect(tooFew).toBeNull();
    expect(tooMany).toBeNull();
    // Carriers (1,0),(1,0),(0,1) vs (0,1)x3: a direction along +x, -y.
    expect(ok!.vector[0]).toBeGreaterThan(0);
    expect(ok!.vector[1]).toBeLessThan(0);
    // Every song at the same point: the two means are equal.
    expect(deriveDirections(Float32Array.from([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]), 2, [Uint8Array.from([1, 1, 1, 0, 0, 0])])[0]).toBeNull();
  });
});

describe('steeredScore', () => {
  it('When weights are 0 or absent, then the score is the unsteered similarity', () => {
    expect(steeredScore(0.42, 2, [])).toBe(0.42);
    expect(steeredScore(0.42, 2, [{ weight: 0, position: 1 }])).toBe(0.42);
  });

  it('When steering for more or less of a concept, then it is one more channel of weight |w|: the position, or 1 - position', () => {
    // Query of 2 channels with mean 0.6 (sum 1.2); "more" at w = 0.5 on a song at position 0.8: (1.2 + 0.4) / 2.5 = 0.64.
    expect(steeredScore(0.6, 2, [{ weight: 0.5, position: 0.8 }])).toBeCloseTo(0.64, 12);
    // "less" at w = -1 on the same song: (1.2 + 1 * 0.2) / 3 = 0.4667.
    expect(steeredScore(0.6, 2, [{ weight: -1, position: 0.8 }])).toBeCloseTo(1.4 / 3, 12);
    // Two concepts: (1.2 + 1 * 0.8 + 0.5 * (1 - 0.1)) / 3.5.
    expect(steeredScore(0.6, 2, [{ weight: 1, position: 0.8 }, { weight: -0.5, position: 0.1 }])).toBeCloseTo(2.45 / 3.5, 12);
  });

  it('When two songs match the query equally, then "more" ranks the one further along the concept first and "less" the other; scores stay in [0, 1]', () => {
    const rand = rng(7);
    for (let i = 0; i < 200; i++) {
      const base = rand();
      const [a, b] = [rand(), rand()];
      const w = rand();
      const more = [steeredScore(base, 1, [{ weight: w, position: a }]), steeredScore(base, 1, [{ weight: w, position: b }])];
      const less = [steeredScore(base, 1, [{ weight: -w, position: a }]), steeredScore(base, 1, [{ weight: -w, position: b }])];
      expect(Math.sign(more[0]! - more[1]!)).toBe(a === b ? 0 : Math.sign(a - b));
      expect(Math.sign(less[0]! - less[1]!)).toBe(a === b ? 0 : Math.sign(b - a));
      for (const s of [...more, ...less]) {
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThanOrEqual(1);
      }
    }
  });

  it('When the sample grows, then the fewest songs per side is 1% of it within [2, 20]', () => {
    expect([4, 41, 200, 1000, 20_000].map(steerMinSongs)).toEqual([2, 2, 2, 10, 20]);
    // Six rows, two of them carrying: enough by default (2), not with a minimum of 3.
    const v = Float32Array.from([1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1]);
    expect(deriveDirections(v, 2, [Uint8Array.from([1, 1, 0, 0, 0, 0])])[0]).not.toBeNull();
  });

  it('When the limit grows, then the re-ranked pool is 10 x limit within its bounds', () => {
    expect(steerPool(5)).toBe(STEER_POOL_MIN);
    expect(steerPool(100)).toBe(1000);
    expect(steerPool(500)).toBe(STEER_POOL_MAX);
  });
});

describe('SemanticTable concepts', () => {
  it('When some songs are strong on "rock" and sit apart in the vector space, then rock is carried by exactly them and its direction points at them', async () => {
    const rand = rng(11);
    const n = 60;
    const rockCol = MSD_TAGS.indexOf('rock');
    const rows: SemanticRowSource[] = [];
    const vectors: Float32Array[] = [];
    const rockRows = new Set<number>();
    for (let i = 0; i < n; i++) {
      const tags = Buffer.from(Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() * 30)));
      const rock = i % 4 === 0;
      // Rock songs: probability ~0.9 on rock, vectors around +x; the others ~0.05, around +y. Row 59 is untagged.
      tags[rockCol] = rock ? 230 : 12;
      if (rock) rockRows.add(i);
      const v = rock ? [1, 0.1 * rand(), 0.1 * rand(), 0] : [0.1 * rand(), 1, 0.1 * rand(), 0];
      const norm = Math.hypot(...v);
      vectors.push(Float32Array.from(v, (x) => x / norm));
      rows.push({ itemId: `id${i}`, tags: i === 59 ? null : tags, other: [0, 0, 0, 0, 0, 0], tempo: null, energy: null });
    }
    const gen = { generation: 1, index: { size: n, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! } } as unknown as Generation;
    const table = await SemanticTable.build(gen, rows);
    expect([...table.concepts.keys()]).toEqual(STEER_CONCEPTS);
    const rock = table.concepts.get('rock')!;
    expect(rock.kind).toBe('genre');
    // "rock" is an MSD and an MTT label: two columns, either one counts.
    expect(rock.columns.length).toBe(2);
    expect(rock.songs).toBe(rockRows.size);
    for (let r = 0; r < n; r++) expect(((rock.carriers[r >>> 5]! >>> (r & 31)) & 1) === 1).toBe(rockRows.has(r));
    expect(rock.direction).not.toBeNull();
    expect(rock.direction!.vector[0]).toBeGreaterThan(0.6);
    expect(rock.direction!.vector[1]).toBeLessThan(-0.6);
    expect(conceptPosition(rock.direction!, vectors[0]!)).toBeGreaterThan(0.9);
    expect(conceptPosition(rock.direction!, vectors[1]!)).toBeLessThan(0.1);
    // Labels no song is strong on (noise bytes 0-29 only reach 0.11 of probability): carried by none, no direction.
    const piano = table.concepts.get('piano')!;
    expect(piano.songs).toBe(0);
    expect(piano.direction).toBeNull();
  });
});
