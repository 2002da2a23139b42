/**
 * Pure logic of the map page (unit-tested, no DOM): the view transform (zoom and pan), a uniform
 * grid over the points for nearest-point hover in O(points per cell), and colour scales. Sized for
 * 100k+ points: coordinates live in Float32Arrays, nothing allocates per point per frame.
 */

/** Data-space bounds of the points. */
export interface Bounds {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

export function boundsOf(xs: Float32Array, ys: Float32Array): Bounds {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    const y = ys[i]!;
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  if (!Number.isFinite(minX)) return { minX: -1, minY: -1, maxX: 1, maxY: 1 };
  if (maxX === minX) {
    minX -= 1;
    maxX += 1;
  }
  if (maxY === minY) {
    minY -= 1;
    maxY += 1;
  }
  return { minX, minY, maxX, maxY };
}

/**
 * Screen = (data - center) * scale + half size; y grows downwards on screen, so data y is flipped.
 */
export class Viewport {
  cx = 0;
  cy = 0;
  scale = 1;
  constructor(
    public width: number,
    public height: number,
  ) {}

  /** Fits the bounds with a margin (fraction of the smaller side). */
  fit(b: Bounds, margin = 0.05): void {
    this.cx = (b.minX + b.maxX) / 2;
    this.cy = (b.minY + b.maxY) / 2;
    const sx = (this.width * (1 - 2 * margin)) / (b.maxX - b.minX);
    const sy = (this.height * (1 - 2 * margin)) / (b.maxY - b.minY);
    this.scale = Math.min(sx, sy);
  }

  toScreenX(x: number): number {
    return (x - this.cx) * this.scale + this.width / 2;
  }
  toScreenY(y: number): number {
    return this.height / 2 - (y - this.cy) * this.scale;
  }
  toDataX(sx: number): number {
    return (sx - this.width / 2) / this.scale + this.cx;
  }
  toDataY(sy: number): number {
    return (this.height / 2 - sy) / this.scale + this.cy;
  }

  /** Zooms by `factor` keeping the data point under screen (sx, sy) fixed. */
  zoomAt(factor: number, sx: number, sy: number): void {
    const dx = this.toDataX(sx);
    const dy = this.toDataY(sy);
    this.scale = Math.min(1e9, Math.max(1e-9, this.scale * factor));
    this.cx = dx - (sx - this.width / 2) / this.scale;
    this.cy = dy - (this.height / 2 - sy) / this.scale;
  }

  /** Pans by a screen-space offset (pixels). */
  panBy(dxPx: number, dyPx: number): void {
    this.cx -= dxPx / this.scale;
    this.cy += dyPx / this.scale;
  }
}

/** A uniform grid over data space: cell -> point indices (CSR layout: offsets + flat index array). */
export interface Grid {
  b: Bounds;
  cols: number;
  rows: number;
  cellW: number;
  cellH: number;
  offsets: Uint32Array;
  items: Uint32Array;
}

/** Builds the grid with about `perCell` points per cell on average. */
export function buildGrid(xs: Float32Array, ys: Float32Array, perCell = 8): Grid {
  const b = boundsOf(xs, ys);
  const n = xs.length;
  const cells = Math.max(1, Math.round(n / perCell));
  const aspect = (b.maxX - b.minX) / (b.maxY - b.minY);
  const cols = Math.max(1, Math.round(Math.sqrt(cells * aspect)));
  const rows = Math.max(1, Math.round(cells / cols));
  const cellW = (b.maxX - b.minX) / cols;
  const cellH = (b.maxY - b.minY) / rows;
  const cellOf = (i: number) => {
    const c = Math.min(cols - 1, Math.floor((xs[i]! - b.minX) / cellW));
    const r = Math.min(rows - 1, Math.floor((ys[i]! - b.minY) / cellH));
    return r * cols + c;
  };
  const counts = new Uint32Array(cols * rows + 1);
  for (let i = 0; i < n; i++) counts[cellOf(i) + 1]!++;
  for (let c = 1; c < counts.length; c++) counts[c]! += counts[c - 1]!;
  const offsets = counts.slice();
  const fill = counts.slice();
  const items = new Uint32Array(n);
  for (let i = 0; i < n; i++) items[fill[cellOf(i)]!++] = i;
  return { b, cols, rows, cellW, cellH, offsets, items };
}

/** Index of the point nearest to (x, y) within `radius` (data units), or -1. */
export function nearest(g: Grid, xs: Float32Array, ys: Float32Array, x: number, y: number, radius: number): number {
  const c0 = Math.max(0, Math.floor((x - radius - g.b.minX) / g.cellW));
  const c1 = Math.min(g.cols - 1, Math.floor((x + radius - g.b.minX) / g.cellW));
  const r0 = Math.max(0, Math.floor((y - radius - g.b.minY) / g.cellH));
  const r1 = Math.min(g.rows - 1, Math.floor((y + radius - g.b.minY) / g.cellH));
  let best = -1;
  let bestD = radius * radius;
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      const cell = r * g.cols + c;
      for (let k = g.offsets[cell]!; k < g.offsets[cell + 1]!; k++) {
        const i = g.items[k]!;
        const dx = xs[i]! - x;
        const dy = ys[i]! - y;
        const d = dx * dx + dy * dy;
        if (d <= bestD) {
          bestD = d;
          best = i;
        }
      }
    }
  }
  return best;
}

/** A categorical palette (colour-blind friendly, Okabe-Ito plus greys), as 0xAABBGGRR for ImageData. */
export const PALETTE = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#7f7f7f', '#a6761d', '#1b9e77', '#e7298a', '#66a61e'];

/** '#rrggbb' -> little-endian RGBA uint32 (alpha 255) for a Uint32Array view of ImageData. */
export function rgba32(hex: string): number {
  const v = parseInt(hex.slice(1), 16);
  const r = (v >> 16) & 255;
  const g = (v >> 8) & 255;
  const b = v & 255;
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** A continuous scale in [0, 1] from blue through grey to orange, as '#rrggbb'. */
export function rampColor(t: number): string {
  const u = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  const a = [0x21, 0x66, 0xac];
  const m = [0xbb, 0xbb, 0xbb];
  const z = [0xe6, 0x55, 0x0c];
  const [p, q, f] = u < 0.5 ? [a, m, u * 2] : [m, z, (u - 0.5) * 2];
  const c = p.map((x, i) => Math.round(x + (q[i]! - x) * f));
  return '#' + c.map((x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * A [0, 1] scale over the present values between their 5th and 95th percentiles (so a few
 * outliers do not wash out the colours); undefined when no value is present.
 */
export function percentileScale(values: Array<number | null | undefined>): { lo: number; hi: number; t: (v: number) => number } | undefined {
  const present = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (present.length === 0) return undefined;
  const at = (q: number) => present[Math.min(present.length - 1, Math.max(0, Math.round(q * (present.length - 1))))]!;
  const lo = at(0.05);
  const hi = at(0.95);
  const span = hi - lo;
  return { lo, hi, t: (v: number) => (span > 0 ? Math.min(1, Math.max(0, (v - lo) / span)) : 0.5) };
}

/** Even-odd rule (ray casting to +x): is (x, y) inside the closed polygon `poly` ([x0, y0, x1, y1, …])? */
export function insidePolygon(poly: ArrayLike<number>, x: number, y: number): boolean {
  let inside = false;
  const n = poly.length >> 1;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = poly[2 * i]!;
    const yi = poly[2 * i + 1]!;
    const xj = poly[2 * j]!;
    const yj = poly[2 * j + 1]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/**
 * Indices of the points inside a free-hand lasso (data-space polygon `poly`, closed implicitly), ascending.
 * Only the grid cells under the polygon's bounding box are visited, so a small lasso over 100k points
 * tests a few hundred. Fewer than 3 vertices select nothing.
 */
export function pointsInLasso(g: Grid, xs: Float32Array, ys: Float32Array, poly: ArrayLike<number>): number[] {
  if (poly.length < 6) return [];
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (let i = 0; i < poly.length; i += 2) {
    minX = Math.min(minX, poly[i]!);
    maxX = Math.max(maxX, poly[i]!);
    minY = Math.min(minY, poly[i + 1]!);
    maxY = Math.max(maxY, poly[i + 1]!);
  }
  const c0 = Math.max(0, Math.floor((minX - g.b.minX) / g.cellW));
  const c1 = Math.min(g.cols - 1, Math.floor((maxX - g.b.minX) / g.cellW));
  const r0 = Math.max(0, Math.floor((minY - g.b.minY) / g.cellH));
  const r1 = Math.min(g.rows - 1, Math.floor((maxY - g.b.minY) / g.cellH));
  const out: number[] = [];
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      const cell = r * g.cols + c;
      for (let k = g.offsets[cell]!; k < g.offsets[cell + 1]!; k++) {
        const i = g.items[k]!;
        const x = xs[i]!;
        const y = ys[i]!;
        if (x >= minX && x <= maxX && y >= minY && y <= maxY && insidePolygon(poly, x, y)) out.push(i);
      }
    }
  }
  return out.sort((a, b) => a - b);
}
