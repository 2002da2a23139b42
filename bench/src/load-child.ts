/**
 * Load generator child for gateway-similar.ts: runs one autocannon measurement with the JSON options in
 * argv[2] (`url`, `connections`, `durationSec`, `requests: [{path, headers}]`, optional `rate` per second) and prints the result
 * summary as one JSON line. Kept in its own process so the load generator does not share the service's
 * event loop.
 */
// autocannon ships no type declarations; only the fields used here are typed.
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { average: number; p50: number; p97_5: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}>;

/** One measurement's summary, as this script prints it (latencies in ms). */
export interface LoadResult {
  requestsPerSec: number;
  total: number;
  latencyMs: { mean: number; p50: number; p97_5: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

interface LoadOptions {
  url: string;
  connections: number;
  durationSec: number;
  requests: Array<{ path: string; headers?: Record<string, string> }>;
  /** Offered requests per second over all connections (autocannon `overallRate`); absent = as fast as answered. */
  rate?: number;
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]!) as LoadOptions;
  const r = await autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.durationSec,
    requests: o.requests.map((q) => ({ method: 'GET', path: q.path, headers: q.headers })),
    ...(o.rate ? { overallRate: o.rate } : {}),
  });
  const result: LoadResult = {
    requestsPerSec: r.requests.average,
    total: r.requests.total,
    latencyMs: { mean: r.latency.average, p50: r.latency.p50, p97_5: r.latency.p97_5, p99: r.latency.p99, max: r.latency.max },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
