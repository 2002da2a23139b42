import 'reflect-metadata';
import { Client } from 'pg';
import { OTHER_FEATURE_LABELS, parseLabelScores } from '@polyphony/contracts';
import { EVAL_K, evaluateTextSearch, formatEvalReport, type EvalSong } from '../domain/semantic/text-eval';

/**
 * Text-search evaluation (issue 14): precision@10 of `POST /api/clap/search` on an analyzed library,
 * ground truth derived from the songs' MusiCNN tags (rules: domain/semantic/text-eval.ts).
 * Reads the tags of the songs on one server from the install's database (catalogue.score with tags,
 * catalogue.track_server_map for that server's provider ids) and asks the running install through its
 * gateway with the API token, as a client would.
 * Usage: DATABASE_URL=postgres://... POLYPHONY_URL=http://localhost:8000 API_TOKEN=... \
 *   node services/index/dist/bench/text-search-eval.js [server name]
 * Prints one line per query and the mean P@10 (with the best reachable and a random order's expectation).
 */
async function main(): Promise<void> {
  const db = process.env.DATABASE_URL;
  const base = process.env.POLYPHONY_URL ?? 'http://127.0.0.1:8000';
  const token = process.env.API_TOKEN;
  const serverName = process.argv[2];
  if (!db || !token) throw new Error('Set DATABASE_URL and API_TOKEN (and POLYPHONY_URL when not http://127.0.0.1:8000)');
  const pg = new Client({ connectionString: db });
  await pg.connect();
  let songs: EvalSong[];
  let serverId: string;
  try {
    const servers: Array<{ id: string; name: string; is_default: boolean }> = (await pg.query(`SELECT id::text AS id, name, is_default FROM registry.music_servers ORDER BY is_default DESC, lower(name)`)).rows;
    const server = serverName ? servers.find((s) => s.name === serverName || s.id === serverName) : servers[0];
    if (!server) throw new Error(`No server ${serverName ?? '(none configured)'}`);
    serverId = server.id;
    const rows: Array<{ provider_id: string; tag_scores: { msd?: number[]; mtt?: number[] }; other_features: string | null }> = (
      await pg.query(
        `SELECT DISTINCT ON (s.item_id) m.provider_id, s.tag_scores, s.other_features
           FROM catalogue.score s JOIN catalogue.track_server_map m ON m.item_id = s.item_id
          WHERE m.server_id = $1 AND s.tag_scores IS NOT NULL ORDER BY s.item_id, m.provider_id`,
        [serverId],
      )
    ).rows;
    songs = rows.map((r) => {
      const other = new Map(parseLabelScores(r.other_features ?? '') ?? []);
      return { id: r.provider_id, msd: r.tag_scores.msd ?? [], mtt: r.tag_scores.mtt ?? [], other: OTHER_FEATURE_LABELS.map((l) => other.get(l) ?? 0) };
    });
  } finally {
    await pg.end();
  }
  if (songs.length === 0) throw new Error('No song of that server has MusiCNN tags: analyze the library with the model first');
  const report = await evaluateTextSearch(songs, async (query) => {
    const res = await fetch(new URL(`/api/clap/search?server=${encodeURIComponent(serverId)}`, base), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, limit: EVAL_K }),
    });
    if (!res.ok) throw new Error(`clap/search answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { results: Array<{ item_id: string }> }).results.map((r) => r.item_id);
  });
  console.log(formatEvalReport(report));
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});
