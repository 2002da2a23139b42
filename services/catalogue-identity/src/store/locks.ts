/**
 * PostgreSQL advisory-lock keys of the catalogue (two-int4 form `pg_advisory_xact_lock(k1, k2)`, a key
 * space separate from the single-bigint locks the migrations use).
 *
 * - CATALOGUE_WRITE: every resolve holds it SHARED for its transaction, the start-time relabel holds it
 *   EXCLUSIVE, so ids never change under a resolve and a relabel sees a still catalogue.
 * - server key: resolves of a server hold it shared; deleting the server holds it exclusive, so no
 *   mapping of a deleted server is written after its tombstone.
 * - band keys: one per (band number, band value) of the signature. Two tracks within the Hamming
 *   tolerance share at least one band value (pigeonhole, domain bands.ts), so their resolves serialise
 *   on that key and the second sees the first's row; tracks that share no band never block each other.
 *   Keys are taken in sorted order, so two resolves never deadlock.
 * - unsignable key: the fp_0 id of an unsignable track (per provider file).
 * - batch keys (domain/batch-runner.ts): the admission key serialises enqueueing, coalescing,
 *   cancelling and claiming (one running task across replicas, held by a lease); the schedule key makes
 *   one process start a scheduled cleaning.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from './sql';

/** Namespace words (first int4) of each key kind. */
const NS_GLOBAL = 0x43480000;
const NS_SERVER = 0x43480001;
const NS_BAND = 0x43490000; // + band number (< 256)
const NS_UNSIGNABLE = 0x434a0000;
const NS_BATCH = 0x434b0000;

/** A two-int4 advisory lock key. */
export type LockKey = readonly [number, number];

/** The catalogue-wide write lock. */
export const CATALOGUE_WRITE_LOCK: LockKey = [NS_GLOBAL, 0];

/** Transaction-level lock around batch-task admission (enqueue, coalesce, cancel-running). */
export const BATCH_ADMISSION_LOCK: LockKey = [NS_BATCH, 2];
// [NS_BATCH, 3] was the lock of the retired cleaning-schedule timer (cleaning is a registry schedule now); keep it unused.

/** Signed 32-bit hash of a text (first 4 bytes of its SHA-256). */
export function hash32(text: string): number {
  return createHash('sha256').update(text, 'utf8').digest().readInt32BE(0);
}

/** Lock key of one media server. */
export function serverLockKey(serverId: string): LockKey {
  return [NS_SERVER, hash32(serverId)];
}

/** Lock key of one band value. @throws RangeError for a band number >= 256 or a value outside int4. */
export function bandLockKey(band: number, value: number): LockKey {
  if (!(band >= 0 && band < 256)) throw new RangeError(`band ${band} out of range`);
  if (!(value >= 0 && value <= 0x7fffffff)) throw new RangeError(`band value ${value} out of int4 range`);
  return [NS_BAND + band, value];
}

/** Lock key of an unsignable track's id. */
export function unsignableLockKey(itemId: string): LockKey {
  return [NS_UNSIGNABLE, hash32(itemId)];
}

/** Keys sorted (k1, then k2) and de-duplicated: the order every transaction takes them in. */
export function sortLockKeys(keys: readonly LockKey[]): LockKey[] {
  const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return sorted.filter((k, i) => i === 0 || k[0] !== (sorted[i - 1] as LockKey)[0] || k[1] !== (sorted[i - 1] as LockKey)[1]);
}

/**
 * Takes transaction-level advisory locks on `keys` in sorted order, in one round trip: `pg_advisory_xact_lock`
 * (exclusive) or `pg_advisory_xact_lock_shared` (shared). The sorted order is what keeps two transactions that take
 * overlapping key sets from deadlocking; `OFFSET 0` stops the planner from reordering the calls.
 */
async function lockKeys(m: Queryable, keys: readonly LockKey[], mode: 'exclusive' | 'shared'): Promise<void> {
  const sorted = sortLockKeys(keys);
  if (sorted.length === 0) return;
  const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await m.query(
    `SELECT count(${fn}(k1, k2)) FROM (SELECT k1, k2 FROM unnest($1::int[], $2::int[]) WITH ORDINALITY AS t(k1, k2, n) ORDER BY n OFFSET 0) s`,
    [sorted.map((k) => k[0]), sorted.map((k) => k[1])],
  );
}

/** Takes transaction-level exclusive locks on `keys` in sorted order (one round trip). */
export function lockExclusive(m: Queryable, keys: readonly LockKey[]): Promise<void> {
  return lockKeys(m, keys, 'exclusive');
}

/** Takes transaction-level shared locks on `keys` in sorted order (one round trip). */
export function lockShared(m: Queryable, keys: readonly LockKey[]): Promise<void> {
  return lockKeys(m, keys, 'shared');
}
