import { boundsOf, buildGrid, insidePolygon, nearest, percentileScale, pointsInLasso, rampColor, rgba32, Viewport } from './map-logic';
import { SseParser } from './sse';
import { snippetParts } from './track-format';

describe('map logic', () => {
  it('When a lasso is drawn, then exactly the points inside the polygon are selected (100k points, brute-force check)', () => {
    const n = 100_000;
    const xs = new Float32Array(n);
    const ys = new Float32Array(n);
    let seed = 3;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < n; i++) {
      xs[i] = rnd() * 2 - 1;
      ys[i] = rnd() * 2 - 1;
    }
    const grid = buildGrid(xs, ys);
    // A concave "L": the notch (0.2..0.5, 0.2..0.5) is outside.
    const poly = [0, 0, 0.5, 0, 0.5, 0.2, 0.2, 0.2, 0.2, 0.5, 0, 0.5];
    const got = pointsInLasso(grid, xs, ys, poly);
    const want: number[] = [];
    for (let i = 0; i < n; i++) {
      const [x, y] = [xs[i]!, ys[i]!];
      if (x > 0 && y > 0 && ((x < 0.5 && y < 0.2) || (x < 0.2 && y < 0.5))) want.push(i);
    }
    // Points within float error of an edge may go either way; everything else agrees.
    const onEdge = (i: number) => [0, 0.2, 0.5].some((e) => Math.abs(xs[i]! - e) < 1e-6 || Math.abs(ys[i]! - e) < 1e-6);
    expect(got.filter((i) => !onEdge(i))).toEqual(want.filter((i) => !onEdge(i)));
    expect(got.length).toBeGreaterThan(1500);
    expect(insidePolygon(poly, 0.3, 0.3)).toBe(false);
    expect(insidePolygon(poly, 0.1, 0.4)).toBe(true);
    expect(pointsInLasso(grid, xs, ys, [0, 0, 1, 1])).toEqual([]);
  });

  it('When the view zooms at a point, then that data point stays under the cursor; pan moves by screen pixels', () => {
    const v = new Viewport(800, 600);
    v.fit({ minX: 0, minY: 0, maxX: 10, maxY: 10 });
    const [sx, sy] = [200, 150];
    const [dx, dy] = [v.toDataX(sx), v.toDataY(sy)];
    v.zoomAt(2.5, sx, sy);
    expect(v.toScreenX(dx)).toBeCloseTo(sx, 6);
    expect(v.toScreenY(dy)).toBeCloseTo(sy, 6);
    const before = v.toScreenX(5);
    v.panBy(30, 0);
    expect(v.toScreenX(5)).toBeCloseTo(before + 30, 6);
    // data y grows upwards, screen y downwards
    expect(v.toScreenY(10)).toBeLessThan(v.toScreenY(0));
  });

  it('When points are indexed in the grid, then nearest() agrees with a brute-force search (100k points)', () => {
    const n = 100_000;
    const xs = new Float32Array(n);
    const ys = new Float32Array(n);
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < n; i++) {
      xs[i] = rnd() * 20 - 10;
      ys[i] = (rnd() - 0.5) * 4;
    }
    const t0 = Date.now();
    const grid = buildGrid(xs, ys);
    const buildMs = Date.now() - t0;
    expect(buildMs).toBeLessThan(1000);
    for (let q = 0; q < 50; q++) {
      const x = rnd() * 20 - 10;
      const y = (rnd() - 0.5) * 4;
      const r = 0.05;
      let best = -1;
      let bestD = r * r;
      for (let i = 0; i < n; i++) {
        const d = (xs[i]! - x) ** 2 + (ys[i]! - y) ** 2;
        if (d <= bestD) {
          bestD = d;
          best = i;
        }
      }
      const got = nearest(grid, xs, ys, x, y, r);
      if (best < 0) expect(got).toBe(-1);
      else expect((xs[got]! - x) ** 2 + (ys[got]! - y) ** 2).toBeCloseTo(bestD, 10);
    }
  });

  it('When all points coincide, then the bounds still have a size; colours pack as little-endian RGBA', () => {
    const b = boundsOf(new Float32Array([1, 1]), new Float32Array([2, 2]));
    expect(b.maxX - b.minX).toBe(2);
    expect(b.maxY - b.minY).toBe(2);
    expect(boundsOf(new Float32Array(0), new Float32Array(0))).toEqual({ minX: -1, minY: -1, maxX: 1, maxY: 1 });
    expect(rgba32('#102030')).toBe(0xff302010);
    expect(rampColor(0)).toBe('#2166ac');
    expect(rampColor(1)).toBe('#e6550c');
    expect(rampColor(NaN)).toBe('#2166ac');
  });
});

describe('map colour scale', () => {
  it('When tempo values have outliers and gaps, then the scale spans the 5th-95th percentile and clamps', () => {
    const values = [null, ...Array.from({ length: 99 }, (_, i) => 60 + i), 999];
    const s = percentileScale(values)!;
    expect(s.lo).toBe(65);
    expect(s.hi).toBe(154);
    expect(s.t(999)).toBe(1);
    expect(s.t(0)).toBe(0);
    expect(s.t(109.5)).toBeCloseTo(0.5, 6);
    expect(percentileScale([null, undefined])).toBeUndefined();
    expect(percentileScale([3, 3])!.t(3)).toBe(0.5);
  });
});

describe('server-sent events parser', () => {
  it('When events arrive split across chunks with CRLF, comments and multi-line data, then each complete event comes out once', () => {
    const p = new SseParser();
    expect(p.push('event: status\r\ndata: {"message":"Think')).toEqual([]);
    expect(p.push('ing"}\r\n\r\n: keep-alive\n\nevent: text\ndata: a\ndata: b\n\n')).toEqual([
      { event: 'status', data: '{"message":"Thinking"}' },
      { event: 'text', data: 'a\nb' },
    ]);
    expect(p.push('data: plain\n\n')).toEqual([{ event: 'message', data: 'plain' }]);
  });
});

describe('lyrics snippets', () => {
  it('When a snippet marks matches with <b>, then parts carry the bold flag and no other markup is interpreted', () => {
    expect(snippetParts('I <b>love</b> you <i>x</i>')).toEqual([
      { text: 'I ', bold: false },
      { text: 'love', bold: true },
      { text: ' you <i>x</i>', bold: false },
    ]);
  });
});
