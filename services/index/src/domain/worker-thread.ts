import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Starts the worker-thread module `<dir>/<name>.js` (the built service), or, when only
 * `<dir>/<name>.ts` exists (ts-jest runs the sources), a worker that transpiles the TypeScript
 * module graph on the fly with the `typescript` package (CommonJS, ES2022) before requiring it.
 * Used by the IVF build pool and the map-layout (UMAP) worker.
 */
export function startModuleWorker(dir: string, name: string): Worker {
  const js = join(dir, `${name}.js`);
  if (existsSync(js)) return new Worker(js);
  const ts = join(dir, `${name}.ts`);
  return new Worker(
    `const ts = require('typescript'); const fs = require('fs');
     require.extensions['.ts'] = (m, filename) => {
       const out = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { fileName: filename, compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
       m._compile(out.outputText, filename);
     };
     require(${JSON.stringify(ts)});`,
    { eval: true },
  );
}
