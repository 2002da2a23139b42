import type { BuildLock, BuildLockHandle } from './ports';

export type { BuildLock, BuildLockHandle } from './ports';

/** `BuildLock.acquire` over `tryAcquire`: tries every `pollMs`, calls `onWait` once before the first wait. */
export async function pollForLock(lock: Pick<BuildLock, 'tryAcquire'>, pollMs: number, signal: AbortSignal, onWait?: () => void): Promise<BuildLockHandle> {
  for (let waited = false; ; waited = true) {
    if (signal.aborted) throw new Error('index build aborted');
    const h = await lock.tryAcquire();
    if (h) return h;
    if (!waited) onWait?.();
    await new Promise((r) => setTimeout(r, pollMs));
  }
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
