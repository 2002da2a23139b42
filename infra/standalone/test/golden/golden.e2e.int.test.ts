import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import request from 'supertest';
import { ArrayCatalogue, createFakeJellyfin, startSupysonic, wesnothTracks, WESNOTH_MUSIC_DIR, type FakeTrack, type StartedFake, type StartedSupysonic } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitFor, waitForTask } from '../helpers';
import { syntheticSong, transcodeAll } from '../media';
import { compareGolden, formatDifferences } from './compare';
import { Normaliser } from './normalise';

/**
 * Golden answers (issue 29): the whole answer of every deterministic read call on real music, recorded as
 * fixtures and compared on every run (docs/architecture.md, "Golden answers").
 *
 * The stack: supysonic (a real Subsonic server) serves the 41 Wesnoth tracks as the default `navidrome`
 * server "Supysonic"; a fake Jellyfin "Jelly" serves mp3 transcodes of 10 of them plus 2 synthetic songs of
 * its own. One analysis per server with the MusiCNN weights in float (MUSICNN_PRECISION=float,
 * MUSICNN_PATCHES=2), then many cheap read calls through the gateway with the API token. Each call family
 * is one fixture file `fixtures/<family>.json`: `{ "<call label>": { request, status, body } }`, normalised
 * by normalise.ts (ids -> labels, volatile values masked) and compared by compare.ts (tolerance, ties).
 *
 * `npm run golden:record` (GOLDEN_RECORD=1) rewrites the fixtures instead of comparing; review `git diff`.
 * GOLDEN_FRESH_DIR=<folder> also writes this run's normalised answers there (to inspect a difference).
 * Skips, saying so loudly, only when the MusiCNN weights (MODELS_DIR, else <repo>/../shared/models) are absent.
 */
const MODELS = process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../../..', 'shared', 'models');
const present = existsSync(join(MODELS, 'musicnn', 'MSD_musicnn.h5'));
if (!present) {
  console.warn(
    `\n\n*** GOLDEN-ANSWER SUITE SKIPPED: MusiCNN weights not found at ${join(MODELS, 'musicnn', 'MSD_musicnn.h5')}.\n` +
      `*** Set MODELS_DIR or provide ../shared/models beside the checkout; without them nothing is compared.\n\n`,
  );
}
const d = present ? describe : describe.skip;
const RECORD = process.env.GOLDEN_RECORD === '1';
const FIXTURES = join(__dirname, 'fixtures');

/** Wesnoth files (stems) the second server serves as mp3 transcodes. */
const JELLY_COPIES = ['battle-epic', 'defeat', 'elf-land', 'frantic', 'journeys_end', 'northerners', 'sad', 'suspense', 'the_king_is_dead', 'victory'];

/** One recorded call: what was asked (normalised), the HTTP status and the normalised body. */
interface GoldenEntry {
  request: string;
  status: number;
  body: unknown;
}

d('golden answers (supysonic + fake Jellyfin, MusiCNN float, full stack)', () => {
  jest.setTimeout(15 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const norm = new Normaliser();
  let supysonic: StartedSupysonic;
  let jellyfin: StartedFake;
  /** `<server>:<file stem>` -> provider id; `song:<stem>` -> content id; `artist:<server>:<name>` -> provider artist id. */
  const ids = new Map<string, string>();
  const id = (label: string) => {
    const v = ids.get(label);
    if (v === undefined) throw new Error(`golden: no id for ${label}`);
    return v;
  };

  beforeAll(async () => {
    supysonic = await startSupysonic({ musicDir: WESNOTH_MUSIC_DIR, user: 'alice', password: 'alice-pass' });
  }, 5 * 60_000);
  const t = useTestStack({ MODELS_DIR: MODELS, MUSICNN_PRECISION: 'float', MUSICNN_PATCHES: '2' });
  afterAll(async () => {
    await supysonic?.close();
    await jellyfin?.close();
  });

  /** Starts an analysis over every server and waits for it (and the index generation it requests) to end. */
  async function analyse(): Promise<Record<string, any>> {
    const start = await request(t.url).post('/api/analysis/start').set(auth).send({}).expect(202);
    // Generous: the two analyses took 9-12 min at load 15-23 on the shared 2-core machine (2.5 min of CPU).
    const status = await waitForTask(t.url, start.body.task_id as string, { timeoutMs: 30 * 60_000 });
    expect(status.state).toBe('SUCCESS');
    return status;
  }

  /** Registers every id the run created with a stable label (see normalise.ts). */
  async function labelIds(): Promise<void> {
    const servers = (await request(t.url).get('/api/servers').set(auth).expect(200)).body.servers as Array<{ id: string; name: string }>;
    for (const s of servers) norm.register(s.id, `server:${s.name}`);
    const name = new Map(servers.map((s) => [s.id, s.name]));
    const maps: Array<{ server_id: string; provider_id: string; item_id: string; file_path: string }> = await t.sql(
      `SELECT server_id, provider_id, item_id, file_path FROM catalogue.track_server_map ORDER BY server_id, file_path`,
    );
    for (const m of maps) {
      const stem = basename(m.file_path, extname(m.file_path));
      const label = `${name.get(m.server_id)}:${stem}`;
      ids.set(label, m.provider_id);
      norm.register(m.provider_id, label);
      ids.set(`song:${stem}`, m.item_id);
      norm.register(m.item_id, `song:${stem}`);
    }
    const artists: Array<{ server_id: string; provider_artist_id: string; artist_name: string }> = await t.sql(
      `SELECT server_id, provider_artist_id, artist_name FROM catalogue.artist_server_map ORDER BY server_id, artist_name`,
    );
    for (const a of artists) {
      const label = `artist:${name.get(a.server_id)}:${a.artist_name}`;
      ids.set(label, a.provider_artist_id);
      norm.register(a.provider_artist_id, label);
    }
  }

  /** Calls made so far in the current family, by label. */
  let family: Record<string, GoldenEntry> = {};

  /**
   * Makes one call through the gateway (API token) and keeps its normalised answer under `label`.
   * `path` is as sent (with real ids); `body` is sent as JSON for POST. `settleOrder`, when given, puts parts
   * of the answer whose order depends on timing (not on the contract) into a stable order before recording.
   */
  async function call(label: string, method: 'GET' | 'POST', path: string, body?: unknown, settleOrder?: (parsed: any) => void): Promise<request.Response> {
    if (label in family) throw new Error(`golden: call label ${label} used twice`);
    const res = method === 'GET' ? await request(t.url).get(path).set(auth) : await request(t.url).post(path).set(auth).send((body ?? {}) as object);
    const parsed = res.type === 'application/json' ? structuredClone(res.body) : res.text;
    if (settleOrder && res.status === 200) settleOrder(parsed);
    family[label] = {
      request: `${norm.normaliseRequest(method, path)}${body === undefined ? '' : ` ${JSON.stringify(norm.normalise(body))}`}`,
      status: res.status,
      body: norm.normalise(parsed),
    };
    return res;
  }

  /**
   * Ends a family: with GOLDEN_RECORD=1 writes `fixtures/<name>.json`; otherwise compares this run's
   * answers with the fixture and fails listing every difference.
   */
  function settle(name: string): void {
    const file = join(FIXTURES, `${name}.json`);
    const fresh = family;
    family = {};
    if (RECORD) {
      mkdirSync(FIXTURES, { recursive: true });
      writeFileSync(file, `${JSON.stringify(fresh, null, 2)}\n`);
      return;
    }
    if (process.env.GOLDEN_FRESH_DIR) {
      // For inspection only (e.g. the largest numeric difference between two runs): this run's answers.
      mkdirSync(process.env.GOLDEN_FRESH_DIR, { recursive: true });
      writeFileSync(join(process.env.GOLDEN_FRESH_DIR, `${name}.json`), `${JSON.stringify(fresh, null, 2)}\n`);
    }
    if (!existsSync(file)) throw new Error(`golden: no fixture ${file}; record with npm run golden:record and review the diff`);
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as Record<string, GoldenEntry>;
    const diffs = compareGolden(recorded, fresh);
    if (diffs.length > 0) throw new Error(formatDifferences(`golden answers ${name} differ from fixtures/${name}.json (a deliberate change is re-recorded with npm run golden:record, then reviewed)`, diffs));
  }

  it('When both servers are analysed, then every song is analysed once and served by the index', async () => {
    await request(t.url).post('/api/servers').set(auth).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    const first = await analyse();
    expect(first.details.servers[0]).toMatchObject({ seen: 41, analyzed: 41, failed: 0 });

    const wes = wesnothTracks();
    const copies = [...wes].filter((c) => JELLY_COPIES.includes(basename(c.audioFile, '.ogg'))).sort((a, b) => a.audioFile.localeCompare(b.audioFile));
    expect(copies).toHaveLength(JELLY_COPIES.length);
    const mp3s = await transcodeAll(copies.map((c) => c.audioFile), 'mp3');
    const own = await Promise.all(([0, 2] as const).map((v) => syntheticSong(v)));
    const tracks: FakeTrack[] = copies.map((c, i) => ({ ...c, audioFile: mp3s[i]!, path: c.path.replace(/\.ogg$/, '.mp3') }));
    own.forEach((file, i) =>
      tracks.push({ ...copies[0]!, id: `own-${i}`, title: `Own Song ${i}`, artist: 'Local Band', artistId: 'ar-local', album: 'Own', albumId: 'al-own', albumArtist: 'Local Band', albumArtistId: 'ar-local', audioFile: file, path: `/srv/music/music/Local Band/Own/own-${i}.ogg`, durationSeconds: 40, trackNumber: i + 1 }),
    );
    const fake = createFakeJellyfin({ catalogue: new ArrayCatalogue(wes.libraries, tracks), token: 'jf-token' });
    jellyfin = await fake.start();
    await request(t.url).post('/api/servers').set(auth).send({ name: 'Jelly', server_type: 'jellyfin', creds: { url: jellyfin.url, user_id: fake.userId, token: 'jf-token' } }).expect(201);
    const second = await analyse();
    const jelly = (second.details.servers as Array<Record<string, unknown>>).find((s) => s.seen === copies.length + own.length);
    expect(jelly).toMatchObject({ analyzed: own.length, failed: 0 });
    const [{ n }] = await t.sql(`SELECT count(*)::int AS n FROM catalogue.score`);
    expect(n).toBe(41 + own.length);
    await labelIds();
    await waitFor('the index to serve both servers', async () => {
      const res = await request(t.url).get('/api/map?percent=100&server=Jelly').set(auth);
      return res.status === 200 && res.body.items?.length === copies.length + own.length ? true : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
  }, 60 * 60_000);

  /** Supysonic seeds (file stems) and Jelly seeds (its copies and own songs). */
  const SUPY_SEEDS = ['battle-epic', 'defeat', 'elf-land', 'frantic', 'sad', 'the_king_is_dead', 'victory', 'wanderer'];
  const JELLY_SEEDS = ['battle-epic', 'sad', 'own-0', 'own-1'];
  const MOODS = ['happy', 'sad', 'aggressive', 'relaxed', 'danceable'];
  /** A query string (undefined values left out). */
  const q = (params: Record<string, string | number | boolean | undefined>) =>
    new URLSearchParams(Object.entries(params).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as [string, string]]))).toString();
  let anchorId: number;

  it('When anchors are saved (the seeds of later calls), then their answers match', async () => {
    const made = await call('create Golden calm (mood + song, minus a song)', 'POST', '/api/anchors', {
      name: 'Golden calm',
      items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: id('Supysonic:elf-land'), op: 'ADD', type: 'song' }, { id: id('Supysonic:battle'), op: 'SUBTRACT', type: 'song' }],
    });
    expect(made.status).toBe(200);
    anchorId = made.body.anchor.id as number;
    await call('create Golden battle (songs)', 'POST', '/api/anchors', { name: 'Golden battle', items: [{ id: id('Supysonic:battle-epic'), op: 'ADD', type: 'song' }, { id: id('Supysonic:the_dangerous_symphony'), op: 'ADD', type: 'song' }] });
    await call('list', 'GET', '/api/anchors');
    await call('get Golden calm', 'GET', `/api/anchors/${anchorId}`);
    await call('radios (none)', 'GET', '/api/radios');
    settle('anchors');
  });

  it('When similar tracks are asked (song, title+artist, mood and anchor seeds; n 5 and 12; with and without duplicate elimination; both servers), then the answers match', async () => {
    for (const [server, seeds] of [['Supysonic', SUPY_SEEDS], ['Jelly', JELLY_SEEDS]] as const) {
      const srv = server === 'Supysonic' ? {} : { server };
      for (const seed of seeds) {
        for (const n of [5, 12]) {
          for (const elim of [true, false]) {
            await call(`${server}:${seed} n=${n} eliminate_duplicates=${elim}`, 'GET', `/api/similar_tracks?${q({ item_id: id(`${server}:${seed}`), n, eliminate_duplicates: elim, ...srv })}`);
          }
        }
      }
      await call(`${server}:${seeds[0]} n=12 max_songs_per_artist=0`, 'GET', `/api/similar_tracks?${q({ item_id: id(`${server}:${seeds[0]}`), n: 12, max_songs_per_artist: 0, ...srv })}`);
      await call(`${server}:${seeds[1]} n=12 max_songs_per_artist=1`, 'GET', `/api/similar_tracks?${q({ item_id: id(`${server}:${seeds[1]}`), n: 12, max_songs_per_artist: 1, ...srv })}`);
      for (const mood of MOODS) for (const n of [5, 12]) await call(`${server} mood=${mood} n=${n}`, 'GET', `/api/similar_tracks?${q({ mood, n, ...srv })}`);
      await call(`${server} mood=sad centroid_index=0 n=5`, 'GET', `/api/similar_tracks?${q({ mood: 'sad', centroid_index: 0, n: 5, ...srv })}`);
      for (const n of [5, 12]) {
        for (const elim of [true, false]) await call(`${server} anchor=Golden calm n=${n} eliminate_duplicates=${elim}`, 'GET', `/api/similar_tracks?${q({ anchor_id: anchorId, n, eliminate_duplicates: elim, ...srv })}`);
      }
      await call(`${server} anchor by name Golden battle n=5`, 'GET', `/api/similar_tracks?${q({ anchor_id: 'Golden battle', n: 5, ...srv })}`);
    }
    // The plugins' own shapes: Jellyfin InstantMix (n=199), Navidrome (sorted keys, radius_similarity).
    await call('Supysonic:victory n=199 (Jellyfin InstantMix)', 'GET', `/api/similar_tracks?${q({ n: 199, item_id: id('Supysonic:victory') })}`);
    await call('Supysonic:wanderer Navidrome shape n=10', 'GET', `/api/similar_tracks?${q({ eliminate_duplicates: true, item_id: id('Supysonic:wanderer'), n: 10, radius_similarity: true })}`);
    const [row] = await t.sql<{ title: string; artist: string }>(`SELECT title, artist FROM catalogue.score WHERE item_id = $1`, [id('song:battle-epic')]);
    await call('title+artist of battle-epic n=5', 'GET', `/api/similar_tracks?${q({ title: row!.title, artist: row!.artist, n: 5 })}`);
    await call('max_distance Supysonic:sad', 'GET', `/api/max_distance?${q({ item_id: id('Supysonic:sad') })}`);
    await call('max_distance Jelly:own-0', 'GET', `/api/max_distance?${q({ item_id: id('Jelly:own-0'), server: 'Jelly' })}`);
    settle('similar-tracks');
  });

  it('When song paths are asked (songs, moods and anchors at the ends; both servers), then the answers match', async () => {
    const pairs: Array<[string, string]> = [['battle-epic', 'sad'], ['elf-land', 'victory'], ['defeat', 'wanderer']];
    for (const [a, b] of pairs) {
      await call(`Supysonic:${a} -> ${b}`, 'GET', `/api/find_path?${q({ start_song_id: id(`Supysonic:${a}`), end_song_id: id(`Supysonic:${b}`) })}`);
      await call(`Supysonic:${a} -> ${b} max_steps=6`, 'GET', `/api/find_path?${q({ start_song_id: id(`Supysonic:${a}`), end_song_id: id(`Supysonic:${b}`), max_steps: 6 })}`);
    }
    await call('Supysonic:sad -> victory2 Navidrome shape (count, mood_pct, path_fix_size)', 'GET', `/api/find_path?${q({ count: 25, end_song_id: id('Supysonic:victory2'), max_steps: 25, mood_pct: 100, path_fix_size: false, start_song_id: id('Supysonic:sad') })}`);
    await call('mood happy -> Supysonic:sad max_steps=8', 'GET', `/api/find_path?${q({ start_mood: 'happy', end_song_id: id('Supysonic:sad'), max_steps: 8 })}`);
    await call('Supysonic:victory -> mood relaxed max_steps=8', 'GET', `/api/find_path?${q({ start_song_id: id('Supysonic:victory'), end_mood: 'relaxed', max_steps: 8 })}`);
    await call('anchor Golden calm -> Supysonic:victory max_steps=8', 'GET', `/api/find_path?${q({ start_anchor: anchorId, end_song_id: id('Supysonic:victory'), max_steps: 8 })}`);
    await call('Jelly:battle-epic -> own-1', 'GET', `/api/find_path?${q({ start_song_id: id('Jelly:battle-epic'), end_song_id: id('Jelly:own-1'), server: 'Jelly' })}`);
    await call('Jelly:sad -> the_king_is_dead max_steps=5', 'GET', `/api/find_path?${q({ start_song_id: id('Jelly:sad'), end_song_id: id('Jelly:the_king_is_dead'), max_steps: 5, server: 'Jelly' })}`);
    settle('find-path');
  });

  it('When alchemy is asked at temperature 0 (songs, artists, moods, anchors; both servers) and with a fixed seed, then the answers match', async () => {
    const song = (server: string, stem: string, op: 'ADD' | 'SUBTRACT') => ({ id: id(`${server}:${stem}`), op, type: 'song' });
    const [artist] = await t.sql<{ artist: string }>(`SELECT artist FROM catalogue.score WHERE item_id = $1`, [id('song:battle-epic')]);
    const cases: Array<[string, Record<string, unknown>, string?]> = [
      ['Supysonic battle-epic + elf-land n=5', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'elf-land', 'ADD')], n: 5, temperature: 0 }],
      ['Supysonic battle-epic - sad n=12', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'sad', 'SUBTRACT')], n: 12, temperature: 0 }],
      ['Supysonic victory - defeat subtract_distance=0.5 n=12', { items: [song('Supysonic', 'victory', 'ADD'), song('Supysonic', 'defeat', 'SUBTRACT')], n: 12, temperature: 0, subtract_distance: 0.5 }],
      [`Supysonic artist ${artist!.artist} n=5`, { items: [{ id: artist!.artist, op: 'ADD', type: 'artist' }], n: 5, temperature: 0 }],
      ['Supysonic mood relaxed - mood aggressive n=5', { items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: 'aggressive', op: 'SUBTRACT', type: 'mood' }], n: 5, temperature: 0 }],
      ['Supysonic anchor Golden calm n=5', { items: [{ id: String(anchorId), op: 'ADD', type: 'anchor' }], n: 5, temperature: 0 }],
      ['Supysonic battle-epic + wanderer temperature=1 seed=42 n=5', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'wanderer', 'ADD')], n: 5, temperature: 1, seed: 42 }],
      ['Jelly own-0 + sad n=5', { items: [song('Jelly', 'own-0', 'ADD'), song('Jelly', 'sad', 'ADD')], n: 5, temperature: 0 }, 'Jelly'],
      ['Jelly battle-epic - own-1 n=12', { items: [song('Jelly', 'battle-epic', 'ADD'), song('Jelly', 'own-1', 'SUBTRACT')], n: 12, temperature: 0 }, 'Jelly'],
    ];
    for (const [label, body, server] of cases) await call(label, 'POST', server ? `/api/alchemy?${q({ server })}` : '/api/alchemy', body);
    settle('alchemy');
  });

  it('When artists are asked (similarity with and without component matches, by name and by id; tracks; search; projections), then the answers match', async () => {
    const artists = [...ids.keys()].filter((k) => k.startsWith('artist:')).sort();
    for (const label of artists) {
      const [, server, name] = label.split(':', 3) as [string, string, string];
      const srv = server === 'Supysonic' ? {} : { server };
      await call(`similar ${server}:${name} n=10`, 'GET', `/api/similar_artists?${q({ artist: name, n: 10, ...srv })}`);
      await call(`similar ${server}:${name} by id, component matches`, 'GET', `/api/similar_artists?${q({ artist_id: id(label), n: 10, include_component_matches: true, ...srv })}`);
      await call(`similar ${server}:${name} id in artist= (Navidrome plugin)`, 'GET', `/api/similar_artists?${q({ artist: id(label), n: 10, include_component_matches: false, ...srv })}`);
      await call(`tracks ${server}:${name}`, 'GET', `/api/artist_tracks?${q({ artist: name, ...srv })}`);
      await call(`tracks ${server}:${name} by id`, 'GET', `/api/artist_tracks?${q({ artist_id: id(label), ...srv })}`);
    }
    await call('search_artists a', 'GET', `/api/search_artists?${q({ query: 'a' })}`);
    await call('search_artists a page 1-2', 'GET', `/api/search_artists?${q({ query: 'a', start: 1, end: 2 })}`);
    await call('search_artists Jelly l', 'GET', `/api/search_artists?${q({ query: 'l', server: 'Jelly' })}`);
    await call('projections', 'GET', '/api/artist_projections');
    await call('projections Jelly', 'GET', `/api/artist_projections?${q({ server: 'Jelly' })}`);
    settle('artists');
  });

  it('When tracks are searched (title, artist, free text, external) and described in words (text search, lyrics, SemGrove), then the answers match', async () => {
    for (const [label, params] of [
      ['title=battle', { title: 'battle' }],
      ['artist=wesnoth', { artist: 'wesnoth' }],
      ['search_query=the', { search_query: 'the' }],
      ['search_query=elvish theme', { search_query: 'elvish theme' }],
      ['title=own Jelly', { title: 'own', server: 'Jelly' }],
      ['search_query=north Jelly', { search_query: 'north', server: 'Jelly' }],
    ] as Array<[string, Record<string, string>]>) {
      await call(`search_tracks ${label}`, 'GET', `/api/search_tracks?${q(params)}`);
    }
    await call('external/search title=sad', 'GET', `/external/search?${q({ title: 'sad' })}`);
    for (const query of ['calm orchestral music', 'epic battle drums', 'sad piano', 'fast energetic']) {
      await call(`clap ${query} limit=10`, 'POST', '/api/clap/search', { query, limit: 10 });
    }
    await call('clap calm orchestral music Jelly', 'POST', `/api/clap/search?${q({ server: 'Jelly' })}`, { query: 'calm orchestral music', limit: 5 });
    await call('lyrics love (no lyrics provider)', 'POST', '/api/lyrics/search/text', { query: 'love', limit: 5 });
    await call('sem_grove Supysonic:sad', 'POST', '/api/sem_grove/search', { item_id: id('Supysonic:sad'), limit: 5 });
    await call('mood_centroids', 'GET', '/api/mood_centroids');
    await call('clap top_queries (the queries above)', 'GET', '/api/clap/top_queries');
    settle('search');
  });

  it('When the map is asked (25-100 %, both servers), then the membership and coordinates match', async () => {
    for (const percent of [25, 50, 75, 100]) await call(`Supysonic percent=${percent}`, 'GET', `/api/map?${q({ percent })}`);
    await call('Jelly percent=100', 'GET', `/api/map?${q({ percent: 100, server: 'Jelly' })}`);
    await call('Supysonic n=7', 'GET', `/api/map?${q({ n: 7 })}`);
    await call('cache status', 'GET', '/api/map_cache_status');
    settle('map');
  });

  it('When the hyperbolic explorer is asked (both servers), then its answers are each server\'s songs, roots inside and niche outside the seed, and match', async () => {
    const onServer = (server: string) => new Set([...ids].filter(([k]) => k.startsWith(`${server}:`)).map(([, v]) => v));
    const supy = onServer('Supysonic');
    const jelly = onServer('Jelly');
    const seed = id('Supysonic:sad');
    for (const mode of ['similar', 'roots', 'niche'] as const) {
      const res = await call(`similar ${mode} Supysonic:sad`, 'POST', '/api/hyperbolic/similar', { item_id: seed, mode, limit: 10 });
      expect(res.status).toBe(200);
      for (const r of res.body.results as Array<{ item_id: string; hyperbolic_radius: number }>) {
        expect(supy.has(r.item_id)).toBe(true);
        if (mode === 'roots') expect(r.hyperbolic_radius).toBeLessThan(res.body.seed_radius);
        if (mode === 'niche') expect(r.hyperbolic_radius).toBeGreaterThan(res.body.seed_radius);
      }
    }
    const onJelly = await call('similar Jelly:sad', 'POST', '/api/hyperbolic/similar', { item_id: id('Jelly:sad'), limit: 20, server: 'Jelly' });
    expect(onJelly.body.count).toBe(jelly.size - 1);
    expect((onJelly.body.results as Array<{ item_id: string }>).every((r) => jelly.has(r.item_id))).toBe(true);
    const j = await call('journey battle-epic -> victory2 length=6', 'POST', '/api/hyperbolic/journey', { start_item_id: id('Supysonic:battle-epic'), end_item_id: id('Supysonic:victory2'), length: 6 });
    expect(j.body.results.map((r: { item_id: string }) => r.item_id)).toEqual(expect.arrayContaining([id('Supysonic:battle-epic'), id('Supysonic:victory2')]));
    expect(j.body.count).toBe(6);
    const dive = await call('journey battle-epic -> victory2 dive=0.6', 'POST', '/api/hyperbolic/journey', { start_item_id: id('Supysonic:battle-epic'), end_item_id: id('Supysonic:victory2'), length: 6, ancestry_dive: 0.6 });
    expect(dive.body.apex.radius).toBeLessThanOrEqual(j.body.apex.radius + 1e-9);
    const jj = await call('journey Jelly own-0 -> own-1', 'POST', '/api/hyperbolic/journey', { start_item_id: id('Jelly:own-0'), end_item_id: id('Jelly:own-1'), length: 4, server: 'Jelly' });
    expect((jj.body.results as Array<{ item_id: string }>).every((r) => jelly.has(r.item_id))).toBe(true);
    expect((await call('journey same song', 'POST', '/api/hyperbolic/journey', { start_item_id: seed, end_item_id: seed })).status).toBe(400);
    const root = await call('tree root', 'GET', '/api/hyperbolic/tree');
    expect(root.body.node.children_count).toBe(supy.size);
    const jroot = await call('tree root Jelly', 'GET', `/api/hyperbolic/tree?${q({ server: 'Jelly' })}`);
    expect(jroot.body.node.children_count).toBe(jelly.size);
    let node = root.body.node;
    for (let depth = 0; depth < 3; depth++) node = (await call(`tree depth ${depth + 1} (first folder)`, 'GET', `/api/hyperbolic/tree?${q({ node_id: node.items[0].id })}`)).body.node;
    expect((node.items as Array<{ id: string; type: string }>).every((it) => it.type === 'track' && supy.has(it.id))).toBe(true);
    expect((await call('tree unknown node', 'GET', `/api/hyperbolic/tree?${q({ node_id: 'mood:nothing' })}`)).status).toBe(400);
    await call('points Jelly', 'GET', `/api/hyperbolic/points?${q({ server: 'Jelly' })}`);
    await call('cache_status', 'GET', '/api/hyperbolic/cache_status');
    settle('hyperbolic');
  });

  it('When sync pages and ids= payloads are asked (both servers), then the answers match', async () => {
    await call('Supysonic limit=500', 'GET', '/api/sync');
    await call('Supysonic page=1 limit=15', 'GET', `/api/sync?${q({ page: 1, limit: 15 })}`);
    await call('Supysonic page=3 limit=15', 'GET', `/api/sync?${q({ page: 3, limit: 15 })}`);
    const first = await call('Supysonic limit=20 (cursor)', 'GET', `/api/sync?${q({ limit: 20 })}`);
    if (typeof first.body.next_page === 'string') await call('Supysonic limit=20 next_page', 'GET', `/api/sync?${q({ limit: 20, next_page: first.body.next_page })}`);
    await call('Supysonic fields=index limit=5', 'GET', `/api/sync?${q({ fields: 'index', limit: 5 })}`);
    await call('Supysonic include_embeddings limit=2', 'GET', `/api/sync?${q({ include_embeddings: true, limit: 2 })}`);
    const some = ['battle-epic', 'sad', 'victory'].map((s) => id(`Supysonic:${s}`));
    await call('Supysonic ids=battle-epic,sad,victory,unknown', 'GET', `/api/sync?${q({ ids: [...some, 'not-a-song'].join(',') })}`);
    await call('Jelly limit=500', 'GET', `/api/sync?${q({ server: 'Jelly' })}`);
    await call('Jelly ids=own-0,sad', 'GET', `/api/sync?${q({ ids: [id('Jelly:own-0'), id('Jelly:sad')].join(','), server: 'Jelly' })}`);
    settle('sync');
  });

  it('When score rows, embeddings and tracks are asked by provider id (both servers), then the answers match', async () => {
    for (const stem of ['battle-epic', 'elf-land', 'sad', 'the_king_is_dead', 'victory2']) {
      await call(`get_score Supysonic:${stem}`, 'GET', `/external/get_score?${q({ id: id(`Supysonic:${stem}`) })}`);
      await call(`track Supysonic:${stem}`, 'GET', `/api/track?${q({ item_id: id(`Supysonic:${stem}`) })}`);
    }
    await call('get_embedding Supysonic:sad', 'GET', `/external/get_embedding?${q({ id: id('Supysonic:sad') })}`);
    for (const stem of ['sad', 'own-0', 'own-1']) await call(`get_score Jelly:${stem}`, 'GET', `/external/get_score?${q({ id: id(`Jelly:${stem}`), server: 'Jelly' })}`);
    await call('get_score unknown id', 'GET', `/external/get_score?${q({ id: 'not-a-song' })}`);
    settle('score');
  });

  it('When chat asks for playlists without an AI provider, then the rule-based answers match', async () => {
    for (const text of ['calm orchestral music like Battle Epic', 'something by Aleksi Aubry-Carlson', 'energetic music', 'slow songs', 'sad songs', 'music from the 2000s', 'Frantic']) {
      await call(`Supysonic "${text}"`, 'POST', '/chat/api/chatPlaylist', { userInput: text });
    }
    await call('Supysonic "relaxed" n=5', 'POST', '/chat/api/chatPlaylist', { userInput: 'relaxed', n: 5 });
    await call('Jelly "calm music"', 'POST', '/chat/api/chatPlaylist', { userInput: 'calm music', server: 'Jelly' });
    settle('chat');
  });

  it('When the sonic fingerprint, the dashboard and the readiness probes are asked, then the answers match', async () => {
    await call('fingerprint n=10', 'GET', `/api/sonic_fingerprint/generate?${q({ n: 10 })}`);
    await call('clap stats', 'GET', '/api/clap/stats');
    await call('lyrics stats', 'GET', '/api/lyrics/stats');
    await call('sem_grove stats', 'GET', '/api/sem_grove/stats');
    await call('models', 'GET', '/api/models');
    await call('models Jelly', 'GET', `/api/models?${q({ server: 'Jelly' })}`);
    await call('analysis exclusions all', 'GET', `/api/analysis/exclusions?${q({ all: 'true' })}`);
    await call('playlists (none written)', 'GET', '/api/playlists');
    await call('search_playlists', 'GET', `/api/search_playlists?${q({ query: 'a' })}`);
    // recent_tasks is newest first; an analysis run and the alignment the same catalogue walk starts are
    // created within milliseconds of each other, so their relative order differs between runs (CI saw both).
    await call('dashboard summary', 'GET', '/api/dashboard/summary', undefined, (b: { recent_tasks: Array<{ task_type: string; message: string }> }) => {
      const key = (x: { task_type: string; message: string }): string => `${x.task_type}\u0000${x.message}`;
      b.recent_tasks.sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0));
    });
    settle('dashboard');
  });

  it('When the configuration, model and task probes the plugins read are asked (idle stack), then the answers match', async () => {
    await call('config', 'GET', '/api/config');
    await call('config Jelly', 'GET', `/api/config?${q({ server: 'Jelly' })}`);
    await call('config defaults', 'GET', '/api/config/defaults');
    await call('config defaults Jelly', 'GET', `/api/config/defaults?${q({ server: 'Jelly' })}`);
    await call('chat config defaults', 'GET', '/chat/api/config_defaults');
    await call('analysis model', 'GET', '/api/analysis/model');
    await call('active tasks (idle)', 'GET', '/api/active_tasks');
    await call('clap warmup', 'POST', '/api/clap/warmup', {});
    settle('probes');
  });
});

