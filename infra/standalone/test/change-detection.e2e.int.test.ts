import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { startSupysonic, wesnothFiles, type StartedSupysonic } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitFor, waitForTask } from './helpers';

/**
 * Issue 35, change detection with a real Subsonic server (supysonic): a server polled every 5 s, its folder empty at
 * first (no analysis run at all, so the suite analyses two songs only); a song file added to its folder (and the
 * folder rescanned with supysonic's CLI) is mapped and analysed without a run and found by search (the then empty
 * index asks for its first full build for it: the live library, no run being live); a
 * removed file loses its mapping (its song stays). The server's webhook (push) is authenticated by its push token.
 * A file changed in place (same path, so the same provider id): replaced by another Wesnoth track (another size), it is
 * re-analysed within the polling and its mapping moves to the new song (the old song stays); replaced by a re-tagged
 * copy of the same audio (another size again), it keeps its content id. Neither starts an analysis run.
 */
describe('change detection per server (supysonic, full stack)', () => {
  jest.setTimeout(10 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  // Two MusiCNN patches per track: the pipeline under test, not the learned vector's quality.
  const app = useTestStack({ MUSICNN_PATCHES: '2' });
  const { sql } = app;
  const PUSH_TOKEN = 'push-token-0123456789abcdef';
  const [added, second, third] = wesnothFiles() as [string, string, string];
  let root: string;
  let supysonic: StartedSupysonic;
  let serverId: string;

  const count = async (text: string, params: unknown[] = []) => (await sql<{ n: number }>(text, params))[0]!.n;
  const mappings = () => count(`SELECT count(*)::int AS n FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
  const songs = () => count(`SELECT count(*)::int AS n FROM catalogue.score`);
  const watchRow = async () => (await sql<{ token: string | null; last_added: number; last_removed: number; checked_at: Date | null; failures: number }>(`SELECT * FROM analysis.change_watch WHERE server_id = $1`, [serverId]))[0];

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'polyphony-change-detection-'));
    await mkdir(path.join(root, 'music'));
    supysonic = await startSupysonic({ musicDir: root, user: 'alice', password: 'alice-pass' });
  }, 120_000);
  afterAll(async () => {
    await supysonic?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('When a server is added without a setting, then it polls every 900 s; bad settings are 400; the push token is never returned', async () => {
    const created = await request(app.url).post('/api/servers').set(auth).send({ name: 'S', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    serverId = created.body.id;
    expect(created.body.change_detection).toEqual({ mode: 'poll', interval_seconds: 900, push_token_set: false });
    for (const bad of [{ interval_seconds: 2 }, { mode: 'sometimes' }, { push_token: 'short' }, { interval_seconds: 90_000 }, { mode: 'poll', extra: 1 }]) {
      const res = await request(app.url).put(`/api/servers/${serverId}`).set(auth).send({ change_detection: bad }).expect(400);
      expect(res.body.code).toBe('validation_failed');
    }
    const saved = await request(app.url).put(`/api/servers/${serverId}`).set(auth).send({ change_detection: { mode: 'push', interval_seconds: 5, push_token: PUSH_TOKEN } }).expect(200);
    expect(saved.body.change_detection).toEqual({ mode: 'push', interval_seconds: 5, push_token_set: true });
    expect(JSON.stringify(saved.body)).not.toContain(PUSH_TOKEN);
    const listed = await request(app.url).get('/api/servers').set(auth).expect(200);
    expect(listed.body.servers[0].change_detection).toEqual({ mode: 'push', interval_seconds: 5, push_token_set: true });
  });

  it('When a song file is added and supysonic rescans, then it is mapped and analysed without a run and found by search', async () => {
    // The first check takes the baseline token (of the empty folder).
    await waitFor(() => 'the change-detection baseline', async () => ((await watchRow())?.token ? true : undefined), { timeoutMs: 60_000, intervalMs: 250 });

    await copyFile(added, path.join(root, 'music', path.basename(added)));
    const t0 = Date.now();
    await supysonic.rescan();
    await waitFor(() => 'the added song mapped', async () => ((await mappings()) === 1 ? true : undefined), { timeoutMs: 240_000, intervalMs: 250 });
    const seconds = (Date.now() - t0) / 1000;
    expect(await songs()).toBe(1);
    const row = await sql<{ file_path: string; match_tier: string }>(`SELECT file_path, match_tier FROM catalogue.track_server_map WHERE server_id = $1 AND file_path LIKE $2`, [serverId, `%${path.basename(added)}`]);
    expect(row).toHaveLength(1);
    expect((await watchRow())!.last_added).toBe(1);
    // No full analysis run: the change was analysed as a batch. The index was empty (no cells to append to): the live
    // library requested its first full build, which serves the song. (Appending to a built generation without a
    // rebuild: services/index/test/live-library.api.test.ts and `bash scripts/bench.sh live-library`.)
    expect(await count(`SELECT count(*)::int AS n FROM analysis.runs`)).toBe(0);
    const title = (await sql<{ title: string }>(`SELECT title FROM catalogue.score`))[0]!.title;
    await waitFor(() => 'the added song found by /api/search_tracks', async () => {
      const res = await request(app.url).get(`/api/search_tracks?search_query=${encodeURIComponent(title)}`).set(auth);
      return res.status === 200 && JSON.stringify(res.body).includes(title) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    expect(await count(`SELECT count(*)::int AS n FROM analysis.run_tracks WHERE server_id = $1 AND outcome = 'analyzed' AND run_id NOT IN (SELECT id FROM analysis.runs)`, [serverId])).toBe(1);
    process.stdout.write(`change detection: added song mapped ${seconds.toFixed(1)} s after the rescan (poll 5 s)\n`);
  });

  it('When the webhook is called, then only the push token opens it (401 otherwise, 404 for an unknown server)', async () => {
    const hook = `/api/hooks/servers/${serverId}/changed`;
    await request(app.url).post(hook).send({ Event: 'ItemAdded' }).expect(401);
    await request(app.url).post(`${hook}?token=wrong-token-0123456789`).send({}).expect(401);
    const unknown = await request(app.url).post('/api/hooks/servers/00000000-0000-0000-0000-000000000000/changed').set('X-Polyphony-Token', PUSH_TOKEN).send({});
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
    // A long fallback interval: a check within seconds is then the webhook's doing. The check already due runs first.
    await request(app.url).put(`/api/servers/${serverId}`).set(auth).send({ change_detection: { interval_seconds: 3600 } }).expect(200);
    await new Promise((r) => setTimeout(r, 8000));
    const before = (await watchRow())!.checked_at!;
    expect((await sql<{ due: boolean }>(`SELECT next_check_at > now() + interval '10 minutes' AS due FROM analysis.change_watch WHERE server_id = $1`, [serverId]))[0]!.due).toBe(true);
    await request(app.url).post(hook).set('X-Polyphony-Token', PUSH_TOKEN).send({ Event: 'ItemAdded' }).expect(202);
    await waitFor(() => 'the check the webhook asked for', async () => ((await watchRow())!.checked_at! > before ? true : undefined), { timeoutMs: 30_000, intervalMs: 100 });
  });

  it('When a song file is removed and supysonic rescans, then its mapping is removed and its song stays', async () => {
    // A second song first: a listing of one file for one stored mapping would look partial (nothing is then removed).
    await copyFile(second, path.join(root, 'music', path.basename(second)));
    await supysonic.rescan();
    await request(app.url).post(`/api/hooks/servers/${serverId}/changed?token=${PUSH_TOKEN}`).set('Content-Type', 'text/plain').send('library.new').expect(202);
    await waitFor(() => 'the second song mapped', async () => ((await mappings()) === 2 ? true : undefined), { timeoutMs: 240_000, intervalMs: 250 });
    await rm(path.join(root, 'music', path.basename(added)));
    await supysonic.rescan();
    await request(app.url).post(`/api/hooks/servers/${serverId}/changed`).set('X-Polyphony-Token', PUSH_TOKEN).send({ Event: 'ItemRemoved' }).expect(202);
    await waitFor(() => 'the removed file unmapped', async () => ((await mappings()) === 1 ? true : undefined), { timeoutMs: 60_000, intervalMs: 250 });
    expect((await watchRow())!.last_removed).toBe(1);
    const gone = await sql(`SELECT 1 FROM catalogue.track_server_map WHERE server_id = $1 AND file_path LIKE $2`, [serverId, `%${path.basename(added)}`]);
    expect(gone).toHaveLength(0);
    // Never an analysed song deleted: the removed file's song is an orphan now.
    expect(await songs()).toBe(2);
    expect(await count(`SELECT count(*)::int AS n FROM analysis.runs`)).toBe(0);
  });

  describe('a file changed in place (same path, same provider id)', () => {
    const target = () => path.join(root, 'music', path.basename(second));
    const mappingRow = async () => (await sql<{ provider_id: string; item_id: string; file_stamp: string | null }>(`SELECT provider_id, item_id, file_stamp FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]))[0]!;
    /** supysonic's own view of one song (getSong): a provider id that survived the rescan answers with the new file. */
    const supysonicSong = async (id: string) => {
      const res = await fetch(`${supysonic.url}/rest/getSong.view?id=${encodeURIComponent(id)}&u=alice&p=alice-pass&v=1.12.0&c=polyphony-test&f=json`);
      return ((await res.json()) as { 'subsonic-response': { song?: { id: string; size: number; path: string; title: string } } })['subsonic-response'].song;
    };
    /** Replaces the file at the same path (a new mtime, so supysonic reads it again), rescans, returns the new size. */
    const replaceWith = async (source: string) => {
      await new Promise((r) => setTimeout(r, 1100)); // supysonic compares whole-second mtimes
      await copyFile(source, target());
      await supysonic.rescan();
      return (await stat(target())).size;
    };
    const trackTitle = async (providerId: string) => {
      const res = await request(app.url).get(`/api/track?item_id=${encodeURIComponent(providerId)}`).set(auth);
      return res.status === 200 ? (res.body as { title?: string }).title : undefined;
    };
    let providerId: string;
    let firstItem: string;

    beforeAll(async () => {
      // Polling again (every 5 s): no webhook is called below, the poll alone must see the changes.
      await request(app.url).put(`/api/servers/${serverId}`).set(auth).send({ change_detection: { mode: 'poll', interval_seconds: 5 } }).expect(200);
    });

    it('When the file is replaced by another song, then within the polling its mapping moves to the new song, served by /api/track and /api/similar_tracks; the old song stays; no run', async () => {
      const before = await mappingRow();
      providerId = before.provider_id;
      firstItem = before.item_id;
      expect(before.file_stamp).toBe(`size:${(await stat(target())).size}`);
      const oldTitle = await waitFor(() => 'the track answer of the file before the change', () => trackTitle(providerId), { timeoutMs: 60_000, intervalMs: 500 });
      const songsBefore = await songs();
      const analysedBefore = await count(`SELECT count(*)::int AS n FROM analysis.run_tracks WHERE server_id = $1 AND provider_id = $2 AND outcome = 'analyzed'`, [serverId, providerId]);
      const size = await replaceWith(third);
      const t0 = Date.now();
      // supysonic keeps the song (same path): the provider id is unchanged and now describes the new file.
      const listed = await supysonicSong(providerId);
      expect([listed?.id, listed?.size]).toEqual([providerId, size]);
      expect(listed?.title).not.toBe(oldTitle);
      await waitFor(() => 'the mapping moved to the new song', async () => {
        const row = await mappingRow();
        return row.item_id !== firstItem && row.file_stamp === `size:${size}` ? row : undefined;
      }, { timeoutMs: 180_000, intervalMs: 250 });
      const mappedSeconds = (Date.now() - t0) / 1000;
      const row = await mappingRow();
      expect(row.provider_id).toBe(providerId);
      expect(await songs()).toBe(songsBefore + 1);
      // Never an analysed song deleted: the old song is still stored, it only lost this mapping.
      expect(await count(`SELECT count(*)::int AS n FROM catalogue.score WHERE item_id = $1`, [firstItem])).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM catalogue.track_server_map WHERE item_id = $1`, [firstItem])).toBe(0);
      // The provider id answers with the new song (its title, as the listing now gives it) once the index has it.
      await waitFor(() => 'the track answer of the new song', async () => ((await trackTitle(providerId)) === listed?.title ? true : undefined), { timeoutMs: 120_000, intervalMs: 500 });
      const similar = await request(app.url).get(`/api/similar_tracks?item_id=${encodeURIComponent(providerId)}&n=5`).set(auth).expect(200);
      expect(JSON.stringify(similar.body)).not.toContain(oldTitle);
      const servedSeconds = (Date.now() - t0) / 1000;
      expect(await count(`SELECT count(*)::int AS n FROM analysis.runs`)).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM analysis.run_tracks WHERE server_id = $1 AND provider_id = $2 AND outcome = 'analyzed'`, [serverId, providerId])).toBe(analysedBefore + 1);
      process.stdout.write(`change detection: file changed in place re-mapped ${mappedSeconds.toFixed(1)} s, served ${servedSeconds.toFixed(1)} s after the rescan (poll 5 s)\n`);
    });

    it('When the file is replaced by a re-tagged copy of the same audio (another size), then it keeps its content id and gets the new stamp; no song is added', async () => {
      const before = await mappingRow();
      const songsBefore = await songs();
      const dir = await mkdtemp(path.join(tmpdir(), 'polyphony-retag-'));
      try {
        const retagged = path.join(dir, path.basename(third));
        // Same audio packets (-c copy), new tags: the file's size changes, its audio does not.
        await promisify(execFile)('ffmpeg', ['-v', 'error', '-y', '-i', third, '-map', '0:a', '-c', 'copy', '-metadata', 'title=Re-tagged title', '-metadata', 'comment=re-tagged by the change-detection test', retagged]);
        expect((await stat(retagged)).size).not.toBe((await stat(third)).size);
        const size = await replaceWith(retagged);
        await waitFor(() => 'the new stamp written', async () => ((await mappingRow()).file_stamp === `size:${size}` ? true : undefined), { timeoutMs: 180_000, intervalMs: 250 });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      const after = await mappingRow();
      expect([after.provider_id, after.item_id]).toEqual([before.provider_id, before.item_id]);
      expect(await songs()).toBe(songsBefore);
      expect(await count(`SELECT count(*)::int AS n FROM analysis.run_tracks WHERE server_id = $1 AND provider_id = $2 AND outcome = 'mapped_existing'`, [serverId, before.provider_id])).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM analysis.runs`)).toBe(0);
    });

    it('When change detection is off and the file is replaced by a song stored before (now without a file), then an analysis run re-analyses that file and maps it back onto the stored song', async () => {
      await request(app.url).put(`/api/servers/${serverId}`).set(auth).send({ change_detection: { mode: 'off' } }).expect(200);
      // The first song added (its file removed above): stored, mapped nowhere.
      const orphan = (await sql<{ item_id: string }>(`SELECT item_id FROM catalogue.score WHERE file_path LIKE $1`, [`%${path.basename(added)}`]))[0]!.item_id;
      expect(await count(`SELECT count(*)::int AS n FROM catalogue.track_server_map WHERE item_id = $1`, [orphan])).toBe(0);
      const before = await mappingRow();
      const songsBefore = await songs();
      const size = await replaceWith(added);
      const start = await request(app.url).post('/api/analysis/start').set(auth).send({}).expect(202);
      expect((await waitForTask(app.url, start.body.task_id, { timeoutMs: 8 * 60_000 })).state).toBe('SUCCESS');
      const after = await mappingRow();
      expect(after).toEqual({ provider_id: before.provider_id, item_id: orphan, file_stamp: `size:${size}` });
      expect(await songs()).toBe(songsBefore);
      // The song it held before keeps being stored.
      expect(await count(`SELECT count(*)::int AS n FROM catalogue.score WHERE item_id = $1`, [before.item_id])).toBe(1);
    });
  });
});
