import type { IvfIndex } from '@polyphony/vector-engine';
import type { BallInput } from './ball';

/** Rows read at once when the ball walks a quantised index's vector file in row order (512 x 200 floats = 400 KiB). */
const BALL_READ_ROWS = 512;

/**
 * The rows of `index` as the ball reads them (issue 35, activation cost): in the quantised modes the unit vectors live
 * in a file in row order (`QuantisedParts.file`, the one `getVector` reads one positional read per row), so a row that
 * follows the previously read one fills a buffer of BALL_READ_ROWS rows with one read; any other row is `getVector`.
 * The values are the same floats. A returned vector is valid until the next call (a view of the buffer). Float mode:
 * the index itself (resident vectors).
 */
export function ballInputOf(index: IvfIndex): BallInput {
  const file = index.parts().quantised?.file;
  if (!file) return index;
  const { size, dim } = index;
  const buf = new Float32Array(BALL_READ_ROWS * dim);
  let start = 0;
  let count = 0;
  let last = -2;
  return {
    size,
    dim,
    getVector(row: number): Float32Array {
      if (row >= start && row < start + count) {
        last = row;
        return buf.subarray((row - start) * dim, (row - start + 1) * dim);
      }
      const sequential = row === last + 1;
      last = row;
      if (!sequential || row < 0 || row >= size) return index.getVector(row);
      count = Math.min(BALL_READ_ROWS, size - row);
      start = row;
      file.readRows(row, count, buf);
      return buf.subarray(0, dim);
    },
  };
}
