import 'reflect-metadata';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort, ServiceClient } from '@polyphony/platform';
import { createFakeSubsonic, PrivatePostgres, PrivateRabbit, syntheticCatalogue } from '@polyphony/testkit';

/**
 * Traffic faults (issue 36): the product in distributed mode on this machine, every unit its own process as the
 * Kubernetes Deployments run them (`<unit>/dist/main.js`): two gateways, two index replicas, registry, catalogue
 * and playlist, on a private PostgreSQL and RabbitMQ (free ports, so they can be stopped), with a fake Subsonic
 * server behind a proxy that can answer slowly or fail. Songs (synthetic embeddings) enter through the catalogue's
 * identity API and one index generation is built.
 *
 * A steady load of `connections` keep-alive clients (half on each gateway, like a load balancer in front of them)
 * sends similar songs by id (n 10), search and sync (a page of 50) in turn with the API token. Per scenario the load
 * runs `before` s, the fault is injected and cleared, and the load continues until every request kind has
 * answered 200 again plus `after` s. Scenarios, in order:
 *   kill -9 of index replica A (restarted after 5 s, as its Deployment would) · SIGTERM of index replica B once A is
 *   back (restarted) · restart (SIGTERM, start) of the registry, the catalogue and the playlist service (one replica
 *   each) · RabbitMQ restart · PostgreSQL stopped 15 s · PostgreSQL stopped 60 s · PostgreSQL frozen 15 s
 *   (SIGSTOP of its processes: a hung host or a network partition, connections stay open) · media server slow
 *   (5 s per call) for 30 s, then failing (503) for 30 s.
 * Printed per scenario: requests, failed (non-2xx, errors, 10 s client time-outs), of which 503 with Retry-After,
 * other 5xx, similar-by-id failures, p99 of the requests sent during the fault, recovery time (fault cleared -> every
 * request kind answered 200 again), and whether every process is still alive. A Markdown table at the end.
 * The load generator is node's http client in this process (16 loops; autocannon gives no per-request timestamps,
 * needed for "p99 during the fault" and the recovery time).
 *
 * An analysis run is in progress during the faults: the media server holds `TF_FRESH` (default 200) more tracks than
 * the seeded songs, each served with real audio (the synthetic catalogue serves a Wesnoth file), and the run started
 * before the first scenario downloads them through the proxy, decodes, embeds and resolves them (the seeded ones are
 * skipped as mapped). At the end: its state, its per-track outcomes and how many songs are mapped (and mapped twice).
 * The analysis worker is one more unit (restarted under load, scenario `restart-worker`), and the two gateways get a
 * rolling restart (`restart-gateways`): a request refused or reset by a stopping gateway is sent once more to the
 * other one, as a load balancer does, and counted as rerouted.
 *
 * Needs `npm run build`. Usage: node bench/dist/ops/traffic-faults.js [songs=400] [connections=16] [before=5] [after=5]
 * TF_LOG_LEVEL = the units' LOG_LEVEL (default warn). TF_LOG_DIR = a directory: each unit's log (stdout and stderr) is appended to `<unit>.log` there (default: only the last 20 kB kept, printed on a failure).
 * TF_SCENARIOS = comma list of scenario names to run (default all): kill9, sigterm, restart-registry, restart-catalogue, restart-playlist, restart-worker, restart-gateways, rabbitmq, pg15, pg60, pgfreeze, media.
 * Figures on the shared 2-core build machine are noisy (other jobs' load is printed with each row).
 */

const ROOT = path.resolve(__dirname, '../../..');
const API_TOKEN = randomBytes(16).toString('hex');
const CLIENT_TIMEOUT_MS = 10_000;

type UnitName = 'registry' | 'catalogue' | 'playlist' | 'worker' | 'index-a' | 'index-b' | 'gateway-1' | 'gateway-2';
const MAIN: Record<UnitName, string> = {
  registry: 'services/registry/dist/main.js',
  catalogue: 'services/catalogue-identity/dist/main.js',
  playlist: 'services/playlist/dist/main.js',
  worker: 'services/analysis-worker/dist/main.js',
  'index-a': 'services/index/dist/main.js',
  'index-b': 'services/index/dist/main.js',
  'gateway-1': 'gateway/dist/main.js',
  'gateway-2': 'gateway/dist/main.js',
};

/** One unit process; restartable on the same port. */
class Unit {
  child?: ChildProcess;
  exits: Array<{ code: number | null; signal: NodeJS.Signals | null; expected: boolean }> = [];
  private expectExit = false;
  stderr = '';

  constructor(
    readonly name: UnitName,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and resolves once it listens (its `/healthz` answers). */
  async start(): Promise<void> {
    this.expectExit = false;
    const logFile = process.env.TF_LOG_DIR ? path.join(process.env.TF_LOG_DIR, `${this.name}.log`) : undefined;
    const child = spawn(process.execPath, [path.join(ROOT, MAIN[this.name])], { env: { PATH: process.env.PATH ?? '', ...this.env, PORT: String(this.port) }, stdio: ['ignore', logFile ? 'pipe' : 'ignore', 'pipe'] });
    this.child = child;
    if (logFile) child.stdout!.on('data', (d: Buffer) => appendFileSync(logFile, d));
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-20_000);
      if (logFile) appendFileSync(logFile, d);
    });
    child.once('exit', (code, signal) => this.exits.push({ code, signal, expected: this.expectExit }));
    const until = Date.now() + 180_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited ${child.exitCode}: ${this.stderr.slice(-2000)}`);
      try {
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(1000) });
        if (res.ok) return;
      } catch {
        /* not yet */
      }
      if (Date.now() > until) throw new Error(`${this.name} did not start: ${this.stderr.slice(-2000)}`);
      await sleep(200);
    }
  }

  /** Sends `signal` (an expected exit) and waits for the process to end. */
  async kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    this.expectExit = true;
    const ended = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await ended;
  }

  /** Unexpected exits so far (a process that died by itself). */
  get crashed(): number {
    return this.exits.filter((e) => !e.expected).length;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A set-up or polling GET, sent again (up to 5 times) when the connection fails: on this loaded machine a reused
 * keep-alive socket is sometimes reset by a server whose event loop stalled past its keep-alive time-out, and one such
 * reset must not end the run. The measured load (class Load) never retries.
 */
async function getRetrying(url: string, init?: RequestInit): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(500 * attempt);
    }
  }
}

function load(): string {
  return loadavg()
    .map((x) => x.toFixed(1))
    .join('/');
}

/** HTTP proxy in front of the media server: `mode` normal, slow (delayMs per call) or failing (503). */
async function mediaProxy(target: string) {
  const t = new URL(target);
  const state = { mode: 'normal' as 'normal' | 'slow' | 'failing', delayMs: 5000, calls: 0 };
  const server = http.createServer((req, res) => {
    state.calls++;
    if (state.mode === 'failing') return void res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable');
    const forward = () => {
      const up = http.request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.writeHead(502).end());
      req.pipe(up);
    };
    if (state.mode === 'slow') setTimeout(forward, state.delayMs);
    else forward();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, state, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

/** The postmaster (from `postmaster.pid`) and its children: every process of a private PostgreSQL. */
async function postgresPids(dir: string): Promise<number[]> {
  const main = Number((await readFile(path.join(dir, 'data', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const { stdout } = await promisify(execFile)('pgrep', ['-P', String(main)]).catch(() => ({ stdout: '' }));
  return [main, ...stdout.split('\n').filter((l) => l.trim() !== '').map(Number)];
}

interface Sample {
  kind: string;
  start: number;
  ms: number;
  status: number;
  retryAfter: boolean;
  /** Refused or reset by its gateway and sent again to the other one (what a load balancer does). */
  rerouted?: boolean;
}

/** The steady load: `connections` loops over the request kinds, recording every request. */
class Load {
  readonly samples: Sample[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private n = 0;

  constructor(
    private readonly gateways: string[],
    private readonly kinds: Array<{ kind: string; path: (i: number) => string }>,
  ) {}

  start(connections: number): void {
    this.loops = Array.from({ length: connections }, (_, c) => this.loop(this.gateways[c % this.gateways.length]!));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  private one(base: string, p: string): Promise<{ status: number; retryAfter: boolean; connectionError?: boolean }> {
    return new Promise((resolve) => {
      const u = new URL(p, base);
      const req = http.request({ agent: this.agent, hostname: u.hostname, port: u.port, path: u.pathname + u.search, headers: { authorization: `Bearer ${API_TOKEN}` }, timeout: CLIENT_TIMEOUT_MS }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] !== undefined }));
        res.on('error', () => resolve({ status: 0, retryAfter: false }));
      });
      req.on('timeout', () => req.destroy(new Error('client time-out')));
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, retryAfter: false, connectionError: ['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(err.code ?? '') }));
      req.end();
    });
  }

  private async loop(base: string): Promise<void> {
    while (!this.stopped) {
      const i = this.n++;
      const k = this.kinds[i % this.kinds.length]!;
      const start = Date.now();
      const t0 = performance.now();
      let r = await this.one(base, k.path(i));
      // A connection refused or reset (a gateway stopping or restarting): sent once more to another gateway, as a
      // load balancer in front of them retries a failed connection on another endpoint. Counted as rerouted.
      const other = this.gateways.find((g) => g !== base);
      const rerouted = r.status === 0 && r.connectionError && other !== undefined;
      if (rerouted) r = await this.one(other, k.path(i));
      this.samples.push({ kind: k.kind, start, ms: performance.now() - t0, status: r.status, retryAfter: r.retryAfter, rerouted });
      if (r.status === 0) await sleep(50); // a refused connection returns at once: do not spin
    }
  }
}

function p99(values: number[]): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]!);
}

async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 400);
  const connections = Number(process.argv[3] ?? 16);
  const beforeSec = Number(process.argv[4] ?? 5);
  const afterSec = Number(process.argv[5] ?? 5);
  // Tracks on the media server not analysed yet: an analysis run over them is in progress during the faults.
  const fresh = Number(process.env.TF_FRESH ?? 200);
  const only = process.env.TF_SCENARIOS ? new Set(process.env.TF_SCENARIOS.split(',')) : undefined;
  console.log(`traffic faults: ${songs} songs, ${connections} connections, load avg ${load()} (2-core machine shared with other jobs: figures are noisy)`);

  const [pg, mq] = await Promise.all([PrivatePostgres.start(), PrivateRabbit.start()]);
  const catalogue = syntheticCatalogue(songs + fresh);
  const sub = createFakeSubsonic({ catalogue, user: 'nav-user', password: 'nav-secret-pw' });
  const fake = await sub.start();
  const media = await mediaProxy(fake.url);
  const dirs: string[] = [];
  const units = new Map<UnitName, Unit>();
  try {
    const ports = Object.fromEntries(await Promise.all((Object.keys(MAIN) as UnitName[]).map(async (n) => [n, await freePort()] as const))) as Record<UnitName, number>;
    const at = (n: UnitName) => `http://127.0.0.1:${ports[n]}`;
    const secret = randomBytes(32).toString('hex');
    const base: Record<string, string> = {
      DATABASE_URL: pg.url,
      AMQP_URL: mq.url,
      INTERNAL_SECRET: secret,
      REGISTRY_URL: at('registry'),
      CATALOGUE_URL: at('catalogue'),
      ANALYSIS_URL: at('worker'),
      INDEX_URL: at('index-a'),
      PLAYLIST_URL: at('playlist'),
      LOG_LEVEL: process.env.TF_LOG_LEVEL ?? 'warn',
      SHUTDOWN_TIMEOUT_MS: '20000',
    };
    // As the Kubernetes migrate Job / compose `migrate` service does, once.
    await new Promise<void>((resolve, reject) => {
      const m = spawn(process.execPath, [path.join(ROOT, 'infra/standalone/dist/migrate.js')], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: pg.url }, stdio: 'ignore' });
      m.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`migrate exited ${code}`))));
    });
    const gatewayEnv = { ...base, INDEX_URL: `${at('index-a')},${at('index-b')}`, SERVICE_USER: 'admin', SERVICE_PASSWORD: 'admin-password-1', API_TOKEN, JWT_SECRET: randomBytes(32).toString('hex') };
    for (const n of Object.keys(MAIN) as UnitName[]) {
      let env = n.startsWith('gateway') ? gatewayEnv : base;
      if (n.startsWith('index')) {
        const dir = await mkdtemp(path.join(tmpdir(), `tf-${n}-`));
        dirs.push(dir);
        env = { ...env, INDEX_VECTOR_DIR: dir };
      }
      units.set(n, new Unit(n, ports[n], env));
    }
    const u = (n: UnitName) => units.get(n)!;
    for (const n of ['registry', 'catalogue', 'playlist', 'worker', 'index-a', 'index-b'] as UnitName[]) await u(n).start();
    await u('gateway-1').start();
    await u('gateway-2').start();
    const gw = u('gateway-1').url;
    const bearer = { authorization: `Bearer ${API_TOKEN}`, 'content-type': 'application/json' };

    // Songs through the identity API, then one generation on both replicas.
    const created = await fetch(`${gw}/api/servers`, { method: 'POST', headers: bearer, body: JSON.stringify({ name: 'Navi', server_type: 'navidrome', creds: { url: media.url, user: 'nav-user', password: 'nav-secret-pw' } }) });
    if (created.status !== 201) throw new Error(`server registration: ${created.status} ${await created.text()}`);
    const serverId = ((await created.json()) as { id: string }).id;
    const client = new ServiceClient(() => u('catalogue').url, secret, 'traffic-faults', 30_000);
    const pid = (i: number) => sub.idOf(catalogue.trackAt(i)!);
    let seed = 36;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rnd(), 1e-12))) * Math.cos(2 * Math.PI * rnd());
    let centre: number[] = [];
    const t0 = Date.now();
    for (let i = 0; i < songs; i++) {
      if (i % 8 === 0) centre = Array.from({ length: 200 }, gauss);
      await client.post('/internal/identity/resolve', {
        serverId,
        providerId: pid(i),
        embedding: centre.map((c) => c + 0.6 * gauss()),
        embedderVersion: 'dsp-v1',
        durationSeconds: 120 + (i % 200),
        metadata: { title: `Song ${i}`, artist: `Artist ${i >> 3}`, artistId: `ar-${i >> 3}`, album: `Album ${i >> 3}`, albumArtist: `Artist ${i >> 3}` },
        descriptors: { tempo: 90 + (i % 60), key: 'C', scale: 'major', energy: -20 },
      });
    }
    const rebuild = await fetch(`${gw}/api/index/rebuild`, { method: 'POST', headers: bearer, body: '{}' });
    if (rebuild.status !== 202) throw new Error(`rebuild: ${rebuild.status}`);
    for (const n of ['index-a', 'index-b'] as UnitName[]) {
      const until = Date.now() + 180_000;
      for (;;) {
        const s = (await (await getRetrying(`${gw}/api/index/status`, { headers: bearer })).json()) as { items?: number; building?: boolean };
        const direct = await getRetrying(`${u(n).url}/readyz`);
        if (s.items === songs && !s.building && direct.ok) break;
        if (Date.now() > until) throw new Error(`${n} did not serve the generation: ${JSON.stringify(s)}`);
        await sleep(500);
      }
    }
    // Replica B loads the live generation on the generation event; give it a moment, then check it directly.
    await sleep(3000);
    console.log(`seeded ${songs} songs and built the generation in ${((Date.now() - t0) / 1000).toFixed(1)} s (load ${load()})`);

    const kinds = [
      { kind: 'similar', path: (i: number) => `/api/similar_tracks?item_id=${encodeURIComponent(pid((i * 7919) % songs))}&n=10` },
      { kind: 'search', path: (i: number) => `/api/search_tracks?search_query=${encodeURIComponent(`Song ${(i * 37) % songs}`)}` },
      { kind: 'sync', path: (i: number) => `/api/sync?page=${1 + (i % Math.max(1, Math.floor(songs / 50)))}&limit=50` },
    ];
    for (const k of kinds) {
      const res = await getRetrying(gw + k.path(1), { headers: bearer });
      if (res.status !== 200) throw new Error(`sanity ${k.kind}: ${res.status} ${await res.text()}`);
    }

    // The analysis run in progress during the faults: the `fresh` tracks need the whole pipeline (download through the
    // media proxy, decode, embed, identity); the seeded ones are skipped as already mapped.
    const started = await fetch(`${gw}/api/analysis/start`, { method: 'POST', headers: bearer, body: '{}' });
    if (started.status !== 202) throw new Error(`analysis start: ${started.status} ${await started.text()}`);
    const runId = ((await started.json()) as { task_id: string }).task_id;
    const runStart = Date.now();
    console.log(`analysis run ${runId} started over ${songs + fresh} tracks (${fresh} not analysed yet)`);

    const all = [...units.values()];
    const scenarios: Array<{ name: string; label: string; run: () => Promise<{ faultStart: number; faultEnd: number; note?: string }> }> = [
      {
        name: 'kill9',
        label: 'kill -9 index replica A (back after 5 s)',
        run: async () => {
          const faultStart = Date.now();
          await u('index-a').kill('SIGKILL');
          await sleep(5000);
          await u('index-a').start();
          return { faultStart, faultEnd: Date.now(), note: `replica A serving again ${((Date.now() - faultStart) / 1000).toFixed(1)} s after the kill` };
        },
      },
      {
        name: 'sigterm',
        label: 'SIGTERM index replica B (A back; B restarted)',
        run: async () => {
          const faultStart = Date.now();
          await u('index-b').kill('SIGTERM');
          const exited = Date.now();
          await u('index-b').start();
          return { faultStart, faultEnd: Date.now(), note: `B exited after ${((exited - faultStart) / 1000).toFixed(1)} s, serving again after ${((Date.now() - faultStart) / 1000).toFixed(1)} s` };
        },
      },
      // The single-replica units (in Kubernetes a rolling restart of a one-pod Deployment): SIGTERM, then started again.
      ...(['registry', 'catalogue', 'playlist'] as UnitName[]).map((n) => ({
        name: `restart-${n}`,
        label: `restart of the ${n} (SIGTERM, started again)`,
        run: async () => {
          const faultStart = Date.now();
          await u(n).kill('SIGTERM');
          const exited = Date.now();
          await u(n).start();
          return { faultStart, faultEnd: Date.now(), note: `exited after ${((exited - faultStart) / 1000).toFixed(1)} s, serving again after ${((Date.now() - faultStart) / 1000).toFixed(1)} s` };
        },
      })),
      {
        name: 'restart-worker',
        label: 'restart of the analysis worker during the run (SIGTERM, started again)',
        run: async () => {
          const faultStart = Date.now();
          await u('worker').kill('SIGTERM');
          const exited = Date.now();
          await u('worker').start();
          return { faultStart, faultEnd: Date.now(), note: `exited after ${((exited - faultStart) / 1000).toFixed(1)} s, serving again after ${((Date.now() - faultStart) / 1000).toFixed(1)} s` };
        },
      },
      {
        name: 'restart-gateways',
        label: 'rolling restart of the gateways (1 then 2: SIGTERM, started again)',
        run: async () => {
          const faultStart = Date.now();
          const notes: string[] = [];
          for (const n of ['gateway-1', 'gateway-2'] as UnitName[]) {
            const t = Date.now();
            await u(n).kill('SIGTERM');
            const exited = Date.now();
            await u(n).start();
            notes.push(`${n} exited after ${((exited - t) / 1000).toFixed(1)} s, back after ${((Date.now() - t) / 1000).toFixed(1)} s`);
          }
          return { faultStart, faultEnd: Date.now(), note: notes.join('; ') };
        },
      },
      {
        name: 'rabbitmq',
        label: 'RabbitMQ restart',
        run: async () => {
          const faultStart = Date.now();
          await mq.stop();
          await mq.restart();
          return { faultStart, faultEnd: Date.now(), note: `broker down ${((Date.now() - faultStart) / 1000).toFixed(1)} s` };
        },
      },
      ...[15, 60].map((seconds) => ({
        name: `pg${seconds}`,
        label: `PostgreSQL stopped ${seconds} s`,
        run: async () => {
          const faultStart = Date.now();
          await pg.stop('fast');
          await sleep(seconds * 1000 - (Date.now() - faultStart));
          await pg.restart();
          return { faultStart, faultEnd: Date.now() };
        },
      })),
      {
        name: 'pgfreeze',
        label: 'PostgreSQL frozen 15 s (SIGSTOP: connections open, no answer)',
        run: async () => {
          const faultStart = Date.now();
          const pids = await postgresPids(pg.dir);
          const signal = (sig: NodeJS.Signals) => pids.forEach((p) => {
            try {
              process.kill(p, sig);
            } catch {
              /* a backend that ended meanwhile */
            }
          });
          signal('SIGSTOP');
          await sleep(15_000 - (Date.now() - faultStart));
          signal('SIGCONT');
          return { faultStart, faultEnd: Date.now(), note: `${pids.length} PostgreSQL processes stopped` };
        },
      },
      {
        name: 'media',
        label: 'media server 5 s per call (30 s), then 503 (30 s)',
        run: async () => {
          const faultStart = Date.now();
          const calls0 = media.state.calls;
          media.state.mode = 'slow';
          await sleep(30_000);
          media.state.mode = 'failing';
          await sleep(30_000);
          media.state.mode = 'normal';
          return { faultStart, faultEnd: Date.now(), note: `${media.state.calls - calls0} media-server calls during the fault` };
        },
      },
    ];

    const rows: Array<Record<string, string | number>> = [];
    for (const s of scenarios) {
      if (only && !only.has(s.name)) continue;
      const loadBefore = load();
      const crashed0 = all.reduce((t, x) => t + x.crashed, 0);
      const traffic = new Load([u('gateway-1').url, u('gateway-2').url], kinds);
      traffic.start(connections);
      await sleep(beforeSec * 1000);
      const { faultStart, faultEnd, note } = await s.run();
      // Recovery: fault cleared -> every request kind answered 200 again (a request sent after the clearing).
      let recoveredAt: number | undefined;
      const until = Date.now() + 120_000;
      while (recoveredAt === undefined && Date.now() < until) {
        const firstOk = kinds.map((k) => traffic.samples.find((x) => x.kind === k.kind && x.start >= faultEnd && x.status === 200));
        if (firstOk.every((x) => x !== undefined)) recoveredAt = Math.max(...firstOk.map((x) => x!.start + x!.ms));
        else await sleep(200);
      }
      await sleep(afterSec * 1000);
      await traffic.stop();
      const samples = traffic.samples;
      const failed = samples.filter((x) => x.status < 200 || x.status >= 300);
      const during = samples.filter((x) => x.start >= faultStart && x.start <= faultEnd);
      const row = {
        scenario: s.label,
        requests: samples.length,
        failed: failed.length,
        '503 + Retry-After': failed.filter((x) => x.status === 503 && x.retryAfter).length,
        'other 5xx': failed.filter((x) => x.status >= 500 && !(x.status === 503 && x.retryAfter)).length,
        'errors/time-outs': failed.filter((x) => x.status === 0).length,
        rerouted: samples.filter((x) => x.rerouted).length,
        'similar failed': failed.filter((x) => x.kind === 'similar').length,
        'p99 during fault ms': p99(during.map((x) => x.ms)),
        'p99 whole run ms': p99(samples.map((x) => x.ms)),
        'recovery s': recoveredAt === undefined ? 'not within 120 s' : Math.max(0, (recoveredAt - faultEnd) / 1000).toFixed(2),
        'fault s': ((faultEnd - faultStart) / 1000).toFixed(1),
        'processes died': all.reduce((t, x) => t + x.crashed, 0) - crashed0,
        load: `${loadBefore} -> ${load()}`,
        note: note ?? '',
      };
      rows.push(row);
      console.log(JSON.stringify(row));
      await sleep(2000);
    }
    // The analysis run: ended SUCCESS, every track with one final outcome, every song mapped exactly once.
    const db = new Client({ connectionString: pg.url });
    await db.connect();
    let runState = '';
    const runUntil = Date.now() + 30 * 60_000;
    while (Date.now() < runUntil) {
      runState = ((await db.query<{ state: string }>(`SELECT state FROM analysis.runs WHERE id = $1`, [runId])).rows[0]?.state) ?? 'MISSING';
      if (!['NEW', 'RUNNING'].includes(runState)) break;
      await sleep(2000);
    }
    const outcomes = (await db.query<{ outcome: string; n: number }>(`SELECT outcome, count(*)::int AS n FROM analysis.run_tracks WHERE run_id = $1 GROUP BY outcome ORDER BY outcome`, [runId])).rows;
    const mapped = (await db.query<{ n: number; dup: number }>(`SELECT count(*)::int AS n, (count(*) - count(DISTINCT provider_id))::int AS dup FROM catalogue.track_server_map WHERE server_id = $1`, [serverId])).rows[0]!;
    await db.end();
    const tracks = outcomes.reduce((t, o) => t + o.n, 0);
    // The run's own account (message, per-server seen/skipped/mapped/analysed/failed counts), to tell a run that saw no
    // new track from one that lost them.
    const board = await getRetrying(`${u('gateway-2').url}/api/status/${runId}`, { headers: bearer }).then((r) => r.text()).catch((err: unknown) => `unreadable: ${(err as Error).message}`);
    console.log(`analysis run status: ${board.slice(0, 3000)}`);
    console.log(
      `analysis run during the faults: ${runState} after ${((Date.now() - runStart) / 1000).toFixed(0)} s; ${tracks} tracks (expected ${songs + fresh}), outcomes ${outcomes.map((o) => `${o.outcome} ${o.n}`).join(', ')}; ` +
        `songs mapped ${mapped.n} (expected ${songs + fresh}), mapped twice ${mapped.dup}`,
    );
    const cols = Object.keys(rows[0] ?? {});
    console.log(`\n| ${cols.join(' | ')} |\n| ${cols.map(() => '---').join(' | ')} |`);
    for (const r of rows) console.log(`| ${cols.map((c) => String(r[c])).join(' | ')} |`);
    const dead = all.filter((x) => !x.alive || x.crashed > 0).map((x) => `${x.name}: ${JSON.stringify(x.exits)} ${x.stderr.slice(-500)}`);
    console.log(dead.length ? `processes that died by themselves: ${dead.join('\n')}` : 'every process alive at the end (no unexpected exit)');
  } finally {
    await Promise.all([...units.values()].map((x) => x.kill('SIGKILL').catch(() => undefined)));
    await media.close();
    await fake.close();
    await mq.destroy().catch(() => undefined);
    await pg.destroy().catch(() => undefined);
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
