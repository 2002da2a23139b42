import 'reflect-metadata';
import { createBus, createLogger } from '@polyphony/platform';
import { buildIndex, loadIndexConfig, oldGenerationStats } from '@polyphony/index';
import { onStdinLine } from '../bench-support';

/**
 * One whole index replica for `heap-guard-replica.ts`, run by it with a small heap (`node --max-old-space-size=N`).
 * argv[2] = JSON `{ dbUrl, secret, peersUrl }`. The replica's own logger writes its log lines (JSON, level warn and
 * above) to stdout, as in production; the lines this driver adds start with `{"driver":`.
 * Starts the service (migrations on start, in-memory bus, no build at start), listens on 127.0.0.1 (any port) and
 * prints `{"driver":"ready","url":...}`. Then one command per stdin line:
 *   `build` -> requests a build, waits until it ends, prints `{"driver":"build", generation, items, lastError, peakHeapMiB, limitMiB}`
 *   (the old-generation heap sampled every 20 ms while the build ran; `oldGenerationStats`).
 * Closing stdin stops the service and exits 0.
 */
async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]!) as { dbUrl: string; secret: string; peersUrl: string };
  const logger = createLogger({ service: 'index', level: 'warn' });
  const bus = createBus({});
  const peers = () => ({ registry: o.peersUrl, catalogue: o.peersUrl, analysis: o.peersUrl, index: o.peersUrl, playlist: o.peersUrl });
  const env = { DATABASE_URL: o.dbUrl, INTERNAL_SECRET: o.secret, LOG_LEVEL: 'warn', INDEX_BUILD_WORKERS: '0' };
  const svc = buildIndex(loadIndexConfig(env), { logger, bus, peers, migrateOnStart: true, rebuildOnStart: false, analysisRunLive: async () => false });
  await svc.start();
  const port = await svc.listen(0, '127.0.0.1');
  const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ driver: o.driver, ...o })}\n`);
  say({ driver: 'ready', url: `http://127.0.0.1:${port}` });
  const mib = (b: number) => Math.round(b / 1048576);
  let queue = Promise.resolve();
  onStdinLine((line) => {
    if (line !== 'build') return;
    queue = queue.then(async () => {
      let peak = 0;
      const sample = setInterval(() => (peak = Math.max(peak, oldGenerationStats().used)), 20);
      await svc.rebuild.request('heap-guard bench');
      await svc.rebuild.idle();
      clearInterval(sample);
      const g = svc.state.current();
      say({ driver: 'build', generation: g.generation, items: g.index.size, lastError: svc.rebuild.lastError ?? null, peakHeapMiB: mib(peak), limitMiB: mib(oldGenerationStats().limit) });
    });
  });
  process.stdin.on('end', () => {
    void queue
      .then(() => svc.stop())
      .then(() => bus.close())
      .finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
