import type request from 'supertest';

/**
 * The call families of the golden-answer suite (docs/architecture.md, "Golden answers"), shared by the golden
 * suite (a fresh install) and the upgrade suite (an install restored from a previous release's data,
 * ../upgrade): each family makes its calls through `call` and is then compared with `fixtures/<name>.json`.
 */

/** What a family needs from the harness that runs it. */
export interface GoldenContext {
  /** One call through the gateway (API token), kept under `label` (see golden.e2e.int.test.ts). */
  call(label: string, method: 'GET' | 'POST', path: string, body?: unknown, settleOrder?: (parsed: any) => void): Promise<request.Response>;
  /** The provider id, content id or artist id behind a label (`<server>:<stem>`, `song:<stem>`, `artist:<server>:<name>`). */
  id(label: string): string;
  /** Every label known (the artists family walks the `artist:` ones). */
  ids: ReadonlyMap<string, string>;
  /** Runs SQL on the stack's database. */
  sql<T = any>(text: string, params?: unknown[]): Promise<T[]>;
  /** The id of the "Golden calm" anchor (set by the anchors family, or read from a restored database). */
  anchorId: number;
}

/** One family: its fixture name, what it asks (the test title) and its calls. */
export interface GoldenFamily {
  name: string;
  title: string;
  run(g: GoldenContext): Promise<void>;
}

/** Supysonic seeds (file stems) and Jelly seeds (its copies and own songs). */
export const SUPY_SEEDS = ['battle-epic', 'defeat', 'elf-land', 'frantic', 'sad', 'the_king_is_dead', 'victory', 'wanderer'];
export const JELLY_SEEDS = ['battle-epic', 'sad', 'own-0', 'own-1'];
export const MOODS = ['happy', 'sad', 'aggressive', 'relaxed', 'danceable'];
/** A query string (undefined values left out). */
export const q = (params: Record<string, string | number | boolean | undefined>) =>
  new URLSearchParams(Object.entries(params).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as [string, string]]))).toString();

/** The families in the order the golden suite runs them (anchors first: later families use its anchor). */
export const GOLDEN_FAMILIES: readonly GoldenFamily[] = [
  {
    name: 'anchors',
    title: 'When anchors are saved (the seeds of later calls), then their answers match',
    async run(g) {
      const { call, id } = g;
      const made = await call('create Golden calm (mood + song, minus a song)', 'POST', '/api/anchors', {
        name: 'Golden calm',
        items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: id('Supysonic:elf-land'), op: 'ADD', type: 'song' }, { id: id('Supysonic:battle'), op: 'SUBTRACT', type: 'song' }],
      });
      expect(made.status).toBe(200);
      g.anchorId = made.body.anchor.id as number;
      await call('create Golden battle (songs)', 'POST', '/api/anchors', { name: 'Golden battle', items: [{ id: id('Supysonic:battle-epic'), op: 'ADD', type: 'song' }, { id: id('Supysonic:the_dangerous_symphony'), op: 'ADD', type: 'song' }] });
      await call('list', 'GET', '/api/anchors');
      await call('get Golden calm', 'GET', `/api/anchors/${g.anchorId}`);
      await call('radios (none)', 'GET', '/api/radios');
    },
  },
  {
    name: 'similar-tracks',
    title: 'When similar tracks are asked (song, title+artist, mood and anchor seeds; n 5 and 12; with and without duplicate elimination; both servers), then the answers match',
    async run(g) {
      const { call, id, sql } = g;
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
          for (const elim of [true, false]) await call(`${server} anchor=Golden calm n=${n} eliminate_duplicates=${elim}`, 'GET', `/api/similar_tracks?${q({ anchor_id: g.anchorId, n, eliminate_duplicates: elim, ...srv })}`);
        }
        await call(`${server} anchor by name Golden battle n=5`, 'GET', `/api/similar_tracks?${q({ anchor_id: 'Golden battle', n: 5, ...srv })}`);
      }
      // The plugins' own shapes: Jellyfin InstantMix (n=199), Navidrome (sorted keys, radius_similarity).
      await call('Supysonic:victory n=199 (Jellyfin InstantMix)', 'GET', `/api/similar_tracks?${q({ n: 199, item_id: id('Supysonic:victory') })}`);
      await call('Supysonic:wanderer Navidrome shape n=10', 'GET', `/api/similar_tracks?${q({ eliminate_duplicates: true, item_id: id('Supysonic:wanderer'), n: 10, radius_similarity: true })}`);
      const [row] = await sql<{ title: string; artist: string }>(`SELECT title, artist FROM catalogue.score WHERE item_id = $1`, [id('song:battle-epic')]);
      await call('title+artist of battle-epic n=5', 'GET', `/api/similar_tracks?${q({ title: row!.title, artist: row!.artist, n: 5 })}`);
      await call('max_distance Supysonic:sad', 'GET', `/api/max_distance?${q({ item_id: id('Supysonic:sad') })}`);
      await call('max_distance Jelly:own-0', 'GET', `/api/max_distance?${q({ item_id: id('Jelly:own-0'), server: 'Jelly' })}`);
    },
  },
  {
    name: 'find-path',
    title: 'When song paths are asked (songs, moods and anchors at the ends; both servers), then the answers match',
    async run(g) {
      const { call, id } = g;
      const pairs: Array<[string, string]> = [['battle-epic', 'sad'], ['elf-land', 'victory'], ['defeat', 'wanderer']];
      for (const [a, b] of pairs) {
        await call(`Supysonic:${a} -> ${b}`, 'GET', `/api/find_path?${q({ start_song_id: id(`Supysonic:${a}`), end_song_id: id(`Supysonic:${b}`) })}`);
        await call(`Supysonic:${a} -> ${b} max_steps=6`, 'GET', `/api/find_path?${q({ start_song_id: id(`Supysonic:${a}`), end_song_id: id(`Supysonic:${b}`), max_steps: 6 })}`);
      }
      await call('Supysonic:sad -> victory2 Navidrome shape (count, mood_pct, path_fix_size)', 'GET', `/api/find_path?${q({ count: 25, end_song_id: id('Supysonic:victory2'), max_steps: 25, mood_pct: 100, path_fix_size: false, start_song_id: id('Supysonic:sad') })}`);
      await call('mood happy -> Supysonic:sad max_steps=8', 'GET', `/api/find_path?${q({ start_mood: 'happy', end_song_id: id('Supysonic:sad'), max_steps: 8 })}`);
      await call('Supysonic:victory -> mood relaxed max_steps=8', 'GET', `/api/find_path?${q({ start_song_id: id('Supysonic:victory'), end_mood: 'relaxed', max_steps: 8 })}`);
      await call('anchor Golden calm -> Supysonic:victory max_steps=8', 'GET', `/api/find_path?${q({ start_anchor: g.anchorId, end_song_id: id('Supysonic:victory'), max_steps: 8 })}`);
      await call('Jelly:battle-epic -> own-1', 'GET', `/api/find_path?${q({ start_song_id: id('Jelly:battle-epic'), end_song_id: id('Jelly:own-1'), server: 'Jelly' })}`);
      await call('Jelly:sad -> the_king_is_dead max_steps=5', 'GET', `/api/find_path?${q({ start_song_id: id('Jelly:sad'), end_song_id: id('Jelly:the_king_is_dead'), max_steps: 5, server: 'Jelly' })}`);
    },
  },
  {
    name: 'alchemy',
    title: 'When alchemy is asked at temperature 0 (songs, artists, moods, anchors; both servers) and with a fixed seed, then the answers match',
    async run(g) {
      const { call, id, sql } = g;
      const song = (server: string, stem: string, op: 'ADD' | 'SUBTRACT') => ({ id: id(`${server}:${stem}`), op, type: 'song' });
      const [artist] = await sql<{ artist: string }>(`SELECT artist FROM catalogue.score WHERE item_id = $1`, [id('song:battle-epic')]);
      const cases: Array<[string, Record<string, unknown>, string?]> = [
        ['Supysonic battle-epic + elf-land n=5', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'elf-land', 'ADD')], n: 5, temperature: 0 }],
        ['Supysonic battle-epic - sad n=12', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'sad', 'SUBTRACT')], n: 12, temperature: 0 }],
        ['Supysonic victory - defeat subtract_distance=0.5 n=12', { items: [song('Supysonic', 'victory', 'ADD'), song('Supysonic', 'defeat', 'SUBTRACT')], n: 12, temperature: 0, subtract_distance: 0.5 }],
        [`Supysonic artist ${artist!.artist} n=5`, { items: [{ id: artist!.artist, op: 'ADD', type: 'artist' }], n: 5, temperature: 0 }],
        ['Supysonic mood relaxed - mood aggressive n=5', { items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: 'aggressive', op: 'SUBTRACT', type: 'mood' }], n: 5, temperature: 0 }],
        ['Supysonic anchor Golden calm n=5', { items: [{ id: String(g.anchorId), op: 'ADD', type: 'anchor' }], n: 5, temperature: 0 }],
        ['Supysonic battle-epic + wanderer temperature=1 seed=42 n=5', { items: [song('Supysonic', 'battle-epic', 'ADD'), song('Supysonic', 'wanderer', 'ADD')], n: 5, temperature: 1, seed: 42 }],
        ['Jelly own-0 + sad n=5', { items: [song('Jelly', 'own-0', 'ADD'), song('Jelly', 'sad', 'ADD')], n: 5, temperature: 0 }, 'Jelly'],
        ['Jelly battle-epic - own-1 n=12', { items: [song('Jelly', 'battle-epic', 'ADD'), song('Jelly', 'own-1', 'SUBTRACT')], n: 12, temperature: 0 }, 'Jelly'],
      ];
      for (const [label, body, server] of cases) await call(label, 'POST', server ? `/api/alchemy?${q({ server })}` : '/api/alchemy', body);
    },
  },
  {
    name: 'artists',
    title: 'When artists are asked (similarity with and without component matches, by name and by id; tracks; search; projections), then the answers match',
    async run(g) {
      const { call, id, ids } = g;
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
    },
  },
  {
    name: 'search',
    title: 'When tracks are searched (title, artist, free text, external) and described in words (text search, lyrics, SemGrove), then the answers match',
    async run(g) {
      const { call, id } = g;
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
    },
  },
  {
    name: 'map',
    title: 'When the map is asked (25-100 %, both servers), then the membership and coordinates match',
    async run(g) {
      const { call } = g;
      for (const percent of [25, 50, 75, 100]) await call(`Supysonic percent=${percent}`, 'GET', `/api/map?${q({ percent })}`);
      await call('Jelly percent=100', 'GET', `/api/map?${q({ percent: 100, server: 'Jelly' })}`);
      await call('Supysonic n=7', 'GET', `/api/map?${q({ n: 7 })}`);
      await call('cache status', 'GET', '/api/map_cache_status');
    },
  },
  {
    name: 'hyperbolic',
    title: "When the hyperbolic explorer is asked (both servers), then its answers are each server's songs, roots inside and niche outside the seed, and match",
    async run(g) {
      const { call, id } = g;
      const onServer = (server: string) => new Set([...g.ids].filter(([k]) => k.startsWith(`${server}:`)).map(([, v]) => v));
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
    },
  },
  {
    name: 'sync',
    title: 'When sync pages and ids= payloads are asked (both servers), then the answers match',
    async run(g) {
      const { call, id } = g;
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
    },
  },
  {
    name: 'score',
    title: 'When score rows, embeddings and tracks are asked by provider id (both servers), then the answers match',
    async run(g) {
      const { call, id } = g;
      for (const stem of ['battle-epic', 'elf-land', 'sad', 'the_king_is_dead', 'victory2']) {
        await call(`get_score Supysonic:${stem}`, 'GET', `/external/get_score?${q({ id: id(`Supysonic:${stem}`) })}`);
        await call(`track Supysonic:${stem}`, 'GET', `/api/track?${q({ item_id: id(`Supysonic:${stem}`) })}`);
      }
      await call('get_embedding Supysonic:sad', 'GET', `/external/get_embedding?${q({ id: id('Supysonic:sad') })}`);
      for (const stem of ['sad', 'own-0', 'own-1']) await call(`get_score Jelly:${stem}`, 'GET', `/external/get_score?${q({ id: id(`Jelly:${stem}`), server: 'Jelly' })}`);
      await call('get_score unknown id', 'GET', `/external/get_score?${q({ id: 'not-a-song' })}`);
    },
  },
  {
    name: 'chat',
    title: 'When chat asks for playlists without an AI provider, then the rule-based answers match',
    async run(g) {
      const { call } = g;
      for (const text of ['calm orchestral music like Battle Epic', 'something by Aleksi Aubry-Carlson', 'energetic music', 'slow songs', 'sad songs', 'music from the 2000s', 'Frantic']) {
        await call(`Supysonic "${text}"`, 'POST', '/chat/api/chatPlaylist', { userInput: text });
      }
      await call('Supysonic "relaxed" n=5', 'POST', '/chat/api/chatPlaylist', { userInput: 'relaxed', n: 5 });
      await call('Jelly "calm music"', 'POST', '/chat/api/chatPlaylist', { userInput: 'calm music', server: 'Jelly' });
    },
  },
  {
    name: 'dashboard',
    title: 'When the sonic fingerprint, the dashboard and the readiness probes are asked, then the answers match',
    async run(g) {
      const { call } = g;
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
    },
  },
  {
    name: 'probes',
    title: 'When the configuration, model and task probes the plugins read are asked (idle stack), then the answers match',
    async run(g) {
      const { call } = g;
      await call('config', 'GET', '/api/config');
      await call('config Jelly', 'GET', `/api/config?${q({ server: 'Jelly' })}`);
      await call('config defaults', 'GET', '/api/config/defaults');
      await call('config defaults Jelly', 'GET', `/api/config/defaults?${q({ server: 'Jelly' })}`);
      await call('chat config defaults', 'GET', '/chat/api/config_defaults');
      await call('analysis model', 'GET', '/api/analysis/model');
      await call('active tasks (idle)', 'GET', '/api/active_tasks');
      await call('clap warmup', 'POST', '/api/clap/warmup', {});
    },
  },
];
