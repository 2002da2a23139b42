import { slerp } from './similarity.service';

const norm = (v: Float32Array) => Math.hypot(...v);
const angle = (a: Float32Array, b: Float32Array) => Math.acos(Math.max(-1, Math.min(1, a.reduce((s, x, i) => s + x * b[i]!, 0))));

describe('slerp', () => {
  const a = new Float32Array([1, 0, 0]);
  const b = new Float32Array([0, 1, 0]);

  it('When t runs from 0 to 1, then points stay on the unit sphere at evenly spaced angles', () => {
    expect(Array.from(slerp(a, b, 0))).toEqual([1, 0, 0]);
    const end = slerp(a, b, 1);
    expect(end[1]).toBeCloseTo(1, 6);
    for (const t of [0.25, 0.5, 0.75]) {
      const p = slerp(a, b, t);
      expect(norm(p)).toBeCloseTo(1, 6);
      expect(angle(a, p)).toBeCloseTo((t * Math.PI) / 2, 5);
    }
  });

  it('When the two vectors coincide, then every point is that vector', () => {
    expect(Array.from(slerp(a, a, 0.4))).toEqual([1, 0, 0]);
  });
});
