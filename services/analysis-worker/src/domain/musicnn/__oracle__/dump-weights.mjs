// Test oracle helper: dumps every array of a MusiCNN Keras HDF5 file with h5wasm (the HDF5 library itself,
// compiled to WebAssembly; independent of the jsfive reader the product uses) as raw little-endian float32
// files plus an index.json of {name: shape}. Usage: node dump-weights.mjs <file.h5> <out-dir>
import h5wasm from 'h5wasm/node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [, , file, out] = process.argv;
await h5wasm.ready;
const f = new h5wasm.File(file, 'r');
mkdirSync(out, { recursive: true });
const index = {};
function walk(g, prefix) {
  for (const k of g.keys()) {
    const o = g.get(k);
    const name = `${prefix}/${k}`;
    if (o instanceof h5wasm.Group) walk(o, name);
    else if (o instanceof h5wasm.Dataset) {
      const v = Float32Array.from(o.value);
      const key = name.replace(/^\/model_weights\//, '').split('/')[0] + '.' + k.replace(/(_1)?:0$/, '');
      writeFileSync(join(out, `${key}.f32`), Buffer.from(v.buffer));
      index[key] = o.shape;
    }
  }
}
walk(f.get('model_weights'), '/model_weights');
f.close();
writeFileSync(join(out, 'index.json'), JSON.stringify(index));
