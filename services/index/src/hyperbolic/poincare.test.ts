import { spawnSync } from 'node:child_process';
import { expMap0, geodesicPoint, logMap0, mobiusAdd, mobiusScale, negate, norm, poincareDistance, radiusToDistance, sampleGeodesic, samplePathVia } from './poincare';
import { ballBytes, ballDisc, ballDistanceTo, ballNorm2, ballPoint, ballRadius, buildPoincareBall, quantileSorted } from './ball';

/** Deterministic points inside the ball (LCG), norms spread over [0, 0.95). */
function points(n: number, dim: number, seed = 7): number[][] {
  let s = seed >>> 0;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  return Array.from({ length: n }, () => {
    const v = Array.from({ length: dim }, () => rand() * 2 - 1);
    const r = rand() * 0.95;
    const m = norm(v);
    return v.map((x) => (x / m) * r);
  });
}

const close = (a: number[], b: number[], digits = 9) => a.forEach((v, i) => expect(v).toBeCloseTo(b[i]!, digits));

/**
 * numpy oracle: the module's formulas written independently in numpy (float64), fed the same points. Skipped
 * (saying so) only when python3 with numpy is missing; scripts/setup.sh installs python3-numpy for the tests.
 */
function numpyOracle(pairs: Array<[number[], number[]]>): Array<{ add: number[]; dist: number; distMobius: number; mid: number[] }> | undefined {
  const script = `
import json, sys
import numpy as np
def madd(x, y):
    xy, x2, y2 = x @ y, x @ x, y @ y
    return ((1 + 2*xy + y2) * x + (1 - x2) * y) / (1 + 2*xy + x2*y2)
def mscale(r, x):
    n = np.linalg.norm(x)
    return np.zeros_like(x) if n == 0 else np.tanh(r * np.arctanh(n)) * x / n
out = []
for x, y in json.load(sys.stdin):
    x, y = np.array(x), np.array(y)
    d = np.arccosh(1 + 2 * np.sum((x - y)**2) / ((1 - x @ x) * (1 - y @ y)))
    dm = 2 * np.arctanh(np.linalg.norm(madd(-x, y)))
    mid = madd(x, mscale(0.5, madd(-x, y)))
    out.append({"add": madd(x, y).tolist(), "dist": float(d), "distMobius": float(dm), "mid": mid.tolist()})
print(json.dumps(out))
`;
  const r = spawnSync('python3', ['-c', script], { input: JSON.stringify(pairs), encoding: 'utf8' });
  if (r.status !== 0) {
    console.warn(`numpy oracle unavailable (${r.stderr?.slice(0, 200) ?? r.error?.message}); oracle comparison skipped`);
    return undefined;
  }
  return JSON.parse(r.stdout) as Array<{ add: number[]; dist: number; distMobius: number; mid: number[] }>;
}

describe('Poincaré-ball geometry', () => {
  const pts = points(12, 5);
  const pairs: Array<[number[], number[]]> = pts.slice(0, 6).map((p, i) => [p, pts[i + 6]!]);

  it('matches the numpy oracle: Möbius addition, both distance formulas, geodesic midpoint', () => {
    const oracle = numpyOracle(pairs);
    if (!oracle) return;
    pairs.forEach(([x, y], i) => {
      close(mobiusAdd(x, y), oracle[i]!.add);
      expect(poincareDistance(x, y)).toBeCloseTo(oracle[i]!.dist, 7);
      expect(oracle[i]!.distMobius).toBeCloseTo(oracle[i]!.dist, 7);
      close(geodesicPoint(x, y, 0.5), oracle[i]!.mid, 8);
    });
  });

  it('Möbius addition: identity, inverse and left cancellation (-x) ⊕ (x ⊕ y) = y', () => {
    for (const [x, y] of pairs) {
      close(mobiusAdd(x, new Array(x.length).fill(0)), x);
      close(mobiusAdd(negate(x), x), new Array(x.length).fill(0));
      close(mobiusAdd(negate(x), mobiusAdd(x, y)), y, 8);
    }
  });

  it('distance: zero on the diagonal, symmetric, 2 artanh|y| from the origin, triangle inequality, Möbius-invariant', () => {
    const o = new Array(5).fill(0);
    for (const [x, y] of pairs) {
      expect(poincareDistance(x, x)).toBeCloseTo(0, 6);
      expect(poincareDistance(x, y)).toBeCloseTo(poincareDistance(y, x), 10);
      expect(poincareDistance(o, y)).toBeCloseTo(radiusToDistance(norm(y)), 8);
      const z = pts[11]!;
      expect(poincareDistance(x, y)).toBeLessThanOrEqual(poincareDistance(x, z) + poincareDistance(z, y) + 1e-9);
      // Left translations are isometries: d(a ⊕ x, a ⊕ y) = d(x, y).
      const a = pts[10]!;
      expect(poincareDistance(mobiusAdd(a, x), mobiusAdd(a, y))).toBeCloseTo(poincareDistance(x, y), 6);
    }
  });

  it('exp and log maps at the origin are inverse, and d(0, exp0(v)) = 2|v|', () => {
    const v = [0.3, -0.8, 0.1, 0.5, 0];
    const p = expMap0(v);
    close(logMap0(p), v);
    expect(poincareDistance(new Array(5).fill(0), p)).toBeCloseTo(2 * norm(v), 8);
    expect(norm(mobiusScale(2, [0.5, 0]))).toBeCloseTo(Math.tanh(2 * Math.atanh(0.5)), 12);
  });

  it('geodesics: ends are exact, speed is constant, the midpoint halves the distance', () => {
    for (const [x, y] of pairs) {
      const d = poincareDistance(x, y);
      const s = sampleGeodesic(x, y, 5);
      close(s[0]!, x);
      close(s[4]!, y);
      s.forEach((p, i) => expect(poincareDistance(x, p)).toBeCloseTo((d * i) / 4, 6));
      const mid = geodesicPoint(x, y, 0.5);
      expect(poincareDistance(mid, y)).toBeCloseTo(d / 2, 6);
    }
    expect(() => sampleGeodesic(pts[0]!, pts[1]!, 1)).toThrow(RangeError);
  });

  it('a path through a point nearer the origin is longer than the geodesic and passes through it', () => {
    const [x, y] = pairs[0]!;
    const mid = geodesicPoint(x, y, 0.5);
    const via = mobiusScale(0.3, mid);
    const path = samplePathVia(x, via, y, 21);
    expect(path.length).toBeGreaterThanOrEqual(poincareDistance(x, y) - 1e-9);
    expect(path.length).toBeCloseTo(poincareDistance(x, via) + poincareDistance(via, y), 9);
    close(path.points[0]!.point, x);
    close(path.points[20]!.point, y);
    // The nearest sample to the apex lies within half a step of it.
    const step = path.length / 20;
    expect(Math.min(...path.points.map((p) => poincareDistance(p.point, via)))).toBeLessThanOrEqual(step / 2 + 1e-6);
    // The geodesic itself is the path through its own midpoint.
    expect(samplePathVia(x, mid, y, 3).length).toBeCloseTo(poincareDistance(x, y), 6);
  });
});

describe('buildPoincareBall', () => {
  /** Unit vectors around a common direction, at known angles from it (larger index = farther from the centroid). */
  function corpus(n: number, dim: number): Float32Array[] {
    let s = 3;
    const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
    return Array.from({ length: n }, (_, i) => {
      const v = new Float32Array(dim);
      v[0] = 1;
      const spread = 0.05 + (i / n) * 1.5;
      for (let d = 1; d < dim; d++) v[d] = rand() * spread;
      const m = Math.hypot(...v);
      return v.map((x) => x / m);
    });
  }

  it('orders songs by their distance to the centroid, keeps radii in [0, 1) and the disc at the same radius', async () => {
    const vs = corpus(300, 24);
    const ball = await buildPoincareBall({ size: vs.length, dim: 24, getVector: (r) => vs[r]! });
    expect(ball.dim).toBe(16);
    const mean = new Float64Array(24);
    for (const v of vs) v.forEach((x, d) => (mean[d]! += x / vs.length));
    const g = vs.map((v) => Math.hypot(...Array.from(v, (x, d) => x - mean[d]!)));
    for (let i = 0; i < vs.length; i++) {
      expect(ballRadius(ball, i)).toBeGreaterThanOrEqual(0);
      expect(ballRadius(ball, i)).toBeLessThan(1);
      expect(Math.hypot(...ballDisc(ball, i))).toBeCloseTo(ballRadius(ball, i), 5);
      for (let j = 0; j < vs.length; j += 37) if (g[i]! < g[j]!) expect(ballRadius(ball, i)).toBeLessThanOrEqual(ballRadius(ball, j) + 1e-6);
    }
    // The 1st percentile maps to the centre and the 99th to BALL_RIM_RADIUS (0.95).
    const sorted = Float64Array.from(g).sort();
    expect(ball.scale.low).toBeCloseTo(quantileSorted(sorted, 0.01), 5);
    expect(ball.scale.high).toBeCloseTo(quantileSorted(sorted, 0.99), 5);
    const at99 = g.findIndex((x) => Math.abs(x - ball.scale.high) < 1e-3);
    if (at99 >= 0) expect(ballRadius(ball, at99)).toBeCloseTo(0.95, 2);
    expect(ball.maxRadius).toBe(Math.max(...ball.radius!));
    expect(ball.explainedVariance).toBeGreaterThan(0);
    expect(ball.explainedVariance).toBeLessThanOrEqual(1);
  });

  it('is deterministic and handles an empty and a one-song index', async () => {
    const vs = corpus(50, 8);
    const a = await buildPoincareBall({ size: 50, dim: 8, getVector: (r) => vs[r]! });
    const b = await buildPoincareBall({ size: 50, dim: 8, getVector: (r) => vs[r]! });
    expect(Array.from(a.points)).toEqual(Array.from(b.points));
    expect(a.dim).toBe(8);
    expect((await buildPoincareBall({ size: 0, dim: 8, getVector: () => new Float32Array(8) })).size).toBe(0);
    const one = await buildPoincareBall({ size: 1, dim: 8, getVector: () => vs[0]! });
    expect(one.dim).toBe(1);
    expect(ballRadius(one, 0)).toBeGreaterThanOrEqual(0);
    expect(ballRadius(one, 0)).toBeLessThan(1);
  });

  it('stores int16 points from the compact threshold (no radius or norm tables): the same points within 1.5e-5, the same nearest songs', async () => {
    const vs = corpus(400, 24);
    const input = { size: vs.length, dim: 24, getVector: (r: number) => vs[r]! };
    const full = await buildPoincareBall(input, undefined, 16, Infinity);
    const compact = await buildPoincareBall(input, undefined, 16, 400);
    expect(full.points).toBeInstanceOf(Float32Array);
    expect(compact.points).toBeInstanceOf(Int16Array);
    // 16 coordinates x 2 bytes = 32 bytes a song (radius and squared norm computed on demand), against 72 in float32
    // (+ radius + norm2).
    expect(ballBytes(compact)).toBe(400 * 32);
    expect(ballBytes(full)).toBe(400 * 72);
    expect(compact.norm2).toBeUndefined();
    expect(compact.radius).toBeUndefined();
    // The largest radius is the largest on-demand radius (the niche target's rim).
    expect(compact.maxRadius).toBe(Math.max(...Array.from({ length: 400 }, (_, r) => ballRadius(compact, r))));
    for (let r = 0; r < 400; r++) {
      const a = ballPoint(full, r);
      const b = ballPoint(compact, r);
      for (let j = 0; j < 16; j++) expect(Math.abs(a[j]! - b[j]!)).toBeLessThanOrEqual(1.6e-5);
      expect(Math.abs(ballRadius(full, r) - ballRadius(compact, r))).toBeLessThan(1e-4);
      const [x, y] = ballDisc(compact, r);
      expect(Math.hypot(x, y)).toBeCloseTo(ballRadius(compact, r), 5);
    }
    // The squared norm computed on demand is the float64 sum of the stored point's squares, float32-rounded (what the
    // ball stored per row before): exact for the float32 ball, and the square of the radius to float32 precision.
    for (let r = 0; r < 400; r += 7) {
      const p = ballPoint(full, r);
      let m2 = 0;
      for (let j = 0; j < 16; j++) m2 += p[j]! * p[j]!;
      expect(ballNorm2(full, r)).toBe(Math.fround(m2));
      // The compact ball's on-demand value is the one a stored table would hold (the same sum, float32-rounded).
      let c2 = 0;
      for (let j = 0; j < 16; j++) c2 += (compact.points[r * 16 + j]! * compact.pointScale) ** 2;
      expect(ballNorm2(compact, r)).toBe(Math.fround(c2));
      expect(Math.abs(ballNorm2(compact, r) - ballRadius(compact, r) ** 2)).toBeLessThan(1e-6);
      // The on-demand radius is the value the build stored per row before (float32 of the float64 sum's root), and the
      // float ball's stored one is the same formula over its points.
      expect(ballRadius(compact, r)).toBe(Math.fround(Math.sqrt(c2)));
      expect(ballRadius(full, r)).toBe(Math.fround(Math.sqrt(m2)));
    }
    // The 10 nearest songs of 20 seeds by Poincaré distance: the same distances to 1e-3, and each row the compact ball
    // returns is within 1e-4 of the float ball's 10th distance (rows tied at that precision may swap).
    const nearest = (ball: typeof full, seed: number) => {
      const q = ballPoint(ball, seed);
      const q2 = ballNorm2(ball, seed);
      return Array.from({ length: 400 }, (_, r) => r)
        .filter((r) => r !== seed)
        .map((r) => [r, ballDistanceTo(ball, q, q2, r)] as const)
        .sort((a, b) => a[1] - b[1])
        .slice(0, 10);
    };
    for (let seed = 0; seed < 400; seed += 20) {
      const a = nearest(full, seed);
      const b = nearest(compact, seed);
      for (let i = 0; i < 10; i++) expect(b[i]![1]).toBeCloseTo(a[i]![1], 3);
      const q = ballPoint(full, seed);
      for (const [row] of b) expect(ballDistanceTo(full, q, ballNorm2(full, seed), row)).toBeLessThanOrEqual(a[9]![1] + 1e-4);
    }
  });
});
