import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Starts the worker-thread module `<dir>/<name>.js` (the built service), or, when only
 * `<dir>/<name>.ts` exists (ts-jest runs the sources), a worker that transpiles the TypeScript
 * module graph on the fly with the `typescript` package (CommonJS, ES2022) before requiring it.
 * `workerData` is handed to the worker (`worker_threads.workerData`). Used by the IVF build pool (re-exported by
 * `@polyphony/vector-engine`), the index service's map-layout (UMAP) and recording match threads, and the analysis
 * worker's CPU threads.
 */
export function startModuleWorker(dir: string, name: string, workerData?: unknown): Worker {
  const js = join(dir, `${name}.js`);
  if (existsSync(js)) return new Worker(js, { workerData });
  const ts = join(dir, `${name}.ts`);
  return new Worker(
    `const ts = require('typescript'); const fs = require('fs');
     require.extensions['.ts'] = (m, filename) => {
       const out = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { fileName: filename, compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
       m._compile(out.outputText, filename);
     };
     require(${JSON.stringify(ts)});`,
    { eval: true, workerData },
  );
}

/**
 * The file of module `<dir>/<name>`: `<name>.js` when built, else `<name>.ts` (ts-jest runs the sources; a
 * worker started by `startModuleWorker` can require either). Used to name the job modules a worker loads.
 */
export function moduleFile(dir: string, name: string): string {
  const js = join(dir, `${name}.js`);
  return existsSync(js) ? js : join(dir, `${name}.ts`);
}
