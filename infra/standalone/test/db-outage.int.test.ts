/**
 * Issue 36 "database outage under traffic": the whole stack (gateway + registry, catalogue, index, playlist in this
 * process) on its OWN PostgreSQL (started on a free port so the test can stop it), a fake Subsonic server whose songs
 * are put into the catalogue through the identity API (synthetic embeddings, no audio), and an index generation built
 * from them. Then 16 connections send a steady mix of requests through the gateway while PostgreSQL is stopped for
 * 15 s and started again:
 *
 * - similar songs by id (API token; API token with `server=<display name>`; a session cookie): answered from the
 *   index's memory, so every one must be 200 before, during and after the outage;
 * - search, sync, `/api/config`, `/api/servers`, `/api/clap/stats`, `/api/index/status`: may need a database, so each
 *   answer must be 200 or a 503 in the error envelope with a `Retry-After` header;
 * - never a 500/502/504, never a request left hanging (10 s client time-out), no unit stopped;
 * - the index replica's and the gateway's `/readyz` stay 200 (database reported false, not required by either);
 * - after PostgreSQL is back, every kind of request answers 200 again within 30 s.
 * The same traffic with PostgreSQL frozen for 15 s (SIGSTOP of all its processes, then SIGCONT: connections stay open
 * and nothing answers): the pools' time-outs (DB_CONNECT_TIMEOUT_MS, DB_REQUEST_QUERY_TIMEOUT_MS) turn every wait
 * into a 503 with `Retry-After` within the client's 10 s, similar songs by id with the API token stay 200.
 * The figures (requests per phase and status, recovery time) are printed at the end.
 */
import request from 'supertest';
import { createLogger, ServiceClient } from '@polyphony/platform';
import { mulberry32 as prng } from '@polyphony/vectors';
import { createFakeSubsonic, PrivatePostgres, syntheticCatalogue, type StartedFake } from '@polyphony/testkit';
import { startStack, type Stack } from '../src/stack';
import { ADMIN, API_TOKEN, loginCookie } from './helpers';

const SONGS = 60;
const CONNECTIONS = 16;
const OUTAGE_MS = 15_000;
const CLIENT_TIMEOUT_MS = 10_000;
const SERVER_NAME = 'Outage Navi';

interface Outcome {
  kind: string;
  phase: 'before' | 'outage' | 'after';
  status: number;
  code?: string;
  retryAfter?: string | null;
  ms: number;
  /** When it was sent (Date.now()). */
  at: number;
}

/** Artist-clustered 200-d embeddings (5 songs per artist). */
function embeddings(n: number): number[][] {
  const rnd = prng(36);
  const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rnd(), 1e-12))) * Math.cos(2 * Math.PI * rnd());
  const bases = Array.from({ length: Math.ceil(n / 5) }, () => Array.from({ length: 200 }, gauss));
  return Array.from({ length: n }, (_, i) => bases[Math.floor(i / 5)]!.map((b) => b + 0.6 * gauss()));
}

describe('database outage under traffic', () => {
  jest.setTimeout(5 * 60_000);
  let pg: PrivatePostgres;
  let stack: Stack;
  let url: string;
  let fake: StartedFake;
  let cookie: string;
  const catalogue = syntheticCatalogue(SONGS);
  const sub = createFakeSubsonic({ catalogue, user: 'nav-user', password: 'nav-secret-pw' });
  const pid = (i: number) => sub.idOf(catalogue.trackAt(i)!);
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };

  beforeAll(async () => {
    [pg, fake] = await Promise.all([PrivatePostgres.start(), sub.start()]);
    stack = await startStack({
      databaseUrl: pg.url,
      port: 0,
      host: '127.0.0.1',
      env: { SERVICE_USER: ADMIN.username, SERVICE_PASSWORD: ADMIN.password, API_TOKEN },
      logger: createLogger({ service: 'db-outage-test', level: process.env.LOG_LEVEL ?? 'error' }),
      units: ['registry', 'catalogue', 'index', 'playlist'],
    });
    url = `http://127.0.0.1:${stack.port}`;
    const created = await request(url).post('/api/servers').set(bearer).send({ name: SERVER_NAME, server_type: 'navidrome', creds: { url: fake.url, user: 'nav-user', password: 'nav-secret-pw' } }).expect(201);
    const serverId = created.body.id as string;
    const client = new ServiceClient(() => stack.peers().catalogue, stack.internalSecret, 'db-outage-test', 30_000);
    const vectors = embeddings(SONGS);
    for (let i = 0; i < SONGS; i++) {
      await client.post('/internal/identity/resolve', {
        serverId,
        providerId: pid(i),
        embedding: vectors[i],
        embedderVersion: 'dsp-v1',
        durationSeconds: 120 + i,
        metadata: { title: `Song ${i}`, artist: `Artist ${Math.floor(i / 5)}`, artistId: `ar-${Math.floor(i / 5)}`, album: `Album ${Math.floor(i / 5)}`, albumArtist: `Artist ${Math.floor(i / 5)}` },
        descriptors: { tempo: 90 + i, key: 'C', scale: 'major', energy: -20 },
      });
    }
    const before = (await request(url).get('/api/index/status').set(bearer).expect(200)).body.generation as number;
    await request(url).post('/api/index/rebuild').set(bearer).send({}).expect(202);
    const deadline = Date.now() + 90_000;
    for (;;) {
      const s = (await request(url).get('/api/index/status').set(bearer).expect(200)).body;
      if (s.generation > before && !s.building && s.items === SONGS) break;
      if (Date.now() > deadline) throw new Error(`index did not build: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    cookie = await loginCookie(url);
  });

  afterAll(async () => {
    await stack?.stop().catch(() => undefined);
    await fake?.close();
    await pg?.destroy();
  });

  const cookieHeader = () => ({ Cookie: cookie });
  const kinds: Array<{ kind: string; fromMemory: boolean; path: (i: number) => string; headers: () => Record<string, string> }> = [
    { kind: 'similar (token)', fromMemory: true, path: (i) => `/api/similar_tracks?item_id=${encodeURIComponent(pid(i % SONGS))}&n=5`, headers: () => bearer },
    { kind: 'similar (token, server name)', fromMemory: true, path: (i) => `/api/similar_tracks?item_id=${encodeURIComponent(pid(i % SONGS))}&n=5&server=${encodeURIComponent(SERVER_NAME)}`, headers: () => bearer },
    { kind: 'similar (cookie)', fromMemory: true, path: (i) => `/api/similar_tracks?item_id=${encodeURIComponent(pid(i % SONGS))}&n=5`, headers: cookieHeader },
    { kind: 'search', fromMemory: false, path: (i) => `/api/search_tracks?search_query=${encodeURIComponent(`Song ${i % SONGS}`)}`, headers: () => bearer },
    { kind: 'sync', fromMemory: false, path: () => `/api/sync?page=1&limit=20`, headers: () => bearer },
    { kind: 'config', fromMemory: false, path: () => `/api/config`, headers: () => bearer },
    { kind: 'servers', fromMemory: false, path: () => `/api/servers`, headers: () => bearer },
    { kind: 'clap stats', fromMemory: false, path: () => `/api/clap/stats`, headers: () => bearer },
    { kind: 'index status', fromMemory: false, path: () => `/api/index/status`, headers: () => bearer },
  ];

  /**
   * 16 connections of the request kinds above for 3 s, then `inject()`, readiness read half-way through the fault,
   * `clear()` after OUTAGE_MS, then until every kind answered 200 again (at most 60 s) plus 3 s. Prints the figures.
   */
  async function underTraffic(label: string, inject: () => Promise<void>, clear: () => Promise<void>) {
    // Every kind answers 200 before the fault.
    for (const k of kinds) {
      const res = await fetch(url + k.path(1), { headers: k.headers() });
      expect([k.kind, res.status]).toEqual([k.kind, 200]);
      await res.arrayBuffer();
    }
    const outcomes: Outcome[] = [];
    let phase: Outcome['phase'] = 'before';
    let stop = false;
    let n = 0;
    const loop = async () => {
      while (!stop) {
        const i = n++;
        const k = kinds[i % kinds.length]!;
        const t0 = performance.now();
        const sentAt = Date.now();
        const at = phase;
        try {
          const res = await fetch(url + k.path(i), { headers: k.headers(), signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
          const text = await res.text();
          let code: string | undefined;
          if (res.status >= 400) code = (JSON.parse(text) as { code?: string }).code;
          outcomes.push({ kind: k.kind, phase: at, status: res.status, code, retryAfter: res.headers.get('retry-after'), ms: performance.now() - t0, at: sentAt });
        } catch (err) {
          // A time-out (hung connection) or a reset: status 0, never acceptable.
          outcomes.push({ kind: k.kind, phase: at, status: 0, code: (err as Error).name, ms: performance.now() - t0, at: sentAt });
        }
      }
    };
    const loops = Array.from({ length: CONNECTIONS }, loop);
    await new Promise((r) => setTimeout(r, 3000));
    phase = 'outage';
    await inject();
    const faultAt = Date.now();
    // Mid-outage the index replica and the gateway stay ready (similar songs are served from memory): a Kubernetes
    // Service keeps routing to them. Read with the client time-out: a frozen database must not hold the probe either.
    await new Promise((r) => setTimeout(r, OUTAGE_MS / 2));
    const ready = await fetch(`${stack.peers().index}/readyz`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    const readyBody = (await ready.json()) as { checks: Record<string, boolean> };
    const gatewayReady = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    const gatewayReadyBody = (await gatewayReady.json()) as { checks: Record<string, boolean> };
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - faultAt))));
    await clear();
    phase = 'after';
    const clearedAt = Date.now();
    // Recovery: the time until every kind of request has answered 200 again after the fault is cleared.
    const recovered = new Map<string, number>();
    while (recovered.size < kinds.length && Date.now() - clearedAt < 60_000) {
      for (const o of outcomes.slice(-200)) if (o.phase === 'after' && o.status === 200 && !recovered.has(o.kind)) recovered.set(o.kind, Date.now() - clearedAt);
      await new Promise((r) => setTimeout(r, 250));
    }
    await new Promise((r) => setTimeout(r, 3000));
    stop = true;
    await Promise.all(loops);

    const table = new Map<string, number>();
    for (const o of outcomes) {
      const key = `${o.phase} | ${o.kind} | ${o.status}${o.code ? ` ${o.code}` : ''}`;
      table.set(key, (table.get(key) ?? 0) + 1);
    }
    const during = outcomes.filter((o) => o.phase === 'outage').map((o) => o.ms).sort((a, b) => a - b);
    console.log(
      `${label} figures: ${outcomes.length} requests, fault ${OUTAGE_MS / 1000} s, p99 during the fault ${Math.round(during[Math.floor(during.length * 0.99)] ?? 0)} ms, ` +
        `max ${Math.round(during[during.length - 1] ?? 0)} ms, slowest (sent s after the fault: ms) ${outcomes.filter((o) => o.phase === 'outage' && o.ms > 4000).map((o) => `${o.kind} ${((o.at - faultAt) / 1000).toFixed(1)}: ${Math.round(o.ms)} ${o.status}`).join(', ')}, recovery (cleared -> 200) per kind ${JSON.stringify(Object.fromEntries(recovered))}\n${[...table].map(([k, v]) => `${k}: ${v}`).join('\n')}`,
    );
    return { outcomes, recovered, ready, readyBody, gatewayReady, gatewayReadyBody };
  }

  it('When PostgreSQL is stopped for 15 s under 16 connections, then similar songs by id keep answering 200, everything else is 200 or 503 with Retry-After, nothing hangs, and all recovers', async () => {
    const r = await underTraffic('db-outage', () => pg.stop('fast'), () => pg.restart());
    // Never a failure other than 503 + Retry-After; never a hung or reset request.
    const bad = r.outcomes.filter((o) => o.status !== 200 && !(o.status === 503 && o.retryAfter && Number(o.retryAfter) > 0));
    expect(bad.slice(0, 10)).toEqual([]);
    // Similar songs by id are served from memory throughout (the outage included).
    const memoryKinds = new Set(kinds.filter((k) => k.fromMemory).map((k) => k.kind));
    const fromMemory = r.outcomes.filter((o) => memoryKinds.has(o.kind));
    expect(fromMemory.filter((o) => o.phase === 'outage').length).toBeGreaterThan(30);
    expect(fromMemory.filter((o) => o.status !== 200).slice(0, 10)).toEqual([]);
    expect([r.ready.status, r.readyBody.checks.database, r.readyBody.checks.index]).toEqual([200, false, true]);
    expect([r.gatewayReady.status, r.gatewayReadyBody.checks.database]).toEqual([200, false]);
    // Everything recovers once the database is back.
    expect([...r.recovered.keys()].sort()).toEqual(kinds.map((k) => k.kind).sort());
  });

  it('When PostgreSQL is frozen (SIGSTOP) for 15 s under 16 connections, then every request answers within the 10 s client time-out: 200 (similar songs by id from memory) or 503 with Retry-After, and all recovers after SIGCONT', async () => {
    let frozen = 0;
    const r = await underTraffic(
      'db-frozen',
      async () => {
        frozen = await pg.freeze();
      },
      async () => pg.thaw(),
    );
    expect(frozen).toBeGreaterThan(1);
    // The pools' connect and request-query time-outs (5 s each by default) answer 503 + Retry-After instead of
    // holding the connection: no client time-out (status 0), no 500/502/504.
    const bad = r.outcomes.filter((o) => o.status !== 200 && !(o.status === 503 && o.retryAfter && Number(o.retryAfter) > 0));
    expect(bad.slice(0, 10)).toEqual([]);
    const during = r.outcomes.filter((o) => o.phase === 'outage');
    expect(during.filter((o) => o.status === 503).length).toBeGreaterThan(0);
    // Similar songs by id with the API token need no database: 200 throughout.
    expect(during.filter((o) => o.kind === 'similar (token)' && o.status === 200).length).toBeGreaterThan(5);
    expect(r.outcomes.filter((o) => o.kind === 'similar (token)' && o.status !== 200).slice(0, 10)).toEqual([]);
    expect([r.ready.status, r.readyBody.checks.index]).toEqual([200, true]);
    expect(r.gatewayReady.status).toBe(200);
    expect([...r.recovered.keys()].sort()).toEqual(kinds.map((k) => k.kind).sort());
  });
});
