import type { DataSource, QueryRunner } from 'typeorm';

/**
 * Cross-replica index build lock (issue 19: two replicas must never build at the same time).
 *
 * A PostgreSQL session-level advisory lock (`pg_try_advisory_lock(key1, key2)`) held on a dedicated
 * connection for the whole build. When the holder dies its connection closes and PostgreSQL releases the
 * lock at once: no lease to expire, no fencing token needed (the build's writes are keyed by its own
 * generation, and activation is one transaction). Waiting is a poll (every `pollMs`) so that a stopping
 * replica can give up without holding a blocked connection.
 */
export interface BuildLockHandle {
  /** Releases the lock and returns the connection to the pool. Idempotent; never throws. */
  release(): Promise<void>;
}

/** Lock port of the rebuild service (PostgreSQL in production, in-process in unit tests). */
export interface BuildLock {
  /**
   * Takes the lock, waiting while another replica holds it. `onWait` is called once when it has to wait.
   * @throws Error('index build aborted') when `signal` fires while waiting
   */
  acquire(signal: AbortSignal, onWait?: () => void): Promise<BuildLockHandle>;
  /** Takes the lock only when free right now; undefined when another replica holds it. */
  tryAcquire(): Promise<BuildLockHandle | undefined>;
}

/** Advisory lock key: (namespace, key) = ('ipoly' as int32, 1 = index rebuild). */
export const BUILD_LOCK_KEY: readonly [number, number] = [0x69706f6c, 1];

/** `BuildLock.acquire` over `tryAcquire`: tries every `pollMs`, calls `onWait` once before the first wait. */
async function pollForLock(lock: Pick<BuildLock, 'tryAcquire'>, pollMs: number, signal: AbortSignal, onWait?: () => void): Promise<BuildLockHandle> {
  for (let waited = false; ; waited = true) {
    if (signal.aborted) throw new Error('index build aborted');
    const h = await lock.tryAcquire();
    if (h) return h;
    if (!waited) onWait?.();
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

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

/** In-process lock (one replica, unit tests). */
export class LocalBuildLock implements BuildLock {
  private held = false;
  async tryAcquire(): Promise<BuildLockHandle | undefined> {
    if (this.held) return undefined;
    this.held = true;
    return { release: async () => void (this.held = false) };
  }
  acquire(signal: AbortSignal, onWait?: () => void): Promise<BuildLockHandle> {
    return pollForLock(this, 20, signal, onWait);
  }
}
