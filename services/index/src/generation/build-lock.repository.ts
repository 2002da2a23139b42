import type { DataSource, QueryRunner } from 'typeorm';
import { pollForLock, type BuildLock, type BuildLockHandle } from './build-lock';

/** Advisory lock key: (namespace, key) = ('ipoly' as int32, 1 = index rebuild). */
export const BUILD_LOCK_KEY: readonly [number, number] = [0x69706f6c, 1];

/**
 * Cross-replica index build lock (issue 19: two replicas must never build at the same time).
 *
 * A PostgreSQL session-level advisory lock (`pg_try_advisory_lock(key1, key2)`) held on a dedicated
 * connection for the whole build. When the holder dies its connection closes and PostgreSQL releases the
 * lock at once: no lease to expire, no fencing token needed (the build's writes are keyed by its own
 * generation, and activation is one transaction). Waiting is a poll (every `pollMs`) so that a stopping
 * replica can give up without holding a blocked connection.
 */
export class PgBuildLock implements BuildLock {
  constructor(
    private readonly ds: DataSource,
    private readonly pollMs = 500,
  ) {}

  async tryAcquire(): Promise<BuildLockHandle | undefined> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    try {
      const rows: Array<{ ok: boolean }> = await qr.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [...BUILD_LOCK_KEY]);
      if (rows[0]?.ok) return handle(qr);
    } catch (err) {
      await qr.release();
      throw err;
    }
    await qr.release();
    return undefined;
  }

  acquire(signal: AbortSignal, onWait?: () => void): Promise<BuildLockHandle> {
    return pollForLock(this, this.pollMs, signal, onWait);
  }
}

function handle(qr: QueryRunner): BuildLockHandle {
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      try {
        await qr.query('SELECT pg_advisory_unlock($1, $2)', [...BUILD_LOCK_KEY]);
      } catch {
        // the connection is gone: PostgreSQL released the lock with it
      }
      await qr.release().catch(() => undefined);
    },
  };
}
