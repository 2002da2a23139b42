import { ballDisc, ballDistanceTo, ballNorm2, ballPoint, buildPoincareBall, decodeBallBasis, encodeBallBasis, fitBallBasis, type BallInput } from './ball';
import { bytes, expectSameBall } from './__tests__/same-ball';

/**
 * Issue 35, generation reuse of the Poincaré ball: a ball laid out with a given basis holds exactly the values of a ball
 * built without one (when the basis is the fit of the same rows), and a ball that copies the unchanged rows of the
 * previous generation's ball holds exactly the values of one that projects every row with the same basis.
 */

/** Deterministic unit vectors (LCG), `dim` floats each. */
function vectors(n: number, dim: number, seed: number): Float32Array[] {
  let s = seed >>> 0;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  return Array.from({ length: n }, () => {
    const v = Float32Array.from({ length: dim }, () => rand() * 2 - 1 + (rand() < 0.1 ? 3 : 0));
    let m = 0;
    for (const x of v) m += x * x;
    m = Math.sqrt(m);
    return v.map((x) => x / m);
  });
}

function input(rows: Float32Array[]): BallInput {
  return { size: rows.length, dim: rows[0]!.length, getVector: (r) => rows[r]!.slice() };
}

describe.each([
  ['float32 points', 1_000_000],
  ['int16 points', 1],
])('ball with a basis (%s)', (_name, compactFrom) => {
  const DIM = 24;
  const K = 8;
  const before = vectors(600, DIM, 5);

  test('a ball laid out with the fit of its own rows is the ball built without a basis', async () => {
    const x = input(before);
    const fitted = await fitBallBasis(x, undefined, K);
    const plain = await buildPoincareBall(x, undefined, K, compactFrom);
    const withBasis = await buildPoincareBall(x, undefined, K, compactFrom, fitted);
    expectSameBall(withBasis, plain);
    expect(plain.basis!.low).toBe(fitted!.low);
    expect(bytes(plain.basis!.axes)).toBe(bytes(fitted!.axes));
  });

  test('copying unchanged rows from the previous ball gives the ball of projecting every row with the same basis', async () => {
    const basis = (await fitBallBasis(input(before), undefined, K))!;
    const prevBall = await buildPoincareBall(input(before), undefined, K, compactFrom, basis);
    // The next generation: rows 0-49 removed, rows 100-129 with new vectors, 40 new rows interleaved, the rest kept.
    const fresh = vectors(70, DIM, 77);
    const after: Float32Array[] = [];
    const prevRowOfNew: number[] = [];
    for (let p = 50; p < before.length; p++) {
      if (p % 13 === 0 && after.length < 400) {
        after.push(fresh.pop()!);
        prevRowOfNew.push(-1);
      }
      if (p >= 100 && p < 130) {
        after.push(fresh.pop()!);
        prevRowOfNew.push(-1);
      } else {
        after.push(before[p]!);
        prevRowOfNew.push(p);
      }
    }
    const reuse = { ball: prevBall, input: input(before), prevRowOfNew: Int32Array.from(prevRowOfNew) };
    const reused = await buildPoincareBall(input(after), undefined, K, compactFrom, basis, reuse);
    const projected = await buildPoincareBall(input(after), undefined, K, compactFrom, basis);
    const unchanged = prevRowOfNew.filter((p) => p >= 0).length;
    expect(unchanged).toBeGreaterThan(400);
    expect(reused.reused).toBe(unchanged);
    expect(projected.reused).toBe(0);
    expectSameBall(reused, projected);
    // The queries read the same: distances, squared norms, points and the 2-D disc of every row.
    const q = ballPoint(projected, 7);
    const q2 = ballNorm2(projected, 7);
    for (let r = 0; r < after.length; r++) {
      expect(ballDistanceTo(reused, q, q2, r)).toBe(ballDistanceTo(projected, q, q2, r));
      expect(ballNorm2(reused, r)).toBe(ballNorm2(projected, r));
      expect(ballDisc(reused, r)).toEqual(ballDisc(projected, r));
    }
    // An unchanged row's point is the previous ball's.
    const r = prevRowOfNew.indexOf(300);
    expect(Array.from(ballPoint(reused, r))).toEqual(Array.from(ballPoint(prevBall, 300)));
  });

  test('rows are not copied from a ball of another basis, or when the matched vectors differ', async () => {
    const basis = (await fitBallBasis(input(before), undefined, K))!;
    const other = (await fitBallBasis(input(before.slice(0, 300)), undefined, K))!;
    const prevOther = await buildPoincareBall(input(before), undefined, K, compactFrom, other);
    const identity = Int32Array.from(before.keys());
    const fromOther = await buildPoincareBall(input(before), undefined, K, compactFrom, basis, { ball: prevOther, input: input(before), prevRowOfNew: identity });
    expect(fromOther.reused).toBe(0);
    expectSameBall(fromOther, await buildPoincareBall(input(before), undefined, K, compactFrom, basis));
    // A match that lies (rows shifted by one): the sampled vectors differ, nothing is copied.
    const prevBall = await buildPoincareBall(input(before), undefined, K, compactFrom, basis);
    const shifted = Int32Array.from(before.keys(), (p) => (p + 1) % before.length);
    const lied = await buildPoincareBall(input(before), undefined, K, compactFrom, basis, { ball: prevBall, input: input(before), prevRowOfNew: shifted });
    expect(lied.reused).toBe(0);
    expectSameBall(lied, prevBall);
  });
});

test('a stored basis decodes to the same values; foreign bytes decode to nothing', async () => {
  const basis = (await fitBallBasis(input(vectors(300, 16, 9)), undefined, 4))!;
  const back = decodeBallBasis(encodeBallBasis(basis))!;
  expect([back.inputDim, back.k, back.low, back.high, back.explained]).toEqual([basis.inputDim, basis.k, basis.low, basis.high, basis.explained]);
  expect(bytes(back.mean)).toBe(bytes(basis.mean));
  expect(bytes(back.axes)).toBe(bytes(basis.axes));
  expect(decodeBallBasis(Buffer.alloc(12))).toBeUndefined();
  expect(decodeBallBasis(Buffer.from(new Float64Array([16, 4, 0, 1, 0.5]).buffer))).toBeUndefined();
  expect(await fitBallBasis({ size: 0, dim: 16, getVector: () => new Float32Array(16) })).toBeUndefined();
});
