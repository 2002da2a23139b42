import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import { signIdentity } from '@polyphony/platform';
import { FakePeers, syntheticSongs, toSnapshotTrack } from '@polyphony/testkit';
import { createBenchDatabase } from '../bench-support';

/**
 * The heap guard on a whole index replica (issue 36, "the process near its memory limit"): one index replica process
 * (`heap-guard-child.js`: buildIndex with its real PostgreSQL store, migrations on start) runs with
 * `--max-old-space-size=<heapMiB>`, and a fake catalogue (FakePeers, in this process) serves its snapshot.
 *   1. `small` songs: a build fits -> generation G1;
 *   2. `small + extra` songs: the build outgrows the heap -> it stops with a heap error (the main thread's guard,
 *      HeapLimitError, or a build worker thread ended by its own heap limit, which workers inherit);
 *      checked: the error in the replica's log (`index build failed`, level error) and in `GET /api/index/status`
 *      (`last_build_error`), G1 still served (similar songs by id 200, `items` = small), the process alive;
 *   3. the extra songs removed again (the need back under the limit): a later build in the SAME process succeeds and
 *      clears `last_build_error`.
 * Prints one line per step and a verdict; exits 1 when a check fails.
 * Usage: node bench/dist/ops/heap-guard-replica.js [heapMiB=96] [small=2000] [extra=17000]
 * Needs `npm run build` and the machine's PostgreSQL (createBenchDatabase). Figures: docs/operations.md.
 */
function load(): string {
  return loadavg()
    .map((x) => x.toFixed(1))
    .join('/');
}

async function main(): Promise<void> {
  const heapMiB = Number(process.argv[2] ?? 96);
  const small = Number(process.argv[3] ?? 2000);
  const extra = Number(process.argv[4] ?? 17_000);
  console.log(`heap guard on a whole index replica: --max-old-space-size=${heapMiB}, ${small} songs, then ${small + extra}, then ${small} again (load ${load()})`);
  const db = await createBenchDatabase('heap_guard');
  const secret = randomBytes(32).toString('hex');
  const peers = new FakePeers();
  peers.binarySnapshot = true;
  peers.addServer({ id: 'srv-main', name: 'Main', type: 'jellyfin', isDefault: true, connection: { type: 'jellyfin', creds: { url: 'http://127.0.0.1:9', user_id: '0'.repeat(32), token: 't' } } });
  const all = [...syntheticSongs(small + extra, { songsPerArtist: 20, songsPerAlbum: 10, seed: 36 })];
  const add = (k: number) => {
    const { mappings: _unused, ...song } = toSnapshotTrack(all[k]!, []);
    peers.addSong(song);
    peers.map('srv-main', all[k]!.itemId, `m-${k}`, `ma-${all[k]!.artist}`);
  };
  for (let k = 0; k < small; k++) add(k);
  const peersUrl = await peers.start();
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMiB}`, path.join(__dirname, 'heap-guard-child.js'), JSON.stringify({ dbUrl: db.url, secret, peersUrl })], { stdio: ['pipe', 'pipe', 'pipe'] });
  let exit: { code: number | null; signal: string | null } | undefined;
  child.once('exit', (code, signal) => (exit = { code, signal }));
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  // The replica's log lines come on both streams (error level on stderr): both are read, stderr is also echoed.
  const reader = (echo: boolean) => {
    let buf = '';
    return (d: Buffer) => {
      if (echo) process.stderr.write(d);
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          lines.push({ text: line });
        }
        waiters.splice(0).forEach((w) => w());
      }
    };
  };
  child.stdout!.on('data', reader(false));
  child.stderr!.on('data', reader(true));
  const next = async (driver: string, from: number): Promise<Record<string, unknown>> => {
    for (;;) {
      const hit = lines.slice(from).find((l) => l.driver === driver);
      if (hit) return hit;
      if (exit) throw new Error(`the replica exited (${JSON.stringify(exit)}) waiting for ${driver}; last lines: ${JSON.stringify(lines.slice(-5))}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 1000);
      });
    }
  };
  const failures: string[] = [];
  const check = (ok: boolean, what: string) => {
    console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };
  try {
    const ready = await next('ready', 0);
    const url = String(ready.url);
    const auth = () => signIdentity({ sub: 'api-token', username: 'admin', role: 'admin', via: 'bearer', serverId: 'srv-main' }, secret);
    const get = async (p: string) => {
      const res = await fetch(url + p, { headers: auth() });
      return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
    };
    const build = async (label: string) => {
      const from = lines.length;
      const t = Date.now();
      child.stdin!.write('build\n');
      const r = await next('build', from);
      console.log(`${label}: ${JSON.stringify({ ...r, driver: undefined })} in ${((Date.now() - t) / 1000).toFixed(1)} s (load ${load()})`);
      return { r, logged: lines.slice(from) };
    };

    const first = await build(`1. build of ${small} songs`);
    check(first.r.lastError === null && first.r.items === small, `the first build (${small} songs) succeeded under the limit`);
    const g1 = Number(first.r.generation);

    for (let k = small; k < small + extra; k++) add(k);
    const second = await build(`2. build of ${small + extra} songs`);
    const err = String(second.r.lastError ?? '');
    // Either stop is a clear heap error: the main thread's guard (HeapLimitError) or a build worker thread ended by
    // its own heap limit (workers inherit --max-old-space-size; the guard samples the main thread only).
    const heapError = /JavaScript heap reached \d+% of its limit|heap out of memory/;
    const by = /JavaScript heap reached/.test(err) ? 'the main thread\'s guard (HeapLimitError)' : 'a build worker thread\'s own heap limit';
    check(heapError.test(err), `the build outgrowing the heap stopped with a heap error, by ${by}: ${err.slice(0, 160)}`);
    const logged = second.logged.find((l) => l.message === 'index build failed' && l.level === 'error');
    check(logged !== undefined && heapError.test(String(logged.err)), `the replica logged it at error level: ${JSON.stringify(logged ?? null).slice(0, 300)}`);
    const status = await get('/api/index/status');
    check(status.status === 200 && heapError.test(String(status.body?.last_build_error ?? '')), `GET /api/index/status -> ${status.status}, last_build_error: ${String(status.body?.last_build_error ?? null).slice(0, 120)}`);
    check(second.r.generation === g1 && second.r.items === small, `the previous generation ${g1} (${small} songs) is still served (serving ${String(second.r.generation)}, ${String(second.r.items)} songs)`);
    const similar = await get(`/api/similar_tracks?item_id=${encodeURIComponent('m-0')}&n=5`);
    check(similar.status === 200 && Array.isArray(similar.body) && (similar.body as unknown[]).length === 5, `similar songs by id answered from it: ${similar.status}`);
    check(exit === undefined, 'the process is alive');

    for (let k = small; k < small + extra; k++) peers.removeSong(all[k]!.itemId);
    const third = await build(`3. build of ${small} songs again (same process)`);
    check(third.r.lastError === null && third.r.items === small && Number(third.r.generation) > g1, `a later build in the same process succeeded (generation ${String(third.r.generation)})`);
    const after = await get('/api/index/status');
    check(after.status === 200 && (after.body?.last_build_error ?? null) === null, `last_build_error cleared: ${JSON.stringify(after.body?.last_build_error ?? null)}`);
    check(exit === undefined, 'the process is still alive');
  } finally {
    child.stdin!.end();
    await new Promise<void>((r) => (exit ? r() : child.once('exit', () => r())));
    await peers.stop();
    await db.drop();
  }
  console.log(failures.length ? `heap guard: ${failures.length} check(s) failed` : `heap guard: every check passed (load ${load()})`);
  if (failures.length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
