import { evaluateInstall, formatEvalReport } from '@polyphony/testkit';

/**
 * Text-search evaluation (issue 14): precision@10 of `POST /api/clap/search` on an analyzed library,
 * ground truth derived from the songs' MusiCNN tags (rules: @polyphony/testkit text-eval/text-eval.ts).
 * Reads the tags of the songs on one server from the install's database (catalogue.score with tags,
 * catalogue.track_server_map for that server's provider ids) and asks the running install through its
 * gateway with the API token, as a client would.
 * Usage: DATABASE_URL=postgres://... POLYPHONY_URL=http://localhost:8000 API_TOKEN=... \
 *   node bench/dist/index/text-search-eval.js [server name]
 * Prints one line per query and the mean P@10 (with the best reachable and a random order's expectation).
 */
async function main(): Promise<void> {
  const db = process.env.DATABASE_URL;
  const token = process.env.API_TOKEN;
  if (!db || !token) {
    // `bench.sh all` runs every benchmark: without an install to ask, say so and stop cleanly.
    console.log('text-eval SKIPPED: set DATABASE_URL and API_TOKEN (and POLYPHONY_URL when not http://127.0.0.1:8000) to evaluate a running install');
    return;
  }
  console.log(formatEvalReport(await evaluateInstall({ databaseUrl: db, baseUrl: process.env.POLYPHONY_URL ?? 'http://127.0.0.1:8000', token, server: process.argv[2] })));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error((err as Error).message);
    process.exit(1);
  });
}
