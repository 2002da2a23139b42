/**
 * Comparator of the golden-answer suite: a recorded (normalised) answer against a fresh one.
 *
 * Rules (docs/architecture.md, "Golden answers"):
 * - Numbers agree when `|a - b| <= abs + rel * max(|a|, |b|)` (GOLDEN_TOLERANCE: 1e-6 absolute plus 1e-6
 *   relative). Why: distances and scores are float32 sums (the index's SIMD kernels, MusiCNN on ONNX Runtime
 *   in float) whose last bits may change with the CPU's instruction set or summation order; float32 keeps
 *   about 7 significant digits (machine epsilon 1.19e-7), so 1e-6 covers a few ulps of accumulated noise and
 *   still catches any change a user could see. Integers get the same rule (counts far below 1e6 must match).
 * - Strings, booleans and null must be equal; an object must have exactly the same keys; an array the same
 *   length.
 * - **Ties may swap.** In an array of rows ranked by a score (`distance`, `similarity`, `divergence`,
 *   `score`), consecutive rows whose scores differ by no more than the tolerance form a tie group; a fresh
 *   answer may hold the group's rows in another order. When the tie group is the last one of the array (the
 *   cut-off at `n`), a row may also be replaced by a row of another song (IDENTITY_KEYS) of the same score
 *   (the product could have picked either); a recorded song with a changed field still fails. Any other
 *   reorder is a failure.
 */

/** The numeric tolerance: `|a - b| <= abs + rel * max(|a|, |b|)`. */
export interface Tolerance {
  abs: number;
  rel: number;
}

/** The suite's tolerance (see the file comment for why). */
export const GOLDEN_TOLERANCE: Tolerance = { abs: 1e-6, rel: 1e-6 };

/** Keys that rank the rows of an array (the first one a row has is used). */
export const RANK_KEYS = ['distance', 'similarity', 'divergence', 'score'] as const;

/** One disagreement: where (`$.body[3].distance`) and what. */
export interface Difference {
  path: string;
  message: string;
}

/** True when two numbers agree within `tol`. */
export function numbersAgree(a: number, b: number, tol: Tolerance = GOLDEN_TOLERANCE): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  return Math.abs(a - b) <= tol.abs + tol.rel * Math.max(Math.abs(a), Math.abs(b));
}

const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
const show = (v: unknown): string => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 160 ? `${s.slice(0, 157)}...` : s;
};

/** The value of the first of `keys` a row (a plain object) holds with the type `type`, else undefined. */
function firstField<T extends 'number' | 'string'>(row: unknown, keys: readonly string[], type: T): (T extends 'number' ? number : string) | undefined {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return undefined;
  for (const k of keys) {
    const v = (row as Record<string, unknown>)[k];
    if (typeof v === type) return v as T extends 'number' ? number : string;
  }
  return undefined;
}

/** The rank of a row (its first RANK_KEYS number), or undefined when the row is not a ranked object. */
const rankOf = (row: unknown): number | undefined => firstField(row, RANK_KEYS, 'number');

/** Keys that name what a row is (the first one a row has is used). */
export const IDENTITY_KEYS = ['item_id', 'id', 'artist_id', 'artist'] as const;

/** The identity of a row (its first IDENTITY_KEYS string), or undefined. */
const identityOf = (row: unknown): string | undefined => firstField(row, IDENTITY_KEYS, 'string');

/**
 * Compares `expected` (the fixture) with `actual` (this run) and returns every difference (empty = agree).
 * @param path where the values sit, for messages (default `$`)
 */
export function compareGolden(expected: unknown, actual: unknown, tol: Tolerance = GOLDEN_TOLERANCE, path = '$'): Difference[] {
  const ke = kind(expected);
  const ka = kind(actual);
  if (ke !== ka) return [{ path, message: `expected ${ke} ${show(expected)}, got ${ka} ${show(actual)}` }];
  if (ke === 'number') return numbersAgree(expected as number, actual as number, tol) ? [] : [{ path, message: `expected ${show(expected)}, got ${show(actual)} (tolerance ${tol.abs} + ${tol.rel} relative)` }];
  if (ke === 'array') return compareArrays(expected as unknown[], actual as unknown[], tol, path);
  if (ke === 'object') {
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const out: Difference[] = [];
    for (const k of Object.keys(e)) {
      if (!(k in a)) out.push({ path: `${path}.${k}`, message: `missing (expected ${show(e[k])})` });
      else out.push(...compareGolden(e[k], a[k], tol, `${path}.${k}`));
    }
    for (const k of Object.keys(a)) if (!(k in e)) out.push({ path: `${path}.${k}`, message: `unexpected field ${show(a[k])}` });
    return out;
  }
  return expected === actual ? [] : [{ path, message: `expected ${show(expected)}, got ${show(actual)}` }];
}

/** Array comparison: positional, except inside tie groups of ranked rows (see the file comment). */
function compareArrays(e: unknown[], a: unknown[], tol: Tolerance, path: string): Difference[] {
  if (e.length !== a.length) {
    const out: Difference[] = [{ path, message: `expected ${e.length} items, got ${a.length}` }];
    for (let i = a.length; i < e.length; i++) out.push({ path: `${path}[${i}]`, message: `missing ${show(e[i])}` });
    for (let i = e.length; i < a.length; i++) out.push({ path: `${path}[${i}]`, message: `unexpected ${show(a[i])}` });
    return out;
  }
  const ranks = e.map(rankOf);
  const ranked = ranks.every((r) => r !== undefined) && a.every((r) => rankOf(r) !== undefined);
  if (!ranked) return e.flatMap((x, i) => compareGolden(x, a[i], tol, `${path}[${i}]`));
  const out: Difference[] = [];
  for (let start = 0; start < e.length; ) {
    let end = start + 1;
    while (end < e.length && numbersAgree(ranks[end - 1]!, ranks[end]!, tol)) end++;
    out.push(...compareTieGroup(e, a, start, end, end === e.length, tol, path));
    start = end;
  }
  return out;
}

/**
 * Rows `start..end-1` of a ranked array: every fresh row must equal a distinct recorded row of the group;
 * in the last group (`isLast`), a fresh row may instead be any row whose rank ties with the group's.
 * A group of one row is compared field by field, so its messages point at the field that changed.
 */
function compareTieGroup(e: unknown[], a: unknown[], start: number, end: number, isLast: boolean, tol: Tolerance, path: string): Difference[] {
  const positional = () => e.slice(start, end).flatMap((x, j) => compareGolden(x, a[start + j], tol, `${path}[${start + j}]`));
  const direct = positional();
  if (direct.length === 0 || end - start === 1 && !isLast) return direct;
  const free = new Set<number>();
  for (let i = start; i < end; i++) free.add(i);
  const unmatched: number[] = [];
  for (let j = start; j < end; j++) {
    const hit = [...free].find((i) => compareGolden(e[i], a[j], tol).length === 0);
    if (hit === undefined) unmatched.push(j);
    else free.delete(hit);
  }
  if (unmatched.length === 0) return [];
  if (!isLast) return direct;
  // The cut-off: a fresh row may be another song of the same score, never a recorded song with changed fields.
  const recorded = new Set(e.map(identityOf));
  const fresh = a.map(identityOf);
  const substitute = (j: number) => {
    const id = fresh[j];
    return id !== undefined && !recorded.has(id) && fresh.indexOf(id) === j && numbersAgree(rankOf(a[j])!, rankOf(e[start])!, tol) && numbersAgree(rankOf(a[j])!, rankOf(e[end - 1])!, tol);
  };
  return unmatched.every(substitute) ? [] : direct;
}

/** Formats differences for a failure message: one line each, at most `limit` lines. */
export function formatDifferences(label: string, diffs: Difference[], limit = 40): string {
  const lines = diffs.slice(0, limit).map((d) => `  ${d.path}: ${d.message}`);
  if (diffs.length > limit) lines.push(`  ... and ${diffs.length - limit} more`);
  return `${label}: ${diffs.length} difference(s)\n${lines.join('\n')}`;
}
