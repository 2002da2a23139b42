import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Mounts a real tmpfs of `size` (mount(8) syntax: `64m`, `256k`) on a fresh directory, for resource-exhaustion tests
 * (a full disk or temp directory). Needs root; where mounting is not permitted it logs why (naming `what`) and
 * returns undefined. `unmountTmpfs` undoes it.
 */
export function mountTmpfs(size: string, what: string): string | undefined {
  const dir = mkdtempSync(path.join(tmpdir(), 'polyphony-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return dir;
  } catch (err) {
    rmdirSync(dir);
    console.warn(`${what} skipped: cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
}

/** Unmounts a tmpfs from `mountTmpfs` and removes its directory (nothing for undefined). */
export function unmountTmpfs(dir: string | undefined): void {
  if (!dir) return;
  execFileSync('umount', [dir]);
  rmdirSync(dir);
}
