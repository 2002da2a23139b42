// Bundles the web UI (gateway/web) with esbuild into gateway/dist/public:
//   assets/<name>-<hash>.js|css  content-hashed, served with a one-year immutable cache
//   index.html, login.html       the templates with the hashed names filled in, served no-cache
// @polyphony/contracts is bundled from its TypeScript sources (ES modules: zod schemas and route
// definitions only); platform 'browser' makes any Node built-in import a build error.
// Type checking and lint are not done here: `tsc -b` (gateway/web/tsconfig.json) and `eslint .` do them.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const web = path.join(root, 'gateway/web');
const out = path.join(root, 'gateway/dist/public');
const assets = path.join(out, 'assets');

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const started = Date.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    main: path.join(web, 'src/main.ts'),
    login: path.join(web, 'src/login.ts'),
    style: path.join(web, 'static/style.css'),
  },
  outdir: assets,
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: true,
  sourcemap: 'linked',
  metafile: true,
  legalComments: 'linked',
  alias: { '@polyphony/contracts': path.join(root, 'shared/contracts/src/index.ts') },
  logLevel: 'warning',
});

/** Public URL of each entry's output file ('main.js' -> '/assets/main-ABC.js'). */
const names = {};
for (const [file, meta] of Object.entries(result.metafile.outputs)) {
  if (!meta.entryPoint) continue;
  const entry = path.basename(meta.entryPoint).replace(/\.ts$/, '.js');
  names[entry] = '/assets/' + path.basename(file);
}
const fill = (template) =>
  readFileSync(path.join(web, 'static', template), 'utf8').replace(/\{\{([\w.-]+)\}\}/g, (_m, key) => {
    if (!names[key]) throw new Error(`build-ui: ${template} names ${key}, which is not a bundle entry`);
    return names[key];
  });
for (const page of ['index.html', 'login.html']) writeFileSync(path.join(out, page), fill(page));

let bytes = 0;
for (const [file, meta] of Object.entries(result.metafile.outputs)) if (!file.endsWith('.map')) bytes += meta.bytes;
console.log(`build-ui: ${Object.keys(names).length} entries, ${(bytes / 1024).toFixed(0)} kB of assets in ${Date.now() - started} ms -> ${path.relative(root, out)}`);
