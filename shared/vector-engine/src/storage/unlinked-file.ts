import { closeSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Default directory of a generation's local files (`INDEX_VECTOR_DIR` unset): `$TMPDIR/polyphony-index`. */
export const DEFAULT_INDEX_FILE_DIR = join(tmpdir(), 'polyphony-index');

/** Closes the descriptor of an unlinked file once its owner (a generation's structure) is garbage-collected. */
const closer = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});

let sequence = 0;

/**
 * Opens a new read-write file in `dir` (created if missing) and unlinks it at once, so it never outlives the process
 * (no clean-up after a crash); its descriptor is closed by `closeUnlinkedFile(owner, fd)` or when `owner` is
 * garbage-collected. Used by the per-generation files of the index (`VectorFile`, `ByteLog`).
 * @param name file name prefix and extension, e.g. `vectors` / `.f32` (visible in `ls -l /proc/<pid>/fd`)
 * @returns the descriptor
 * @throws Error when the directory cannot be created or the file opened
 */
export function openUnlinkedFile(owner: object, dir: string, name: string, ext: string): number {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}-${process.pid}-${Date.now()}-${sequence++}${ext}`);
  const fd = openSync(path, 'w+');
  unlinkSync(path);
  closer.register(owner, fd, owner);
  return fd;
}

/** Closes the descriptor of `openUnlinkedFile` now (and forgets the finaliser of `owner`). */
export function closeUnlinkedFile(owner: object, fd: number): void {
  closer.unregister(owner);
  closeSync(fd);
}

/** Writes `length` bytes of `b` from offset 0 at file `position`, looping over short writes. */
export function writeFully(fd: number, b: Uint8Array, length: number, position: number): void {
  let done = 0;
  while (done < length) done += writeSync(fd, b, done, length - done, position + done);
}

/**
 * Reads `length` bytes at file `position` into `out[outOffset ..]`, looping over short reads.
 * @throws Error (from `endError`) when the file ends first
 */
export function readFully(fd: number, out: Uint8Array, outOffset: number, length: number, position: number, endError: (at: number) => Error): void {
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, outOffset + done, length - done, position + done);
    if (n === 0) throw endError(position + done);
    done += n;
  }
}
