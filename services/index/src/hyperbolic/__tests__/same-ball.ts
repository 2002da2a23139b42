import type { PoincareBall } from '../ball';

/** A typed array's bytes as base64 ("none" when absent), to compare bit for bit. */
export const bytes = (x: ArrayBufferView | undefined) => (x ? Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64') : 'none');

/** Every stored value of two balls is the same (points, radius, squared norms, scale, rim). */
export function expectSameBall(a: PoincareBall, b: PoincareBall): void {
  expect([a.size, a.dim, a.pointScale, a.maxRadius, a.scale, a.explainedVariance]).toEqual([b.size, b.dim, b.pointScale, b.maxRadius, b.scale, b.explainedVariance]);
  expect(bytes(a.points)).toBe(bytes(b.points));
  expect(bytes(a.radius)).toBe(bytes(b.radius));
  expect(bytes(a.norm2)).toBe(bytes(b.norm2));
}
