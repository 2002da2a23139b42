import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * One `index-replica.js` child process as the index benchmarks start it (`index-throughput.ts`, `index/replica-memory.ts`):
 * its ready line (`ReplicaInfo`) and a way to ask its memory figures again.
 */
export interface ReplicaInfo {
  url: string;
  buildMs: number;
  loadMs: number;
  rssMb: number;
  generation: number;
}

export type Replica = { child: ChildProcess; info: ReplicaInfo; memory: () => Promise<unknown>; ask: (line: string) => Promise<string> };

/** jemalloc's shared library where the image (/usr/local/lib) or Debian's package puts it; undefined when absent. */
export function jemallocPath(): string | undefined {
  return ['/usr/local/lib/libjemalloc.so.2', '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'].find((p) => existsSync(p));
}

/**
 * The allocator and V8 settings the index unit is deployed with: `MALLOC_CONF` and `NODE_OPTIONS` of the index
 * container in `k8s/index.yaml` (docker-compose.yml and the standalone launch carry the same values, pinned by
 * `infra/standalone/test/k8s-manifests.test.ts`), so a bench replica runs as deployed without a second copy of them.
 * @throws when the manifest lacks either variable
 */
export function deployedIndexEnv(): { MALLOC_CONF: string; NODE_OPTIONS: string } {
  const manifest = readFileSync(path.resolve(__dirname, '../../k8s/index.yaml'), 'utf8');
  const value = (name: string): string => {
    const m = new RegExp(`- \\{ name: ${name}, value: "([^"]*)" \\}`).exec(manifest);
    if (!m) throw new Error(`k8s/index.yaml: no ${name} in the index container's env`);
    return m[1]!;
  };
  return { MALLOC_CONF: value('MALLOC_CONF'), NODE_OPTIONS: value('NODE_OPTIONS') };
}

/**
 * Starts `index-replica.js` with `options` (its argv JSON: dbUrl, secret, peersUrl, port, build, mode, workers) and
 * waits for its ready line (`script`: another tree's compiled `index-replica.js`, for before/after runs). TP_REPLICA_ARGS = extra node flags; TP_JEMALLOC=1 runs it as deployed
 * (`deployedIndexEnv`: jemalloc preloaded with the manifest's MALLOC_CONF, and its NODE_OPTIONS, e.g. the V8 young
 * generation size); TP_MALLOC_CONF / TP_NODE_OPTIONS replace those two values (A/B runs; TP_NODE_OPTIONS= for none). `memory()` sends `memory` on the child's stdin and resolves with its `memoryMiB` answer.
 * @throws when the child exits before its ready line, or TP_JEMALLOC=1 and libjemalloc.so.2 is absent
 */
export async function startReplica(options: Record<string, unknown>, script = path.join(__dirname, 'index-replica.js')): Promise<Replica> {
  const execArgv = (process.env.TP_REPLICA_ARGS ?? '').split(' ').filter((a) => a !== '');
  let env: NodeJS.ProcessEnv = process.env;
  if (process.env.TP_JEMALLOC === '1') {
    const lib = jemallocPath();
    if (!lib) throw new Error('TP_JEMALLOC=1: libjemalloc.so.2 not found (apt-get install libjemalloc2)');
    // As k8s/index.yaml and docker-compose.yml run the index unit.
    const deployed = deployedIndexEnv();
    env = { ...process.env, LD_PRELOAD: lib, MALLOC_CONF: process.env.TP_MALLOC_CONF ?? deployed.MALLOC_CONF, NODE_OPTIONS: process.env.TP_NODE_OPTIONS ?? deployed.NODE_OPTIONS };
  }
  const child = fork(script, [JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit', 'ipc'], execArgv, env });
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  const nextLine = () => new Promise<string>((resolve) => (lines.length ? resolve(lines.shift()!) : waiting.push(resolve)));
  const info = await new Promise<ReplicaInfo>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`replica exited with ${code}`)));
    void nextLine().then((l) => resolve(JSON.parse(l) as ReplicaInfo));
  });
  /** The replica's memory figures now (after a full GC when it runs with --expose-gc). */
  const memory = async (): Promise<unknown> => {
    child.stdin!.write('memory\n');
    return (JSON.parse(await nextLine()) as { memoryMiB: unknown }).memoryMiB;
  };
  /** Sends one command line (e.g. `heapsnapshot <file>`) and resolves with the replica's next output line. */
  const ask = async (line: string): Promise<string> => {
    child.stdin!.write(`${line}\n`);
    return nextLine();
  };
  return { child, info, memory, ask };
}

/** VmRSS of a process in MiB (/proc/<pid>/status; 0 elsewhere). */
export function vmRssMiB(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}
