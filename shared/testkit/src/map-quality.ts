/**
 * Map quality measure shared by the map benchmark (map-umap.ts) and the UMAP unit tests: for each of
 * `rows`, whether its nearest other point on the 2-D map (squared Euclidean, exhaustive scan) carries
 * the same label. Returns the share in [0, 1]; a row listed twice counts twice. O(rows × points).
 */
export function mapNeighbourPurity(coords: Float32Array, label: (row: number) => number, rows: Iterable<number>): number {
  const n = coords.length / 2;
  let same = 0;
  let count = 0;
  for (const i of rows) {
    let best = -1;
    let bestD = Infinity;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const d = (coords[2 * i]! - coords[2 * j]!) ** 2 + (coords[2 * i + 1]! - coords[2 * j + 1]!) ** 2;
      if (d < bestD) [best, bestD] = [j, d];
    }
    if (label(best) === label(i)) same++;
    count++;
  }
  return count === 0 ? 0 : same / count;
}
