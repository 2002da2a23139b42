import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { createBus, createLogger, signIdentity } from '@polyphony/platform';
import path from 'node:path';
import { buildIndex, loadIndexConfig } from '@polyphony/index';
import { buildGateway, loadGatewayConfig } from '@polyphony/gateway';
import { createBenchDatabase, indexBenchScript, startChild } from './support';
import type { LoadResult } from './load-child';

/**
 * Similar-songs throughput through the gateway vs straight to the index service, at N songs (default
 * 100000), measured with autocannon (loopback, bounded runs, load generator in its own process):
 *  - FakePeers (catalogue + registry internal APIs) in a child process with N songs on `srv-main` and
 *    1% on `srv-sparse`;
 *  - the index service and the real gateway (@polyphony/gateway, bearer API token, server resolution
 *    through the registry's internal API) in this process, like the standalone mode;
 *  - each scenario cycles over 200 seeds, `n=10`; `connections` concurrent clients for `seconds`.
 * Printed: requests/s and latency percentiles per scenario, and the gateway's added latency
 * (gateway minus direct, p50 and mean, at 1 connection and at `connections`).
 * Lives in the benchmark workspace (bench/) because it drives two units: the index package does not
 * depend on the gateway.
 * Usage: node bench/dist/gateway-similar.js [songs=100000] [seconds=10] [connections=10]
 */
async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 100_000);
  const seconds = Number(process.argv[3] ?? 10);
  const connections = Number(process.argv[4] ?? 10);
  const secret = randomBytes(32).toString('hex');
  const apiToken = randomBytes(16).toString('hex');
  const indexDb = await createBenchDatabase('index_gw_bench');
  const { child, info } = await startChild<{ url: string }>(indexBenchScript('fake-peers-server.js'), [String(songs)]);
  const logger = createLogger({ service: 'gw-bench', level: 'error' });
  const bus = createBus({});
  let indexUrl = '';
  const targets = () => ({ registry: info.url, catalogue: info.url, analysis: info.url, index: indexUrl, playlist: info.url });
  const svc = buildIndex(loadIndexConfig({ DATABASE_URL: indexDb.url, INTERNAL_SECRET: secret, LOG_LEVEL: 'error' }), { logger, bus, peers: targets, migrateOnStart: true, rebuildOnStart: false });
  const gateway = buildGateway(
    loadGatewayConfig({ DATABASE_URL: indexDb.url, INTERNAL_SECRET: secret, API_TOKEN: apiToken, SERVICE_USER: 'admin', SERVICE_PASSWORD: 'bench-password-1', PORT: '0', LOG_LEVEL: 'error' }),
    { logger, targets, migrateOnStart: true },
  );
  try {
    await svc.start();
    indexUrl = `http://127.0.0.1:${await svc.listen(0, '127.0.0.1')}`;
    const tBuild = performance.now();
    await svc.rebuild.request('benchmark');
    await svc.rebuild.idle();
    const buildMs = performance.now() - tBuild;
    if (!svc.rebuild.lastOutcome) throw new Error(`build failed: ${svc.rebuild.lastError}`);
    await gateway.start();
    const gatewayUrl = `http://127.0.0.1:${await gateway.listen(0, '127.0.0.1')}`;

    const mainPaths = Array.from({ length: 200 }, (_, i) => `/api/similar_tracks?item_id=m-${(i * 7919) % songs}&n=10`);
    const sparsePaths = Array.from({ length: 200 }, (_, i) => `/api/similar_tracks?item_id=${100_000_000 + ((i * 100) % songs)}&n=10`);
    const direct = (serverId: string) => signIdentity({ sub: 'bench', username: 'bench', role: 'user', via: 'bearer', serverId }, secret);
    const bearer = { authorization: `Bearer ${apiToken}` };
    const run = async (url: string, paths: string[], headers: Record<string, string>, conns: number, secs: number) => {
      const { info: r } = await startChild<LoadResult>(path.join(__dirname, 'load-child.js'), [JSON.stringify({ url, connections: conns, durationSec: secs, requests: paths.map((path) => ({ path, headers })) })]);
      return r;
    };
    // Sanity: both routes answer 200 with 10 rows before measuring.
    for (const [url, path, headers] of [
      [indexUrl, mainPaths[0]!, direct('srv-main')],
      [gatewayUrl, mainPaths[0]!, bearer],
      [gatewayUrl, `${sparsePaths[0]!}&server=Sparse`, bearer],
    ] as const) {
      const res = await fetch(url + path, { headers });
      const body = (await res.json()) as unknown[];
      if (res.status !== 200 || !Array.isArray(body) || body.length !== 10) throw new Error(`sanity check failed: ${url}${path} -> ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    }
    // Sequential fetch() latencies (keep-alive), a cross-check of the load generator's numbers.
    const sequential = async (url: string, headers: Record<string, string>) => {
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        const res = await fetch(url + mainPaths[i % mainPaths.length]!, { headers });
        await res.arrayBuffer();
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      return { p50Ms: round(times[50]!), p90Ms: round(times[90]!), meanMs: round(times.reduce((a, b) => a + b, 0) / times.length) };
    };
    const sequentialFetch = { direct: await sequential(indexUrl, direct('srv-main')), gateway: await sequential(gatewayUrl, bearer) };
    await run(gatewayUrl, mainPaths, bearer, connections, 3); // warm-up (JIT, masks, pools)
    await run(indexUrl, mainPaths, direct('srv-main'), connections, 2);
    const results = {
      directMain: await run(indexUrl, mainPaths, direct('srv-main'), connections, seconds),
      gatewayMain: await run(gatewayUrl, mainPaths, bearer, connections, seconds),
      gatewaySparse1pct: await run(gatewayUrl, sparsePaths.map((p) => `${p}&server=Sparse`), bearer, connections, seconds),
      directMain1conn: await run(indexUrl, mainPaths, direct('srv-main'), 1, seconds),
      gatewayMain1conn: await run(gatewayUrl, mainPaths, bearer, 1, seconds),
    };
    const after = { direct: await sequential(indexUrl, direct('srv-main')), gateway: await sequential(gatewayUrl, bearer) };
    const probe = await fetch(gatewayUrl + mainPaths[0]!, { headers: bearer });
    await probe.arrayBuffer();
    const added = (g: LoadResult, d: LoadResult) => ({ p50Ms: round(g.latencyMs.p50 - d.latencyMs.p50), meanMs: round(g.latencyMs.mean - d.latencyMs.mean) });
    process.stdout.write(
      `${JSON.stringify(
        {
          songs,
          seconds,
          connections,
          buildMs: Math.round(buildMs),
          sequentialFetch,
          results,
          sequentialFetchAfterLoad: after,
          gatewayAddedLatency: {
            sequentialFetchP50Ms: round((sequentialFetch.gateway.p50Ms + after.gateway.p50Ms) / 2 - (sequentialFetch.direct.p50Ms + after.direct.p50Ms) / 2),
            sequentialFetchMeanMs: round((sequentialFetch.gateway.meanMs + after.gateway.meanMs) / 2 - (sequentialFetch.direct.meanMs + after.direct.meanMs) / 2),
            autocannonAtConnections: added(results.gatewayMain, results.directMain),
            autocannonAt1Connection: added(results.gatewayMain1conn, results.directMain1conn),
          },
          gatewayConnectionHeader: probe.headers.get('connection'),
          note: 'When the gateway answers "connection: close", every proxied request opens a new TCP connection; autocannon latency percentiles through the gateway are then distorted by its reconnects (requests/s stay valid). The sequential fetch figures include the reconnect cost as a client sees it.',
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await gateway.stop().catch(() => undefined);
    await svc.stop();
    await bus.close();
    child.stdin?.end();
    child.kill();
    await indexDb.drop();
  }
}


function round(x: number): number {
  return Math.round(x * 100) / 100;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
