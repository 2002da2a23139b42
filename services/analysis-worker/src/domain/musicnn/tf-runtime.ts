/**
 * TensorFlow.js runtime selection for the MusiCNN network.
 *
 * Order for `auto`: `@tensorflow/tfjs-node` ('tensorflow' backend, native TF) when it can be required,
 * else `@tensorflow/tfjs` on the WebAssembly backend (`@tensorflow/tfjs-backend-wasm`, binaries read from
 * its own `dist/` folder on disk, no fetch), else the plain JavaScript 'cpu' backend. tfjs-node is not a
 * dependency (its install script downloads libtensorflow from outside the registry); it is used only if
 * an operator installed it.
 *
 * The tfjs engine is process-global: the active backend is shared by every model in the process. Callers
 * that need a particular backend call {@link ensureBackend} before running a model.
 */
import { dirname, sep } from 'node:path';
import type * as Tf from '@tensorflow/tfjs';
import { MusicnnModelError } from './weights';

/** A tfjs backend this module can select. */
export type NeuralBackend = 'tensorflow' | 'wasm' | 'cpu';
/** `auto` tries tensorflow, then wasm, then cpu. */
export type BackendPreference = 'auto' | NeuralBackend;

/** The tfjs namespace to use plus the backend it was set to. */
export interface TfRuntime {
  readonly tf: typeof Tf;
  readonly backend: NeuralBackend;
}

/** Module loader, injectable so tests can simulate a missing package. Defaults to `require`. */
export type ModuleLoader = (id: string) => unknown;

const defaultLoader: ModuleLoader = (id) => require(id) as unknown;

let wasmPathsSet = false;

/** Absolute directory (with trailing separator) holding the tfjs-backend-wasm `.wasm` binaries. */
export function wasmBinaryDirectory(): string {
  // package main is dist/tf-backend-wasm.node.js; the .wasm files sit next to it
  return dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + sep;
}

async function trySet(tf: typeof Tf, name: NeuralBackend): Promise<boolean> {
  try {
    const ok = await tf.setBackend(name);
    if (ok) await tf.ready();
    return ok && tf.getBackend() === name;
  } catch {
    return false;
  }
}

async function attempt(name: NeuralBackend, load: ModuleLoader): Promise<TfRuntime | undefined> {
  if (name === 'tensorflow') {
    let tfNode: typeof Tf;
    try {
      tfNode = load('@tensorflow/tfjs-node') as typeof Tf;
    } catch {
      return undefined;
    }
    tfNode.env().set('PROD', true);
    return (await trySet(tfNode, 'tensorflow')) ? { tf: tfNode, backend: 'tensorflow' } : undefined;
  }
  const tf = load('@tensorflow/tfjs') as typeof Tf;
  // Silences the "install tfjs-node" banner and debug warnings; has no effect on results.
  tf.env().set('PROD', true);
  if (name === 'wasm') {
    try {
      const wasm = load('@tensorflow/tfjs-backend-wasm') as { setWasmPaths(prefix: string, usePlatformFetch?: boolean): void };
      if (!wasmPathsSet) {
        wasm.setWasmPaths(wasmBinaryDirectory());
        wasmPathsSet = true;
      }
    } catch {
      return undefined;
    }
  }
  return (await trySet(tf, name)) ? { tf, backend: name } : undefined;
}

/**
 * Loads TensorFlow.js and activates a backend.
 * @param preference 'auto' (default) or an explicit backend
 * @param load module loader (tests inject one that fails for a package to simulate its absence)
 * @returns the tfjs namespace and the backend actually active
 * @throws MusicnnModelError when an explicitly requested backend is unavailable (auto always ends at cpu)
 */
export async function loadTfRuntime(preference: BackendPreference = 'auto', load: ModuleLoader = defaultLoader): Promise<TfRuntime> {
  const order: NeuralBackend[] = preference === 'auto' ? ['tensorflow', 'wasm', 'cpu'] : [preference];
  for (const name of order) {
    const rt = await attempt(name, load);
    if (rt) return rt;
  }
  throw new MusicnnModelError(`TensorFlow.js backend '${preference}' is not available in this installation`);
}

/** Re-activates `rt.backend` if something else switched the process-global tfjs backend since. */
export async function ensureBackend(rt: TfRuntime): Promise<void> {
  if (rt.tf.getBackend() !== rt.backend && !(await trySet(rt.tf, rt.backend))) {
    throw new MusicnnModelError(`cannot re-activate TensorFlow.js backend '${rt.backend}'`);
  }
}
