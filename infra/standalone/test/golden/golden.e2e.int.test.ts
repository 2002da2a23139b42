import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import request from 'supertest';
import { ArrayCatalogue, createFakeJellyfin, startSupysonic, wesnothTracks, WESNOTH_MUSIC_DIR, type FakeTrack, type StartedFake, type StartedSupysonic } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitFor, waitForAlignment, waitForTask } from '../helpers';
import { syntheticSong, transcodeAll } from '../media';
import { GOLDEN_FAMILIES, type GoldenContext } from './families';
import { GoldenHarness } from './harness';
import { appliedMigrations, seedUpgradeState, UPGRADE_JWT_SECRET, writeUpgradeFixture } from '../upgrade/fixture';

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
/**
 * GOLDEN_UPGRADE_DUMP=<date>-<commit> (npm run upgrade:record-fixture) stores this release's install as a fixture of
 * the upgrade suite (../upgrade): analysis and the anchors family, then a user, a session, a playlist, a schedule and
 * a setting, then a pg_dump. The other families are skipped in that run.
 */
const UPGRADE_DUMP = process.env.GOLDEN_UPGRADE_DUMP;

/** Wesnoth files (stems) the second server serves as mp3 transcodes. */
const JELLY_COPIES = ['battle-epic', 'defeat', 'elf-land', 'frantic', 'journeys_end', 'northerners', 'sad', 'suspense', 'the_king_is_dead', 'victory'];

d('golden answers (supysonic + fake Jellyfin, MusiCNN float, full stack)', () => {
  jest.setTimeout(15 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  let supysonic: StartedSupysonic;
  let jellyfin: StartedFake;
  beforeAll(async () => {
    supysonic = await startSupysonic({ musicDir: WESNOTH_MUSIC_DIR, user: 'alice', password: 'alice-pass' });
  }, 5 * 60_000);
  // An upgrade fixture is an install as users run it: with a configured session key (stored at first start).
  // Generation reuse pinned off (the recorded map and artist answers are a full rebuild's; docs/architecture.md
  // "Generation reuse"); GOLDEN_INDEX_BUILD_REUSE_MAX_CHANGED runs the flow with it on to see what differs.
  const reuse = process.env.GOLDEN_INDEX_BUILD_REUSE_MAX_CHANGED ?? '0';
  const t = useTestStack({ MODELS_DIR: MODELS, MUSICNN_PRECISION: 'float', MUSICNN_PATCHES: '2', INDEX_BUILD_REUSE_MAX_CHANGED: reuse, ...(UPGRADE_DUMP ? { JWT_SECRET: UPGRADE_JWT_SECRET } : {}) });
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

  const h = new GoldenHarness(() => t.url, auth, RECORD ? 'record' : 'compare', process.env.GOLDEN_FRESH_DIR);

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
    const savedAt = new Date();
    await request(t.url).post('/api/servers').set(auth).send({ name: 'Jelly', server_type: 'jellyfin', creds: { url: jellyfin.url, user_id: fake.userId, token: 'jf-token' } }).expect(201);
    // The recorded flow: the alignment the save enqueued maps the 10 copies by metadata, then the analysis analyses
    // the 2 songs of its own. Started at once, the analysis may reach a copy first and analyse it (mapped to its
    // stored song: the same answers, but "1 mapped to existing songs" on the dashboard).
    expect((await waitForAlignment(t.url, t.sql, savedAt)).state).toBe('SUCCESS');
    const second = await analyse();
    const jelly = (second.details.servers as Array<Record<string, unknown>>).find((s) => s.seen === copies.length + own.length);
    expect(jelly).toMatchObject({ analyzed: own.length, failed: 0 });
    const [{ n }] = await t.sql(`SELECT count(*)::int AS n FROM catalogue.score`);
    expect(n).toBe(41 + own.length);
    await h.labelIds(t.sql);
    await waitFor('the index to serve both servers', async () => {
      const res = await request(t.url).get('/api/map?percent=100&server=Jelly').set(auth);
      return res.status === 200 && res.body.items?.length === copies.length + own.length ? true : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
  }, 60 * 60_000);

  const ctx: GoldenContext = { call: h.call, id: h.id, ids: h.ids, sql: (text, params) => t.sql(text, params), anchorId: 0 };
  for (const f of GOLDEN_FAMILIES) {
    // Writing an upgrade fixture stops after the anchors family: the dump holds the analysed songs and anchors.
    (UPGRADE_DUMP && f.name !== 'anchors' ? it.skip : it)(f.title, async () => {
      await f.run(ctx);
      h.settle(f.name);
    });
  }

  if (UPGRADE_DUMP) {
    it(`When GOLDEN_UPGRADE_DUMP is set, then this release's install is stored as the upgrade fixture ${UPGRADE_DUMP}`, async () => {
      const tracks = ['battle-epic', 'sad', 'victory'].map((s) => h.id(`Supysonic:${s}`));
      const seeded = await seedUpgradeState(t.url, auth, tracks);
      const release = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
      const dir = await writeUpgradeFixture(UPGRADE_DUMP, t.db.url, {
        format: 1,
        release,
        created_at: new Date().toISOString(),
        golden_families_run: ['anchors'],
        ...seeded,
        migrations: await appliedMigrations(t.sql),
      });
      console.log(`upgrade fixture written to ${dir}`);
    });
  }
});

