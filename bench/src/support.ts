/**
 * What the cross-unit benchmarks share: the throw-away database, the child-process starter (bench-support.ts)
 * and the scripts of the index's benchmark folder (`index/`, e.g. the fake catalogue/registry server).
 */
import path from 'node:path';

export { adminUrl, createBenchDatabase, startChild } from './bench-support';

/** Absolute path of a compiled script of the index's benchmark folder (e.g. `fake-peers-server.js`). */
export function indexBenchScript(file: string): string {
  return path.join(__dirname, 'index', file);
}
