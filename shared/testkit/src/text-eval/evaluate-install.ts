import 'reflect-metadata';
import { Client } from 'pg';
import { OTHER_FEATURE_LABELS, parseLabelScores } from '@polyphony/contracts';
import { EVAL_K, evaluateTextSearch, type EvalReport, type EvalSong } from './text-eval';

/**
 * Evaluates the text search of a running install: ground truth from the tags of the songs on `server`
 * (name or id; the default server when absent) read from the install's database, rankings from
 * `POST <baseUrl>/api/clap/search?server=` with the API token. `truth` replaces the stored tags as ground
 * truth (the corpus benchmark judges an MSD-only install with the MSD + MTT tags it holds).
 * @throws Error when the server is unknown or none of its songs has tags
 */
export async function evaluateInstall(options: { databaseUrl: string; baseUrl: string; token: string; server?: string; truth?: EvalSong[] }): Promise<EvalReport> {
  const pg = new Client({ connectionString: options.databaseUrl });
  await pg.connect();
  let songs: EvalSong[];
  let serverId: string;
  try {
    const servers: Array<{ id: string; name: string }> = (await pg.query(`SELECT id::text AS id, name FROM registry.music_servers ORDER BY is_default DESC, lower(name)`)).rows;
    const server = options.server ? servers.find((s) => s.name === options.server || s.id === options.server) : servers[0];
    if (!server) throw new Error(`No server ${options.server ?? '(none configured)'}`);
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
  // A caller holding fuller tags than the install stores (MTT off) judges with those; same ids required.
  if (options.truth) {
    const ids = new Set(songs.map((x) => x.id));
    if (options.truth.length !== songs.length || options.truth.some((x) => !ids.has(x.id))) throw new Error('truth must describe exactly the songs of the server');
    songs = options.truth;
  }
  return evaluateTextSearch(songs, async (query) => {
    const res = await fetch(new URL(`/api/clap/search?server=${encodeURIComponent(serverId)}`, options.baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, limit: EVAL_K }),
    });
    if (!res.ok) throw new Error(`clap/search answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { results: Array<{ item_id: string }> }).results.map((r) => r.item_id);
  });
}
