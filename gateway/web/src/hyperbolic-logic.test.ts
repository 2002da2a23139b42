import { DISC_MARGIN, discFrame, discToScreen, nearestDrawn, screenToDisc } from './hyperbolic-logic';

describe('Hyperbolic page: disc transform and picking', () => {
  it('When a disc point is placed on the canvas and read back, then it is the same point; the rim touches the margin', () => {
    const size = 400;
    for (const p of [[0, 0], [0.5, -0.25], [-0.9, 0.3]] as Array<[number, number]>) {
      const [sx, sy] = discToScreen(p, size);
      const back = screenToDisc(sx, sy, size);
      expect(back[0]).toBeCloseTo(p[0], 9);
      expect(back[1]).toBeCloseTo(p[1], 9);
    }
    expect(discToScreen([0, 0], size)).toEqual([200, 200]);
    // y points up; (1, 0) lies on the rim, DISC_MARGIN of the half-width from the edge.
    expect(discToScreen([0, 1], size)[1]).toBeLessThan(200);
    expect(discToScreen([1, 0], size)[0]).toBeCloseTo(400 - 200 * DISC_MARGIN, 9);
    expect(discFrame(size).r).toBeCloseTo(192, 9);
  });

  it('When the pointer is near a drawn point, then that point is picked; beyond the radius none is', () => {
    const pts: Array<[number, number]> = [[0, 0], [0.5, 0.5], [-0.5, 0]];
    const [sx, sy] = discToScreen([0.5, 0.5], 300);
    expect(nearestDrawn(pts, sx + 3, sy - 2, 300, 8)).toBe(1);
    expect(nearestDrawn(pts, sx + 30, sy, 300, 8)).toBe(-1);
    expect(nearestDrawn([], 10, 10, 300, 8)).toBe(-1);
  });
});
