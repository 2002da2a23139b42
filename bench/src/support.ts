/**
 * What the cross-unit benchmarks reuse from the index's own benchmark code (services/index/src/bench):
 * the throw-away database, the child-process starter and the fake catalogue/registry server.
 */
export { adminUrl, createBenchDatabase, startChild } from '@polyphony/index/dist/bench/bench-support';

/** Absolute path of a compiled script of the index's benchmark folder (e.g. `fake-peers-server.js`). */
export function indexBenchScript(file: string): string {
  return require.resolve(`@polyphony/index/dist/bench/${file}`);
}
