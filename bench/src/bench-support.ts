import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from 'pg';

/** Admin connection of the benchmark database server (TEST_DATABASE_URL or the local PostgreSQL). */
export function adminUrl(): string {
  return process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** Creates a fresh database; returns its URL and a drop function. */
export async function createBenchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: adminUrl() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * Starts a compiled bench script as a child process and waits for its first JSON line on stdout.
 * `script` is an absolute path or a file name in this folder (bench/dist).
 */
export async function startChild<T>(script: string, args: string[]): Promise<{ child: ChildProcess; info: T }> {
  const child = fork(path.isAbsolute(script) ? script : path.join(__dirname, script), args, { stdio: ['pipe', 'pipe', 'inherit', 'ipc'] });
  const info = await new Promise<T>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)) as T);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, info };
}

/** Samples this process's RSS every `everyMs` and keeps the peak. */
export class RssSampler {
  peak = 0;
  private timer?: NodeJS.Timeout;
  start(everyMs = 50): void {
    this.peak = process.memoryUsage().rss;
    this.timer = setInterval(() => {
      this.peak = Math.max(this.peak, process.memoryUsage().rss);
    }, everyMs);
  }
  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
    return this.peak;
  }
}

export const mb = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

/** Runs a full GC when node was started with --expose-gc. */
export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

let generationCpuUs = 0;

/**
 * Wraps a synthetic-data generator and adds the CPU time spent producing its items to `generationCpuS()`, so a
 * build benchmark can report the build's own CPU time (process.cpuUsage, all threads: call it only while no
 * worker thread runs, i.e. during the build's ingest phase).
 */
export function* timedGeneration<T>(items: Iterable<T>): Generator<T> {
  const it = items[Symbol.iterator]();
  for (;;) {
    const c0 = process.cpuUsage();
    const r = it.next();
    const c = process.cpuUsage(c0);
    generationCpuUs += c.user + c.system;
    if (r.done) return;
    yield r.value;
  }
}

/** CPU seconds spent in generators wrapped by `timedGeneration` so far. */
export function generationCpuS(): number {
  return generationCpuUs / 1e6;
}

/**
 * Calls `handler` with each line a bench driver writes to this child's stdin (trimmed; node:readline splits
 * them). The child benches (index replica, heap-guard replica) take commands such as `build` or `memory` this way.
 */
export function onStdinLine(handler: (line: string) => void): void {
  createInterface({ input: process.stdin }).on('line', (line) => handler(line.trim()));
}
