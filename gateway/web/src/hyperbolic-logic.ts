/**
 * Pure logic of the Hyperbolic page (unit-tested, no DOM): the disc <-> canvas transform and the nearest drawn
 * point under the pointer. The disc is the unit circle of the Poincaré disc (GET /api/hyperbolic/points `disc`);
 * it fills the square canvas less a margin of DISC_MARGIN of its half-width, with y pointing up.
 */

/** Share of the canvas half-width left around the unit circle. */
export const DISC_MARGIN = 0.04;

/** Centre (px) and radius (px) of the unit circle on a square canvas of `size` CSS pixels. */
export function discFrame(size: number): { cx: number; cy: number; r: number } {
  return { cx: size / 2, cy: size / 2, r: (size / 2) * (1 - DISC_MARGIN) };
}

/** Canvas position (CSS px) of a disc point [x, y]. */
export function discToScreen(p: readonly [number, number], size: number): [number, number] {
  const f = discFrame(size);
  return [f.cx + p[0] * f.r, f.cy - p[1] * f.r];
}

/** Disc point of a canvas position (CSS px); may lie outside the unit circle. */
export function screenToDisc(sx: number, sy: number, size: number): [number, number] {
  const f = discFrame(size);
  return [(sx - f.cx) / f.r, (f.cy - sy) / f.r];
}

/**
 * Index of the point drawn nearest to canvas position (sx, sy), within `maxPx` CSS pixels; -1 when none.
 * O(points): the page draws at most a few thousand.
 */
export function nearestDrawn(points: ReadonlyArray<readonly [number, number]>, sx: number, sy: number, size: number, maxPx: number): number {
  let best = -1;
  let bestD = maxPx * maxPx;
  for (let i = 0; i < points.length; i++) {
    const [x, y] = discToScreen(points[i]!, size);
    const d = (x - sx) ** 2 + (y - sy) ** 2;
    if (d <= bestD) [best, bestD] = [i, d];
  }
  return best;
}
