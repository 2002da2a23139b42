import request from 'supertest';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { RoutingKeys, TaskCancelRequestedEvent, type TaskUpdatedEvent } from '@polyphony/contracts';
import { ADMIN, API_TOKEN, loginCookie, takeBackup, useTestStack, waitFor } from './helpers';

/** Operations through the gateway: schedules, backups (format checks), task control. */
describe('operations API (full stack)', () => {
  let userCookie: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const backupDir = `/tmp/polyphony-ops-test-${process.pid}-${Date.now()}`;
  const app = useTestStack({ BACKUP_DIR: backupDir, SCHEDULER_TICK_MS: '200', DURATION_TOLERANCE_SECONDS: '2' });
  const { sql } = app;

  beforeAll(async () => {
    const admin = await loginCookie(app.url);
    await request(app.url).post('/api/users').set('Cookie', admin).send({ username: 'listener', password: 'listener-pass-1', role: 'user', current_password: ADMIN.password }).expect(201);
    userCookie = await loginCookie(app.url, 'listener', 'listener-pass-1');
  });

  it('When a schedule has a bad expression, time zone or kind, then 400 says why and nothing is stored', async () => {
    const base = { name: 'nightly', kind: 'analysis', cron: '0 3 * * *', timezone: 'UTC' };
    const badCron = await request(app.url).post('/api/cron').set(auth).send({ ...base, cron: '61 3 * * *' }).expect(400);
    expect(badCron.body.error).toMatch(/Invalid cron expression '61 3 \* \* \*'.*minute/);
    const badTz = await request(app.url).post('/api/cron').set(auth).send({ ...base, timezone: 'Mars/Olympus' }).expect(400);
    expect(badTz.body.error).toMatch(/Unknown time zone 'Mars\/Olympus'/);
    const badKind = await request(app.url).post('/api/cron').set(auth).send({ ...base, kind: 'format_disk' }).expect(400);
    expect(badKind.body.error).toMatch(/kind/);
    await request(app.url).post('/api/cron').set(auth).send({ ...base, extra: 1 }).expect(400);
    // Params the kind's start route would refuse are refused when saved, not at every firing.
    const badParams = await request(app.url).post('/api/cron').set(auth).send({ ...base, params: { num_recent_albums: -1 } }).expect(400);
    expect(badParams.body.error).toMatch(/Invalid params for a analysis schedule: num_recent_albums/);
    await request(app.url).post('/api/cron').set(auth).send({ ...base, kind: 'backup', params: { keep: 0 } }).expect(400);
    await request(app.url).post('/api/cron').set(auth).send({ ...base, kind: 'backup', params: { passphrase: 'in clear text' } }).expect(400);
    // Only the built-in schedules every install starts with (cleaning, and Album of the Week disabled).
    expect((await request(app.url).get('/api/cron').set(auth).expect(200)).body.schedules.map((x: { name: string }) => x.name)).toEqual(['Album of the Week', 'Cleaning']);
    expect(await sql('SELECT name FROM registry.schedules ORDER BY name')).toEqual([{ name: 'Album of the Week' }, { name: 'Cleaning' }]);
  });

  it('When an admin adds, previews, edits and deletes a schedule, then each answer shows next run and history; a user is refused', async () => {
    const preview = await request(app.url).post('/api/cron/preview').set(auth).send({ cron: '0 3 * * *', timezone: 'Europe/Berlin', count: 3 }).expect(200);
    expect(preview.body.next).toHaveLength(3);
    expect(preview.body.next.every((t: string) => ['01', '02'].includes(t.slice(11, 13)))).toBe(true);
    const created = await request(app.url).post('/api/cron').set(auth).send({ name: 'Nightly analysis', kind: 'analysis', cron: '0 3 * * *', timezone: 'Europe/Berlin' }).expect(201);
    expect(created.body).toMatchObject({ name: 'Nightly analysis', kind: 'analysis', enabled: true, last_result: null, history: [] });
    expect(Date.parse(created.body.next_run_at)).toBeGreaterThan(Date.now());
    await request(app.url).post('/api/cron').set(auth).send({ name: 'nightly ANALYSIS', kind: 'cleaning', cron: '0 4 * * *' }).expect(409);
    const edited = await request(app.url).put(`/api/cron/${created.body.id}`).set(auth).send({ name: 'Nightly analysis', kind: 'analysis', cron: '30 2 * * 1-5', timezone: 'UTC', enabled: false }).expect(200);
    expect(edited.body).toMatchObject({ cron: '30 2 * * 1-5', enabled: false, next_run_at: null });
    await request(app.url).get('/api/cron').set('Cookie', userCookie).expect(403);
    await request(app.url).post('/api/cron').set('Cookie', userCookie).set('origin', app.url).send({ name: 'x', kind: 'analysis', cron: '* * * * *' }).expect(403);
    await request(app.url).delete(`/api/cron/${created.body.id}`).set(auth).expect(200);
    await request(app.url).delete(`/api/cron/${created.body.id}`).set(auth).expect(404);
    await request(app.url).put('/api/cron/not-a-uuid').set(auth).send({ name: 'x', kind: 'analysis', cron: '* * * * *' }).expect(400);
  });

  it('When a seconds schedule of backups is due, then the scheduler starts one backup per firing and records the outcome', async () => {
    const s = await request(app.url).post('/api/cron').set(auth).send({ name: 'backup every 2 s', kind: 'backup', cron: '*/2 * * * * *', params: { keep: 1 } }).expect(201);
    // The started firing's own history entry: under load the next firing may already be 'skipped: busy'
    // (which sets the schedule's last_task_id to null) by the time the list is read.
    const fired = await waitFor('a started firing', async () => {
      const list = (await request(app.url).get('/api/cron').set(auth).expect(200)).body.schedules;
      const row = list.find((x: { id: string }) => x.id === s.body.id);
      return row?.history.find((h: { outcome: string }) => h.outcome === 'started') as { task_id: string | null } | undefined;
    });
    expect(fired.task_id).toEqual(expect.any(String));
    await request(app.url).put(`/api/cron/${s.body.id}`).set(auth).send({ name: 'backup every 2 s', kind: 'backup', cron: '*/2 * * * * *', enabled: false }).expect(200);
    const done = await waitFor('the scheduled backup', async () => {
      const st = await request(app.url).get(`/api/status/${fired.task_id}`).set(auth);
      return st.body.state === 'SUCCESS' ? st.body : undefined;
    });
    expect(done.status_message).toMatch(/ready/);
    // keep: 1 leaves one ready archive however many fired.
    const ready = (await request(app.url).get('/api/backup').set(auth).expect(200)).body.backups.filter((b: { status: string }) => b.status === 'ready');
    expect(ready.length).toBeGreaterThanOrEqual(1);
    await request(app.url).delete(`/api/cron/${s.body.id}`).set(auth).expect(200);
    // A firing claimed just before the disable may still be writing: let it finish.
    await waitFor('no backup running', async () => ((await request(app.url).get('/api/backup').set(auth)).body.backups.some((b: { status: string }) => b.status === 'running') ? undefined : true));
  });

  async function backup(passphrase?: string): Promise<{ id: string; archive: Buffer }> {
    const { row: b, archive, contentType } = await takeBackup(app.url, auth, passphrase ? { passphrase } : {});
    expect(contentType).toBe('application/gzip');
    expect(archive.length).toBe(b.size_bytes);
    const lines = gunzipSync(archive).toString('utf8').trimEnd().split('\n');
    const trailer = JSON.parse(lines.at(-1)!);
    expect(trailer.sha256).toBe(createHash('sha256').update(lines.slice(0, -1).map((l) => `${l}\n`).join('')).digest('hex'));
    expect(b.sha256).toBe(trailer.sha256);
    return { id: b.id, archive };
  }

  it('When many backups are requested at once, then exactly one starts (409 for the rest) and the registry keeps answering', async () => {
    // Regression (fuzzing at 1,000 cases per route): concurrent starts all passed the "one at a
    // time" check before its first await; six snapshot jobs then held the registry's whole
    // connection pool waiting for progress writes, and every registry route hung.
    const answers = await Promise.all(Array.from({ length: 8 }, () => request(app.url).post('/api/backup').set(auth).send({})));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    expect(answers.find((a) => a.status === 409)!.body.error).toMatch(/already running/);
    const started = answers.find((a) => a.status === 202)!.body.backup_id as string;
    await waitFor('the one backup ready', async () => ((await request(app.url).get('/api/backup').set(auth).expect(200)).body.backups.find((b: { id: string; status: string }) => b.id === started && b.status === 'ready') ? true : undefined));
    await request(app.url).get('/api/tasks').set(auth).expect(200);
  });

  it('When a backup is made without a passphrase, then it holds users and servers but no secret; with one, secrets are encrypted', async () => {
    await sql(`INSERT INTO registry.music_servers (name, server_type, creds, is_default) VALUES ('Home', 'navidrome', '{"url":"http://nas:4533","user":"me","password":"very-secret-pw"}', true)`);
    // Saved anchors and radios are user data: in the archive (their run bookkeeping is not).
    await sql(`INSERT INTO "index".anchors (name, centroid, dim, items) VALUES ('Backed-up anchor', ARRAY[0.6, 0.8]::real[], 2, '[]'::jsonb)`);
    await sql(`INSERT INTO "index".radios (anchor_id, temperature, n_results) SELECT id, 0.5, 7 FROM "index".anchors WHERE name = 'Backed-up anchor'`);
    const plain = await backup();
    const text = gunzipSync(plain.archive).toString('utf8');
    const header = JSON.parse(text.split('\n')[0]!);
    expect(header).toMatchObject({ format: 'polyphony-backup', version: 1, secrets: 'excluded' });
    expect(Object.keys(header.schemas)).toEqual(expect.arrayContaining(['auth', 'registry', 'catalogue', 'analysis', 'index', 'playlist']));
    expect(text).toContain('"table":"auth.service_users"');
    expect(text).toContain('"table":"catalogue.score"');
    expect(text).toContain('http://nas:4533');
    expect(text).not.toContain('very-secret-pw');
    expect(text).not.toContain(API_TOKEN);
    expect(text).not.toContain('"table":"index.cells"');
    expect(text).toContain('"table":"index.anchors"');
    expect(text).toContain('"table":"index.radios"');
    expect(text).toContain('Backed-up anchor');
    expect(text).not.toContain('"table":"index.radio_runs"');
    const sealed = await backup('a long passphrase');
    const sealedText = gunzipSync(sealed.archive).toString('utf8');
    expect(sealedText).not.toContain('very-secret-pw');
    expect(sealedText).toContain('"$enc"');
  });

  it('When a corrupted, truncated, foreign or wrongly unlocked archive is restored, then 400 says why and nothing changes', async () => {
    const { id, archive } = await backup('a long passphrase');
    const before = await sql(`SELECT name, creds FROM registry.music_servers ORDER BY name`);
    const anchorsBefore = await sql(`SELECT a.name, a.centroid, r.n_results FROM "index".anchors a JOIN "index".radios r ON r.anchor_id = a.id ORDER BY a.name`);
    expect(anchorsBefore).toHaveLength(1);
    await sql(`DELETE FROM "index".anchors`);
    await sql(`INSERT INTO registry.music_servers (name, server_type, creds) VALUES ('Second', 'lyrion', '{"url":"http://lms:9000"}')`);
    const lines = gunzipSync(archive).toString('utf8').split('\n');
    const tampered = gzipSync(Buffer.from(lines.map((l) => l.replace('http://nas:4533', 'http://evil:4533')).join('\n')));
    const truncated = gzipSync(Buffer.from(lines.slice(0, -2).join('\n')));
    const foreign = gzipSync(Buffer.from('{"hello":"world"}\n'));
    const upload = (body: Buffer, q = '') => request(app.url).post(`/api/backup/restore${q}`).set(auth).set('content-type', 'application/gzip').send(body);
    expect((await upload(tampered, '?passphrase=a%20long%20passphrase').expect(400)).body.error).toMatch(/checksum/);
    expect((await upload(truncated, '?passphrase=a%20long%20passphrase').expect(400)).body.error).toMatch(/truncated/);
    expect((await upload(foreign).expect(400)).body.error).toMatch(/Not a polyphony backup/);
    expect((await upload(Buffer.from('not gzip at all')).expect(400)).body.error).toMatch(/unreadable/);
    expect((await upload(archive).expect(400)).body.error).toMatch(/passphrase/);
    expect((await request(app.url).post(`/api/backup/restore?id=${id}`).set(auth).set('x-backup-passphrase', 'wrong passphrase').expect(400)).body.error).toMatch(/Wrong passphrase/);
    const after = await sql(`SELECT name FROM registry.music_servers ORDER BY name`);
    expect(after.map((r: { name: string }) => r.name)).toEqual(['Home', 'Second']);
    // The right passphrase restores the archive's state: the second server is gone, the secret is back.
    const ok = await request(app.url).post(`/api/backup/restore?id=${id}`).set(auth).set('x-backup-passphrase', 'a long passphrase').expect(200);
    expect(ok.body.restored.rows).toBeGreaterThan(0);
    expect(await sql(`SELECT name, creds FROM registry.music_servers ORDER BY name`)).toEqual(before);
    expect(await sql(`SELECT a.name, a.centroid, r.n_results FROM "index".anchors a JOIN "index".radios r ON r.anchor_id = a.id ORDER BY a.name`)).toEqual(anchorsBefore);
    // Restoring the users ends every session of this install; the restored user logs in again.
    await request(app.url).get('/api/backup').set('Cookie', userCookie).expect(401);
    userCookie = await loginCookie(app.url, 'listener', 'listener-pass-1');
    await request(app.url).get('/api/backup').set('Cookie', userCookie).expect(403);
  });

  it('When an admin changes settings, then values are validated, secrets stay write-only, sources show, and the owning service applies them live', async () => {
    const list = async () => (await request(app.url).get('/api/config/settings').set(auth).expect(200)).body.settings as Array<Record<string, unknown>>;
    const get = async (key: string) => (await list()).find((s) => s.key === key)!;
    expect(await get('DURATION_TOLERANCE_SECONDS')).toMatchObject({ value: 2, source: 'env', owner: 'catalogue', live: true });
    expect(await get('DUPLICATE_DISTANCE_THRESHOLD_COSINE')).toMatchObject({ value: 0.04, source: 'default' });
    expect(await get('OPENAI_API_KEY')).toMatchObject({ value: null, secret: true });
    const bad = await request(app.url).put('/api/config').set(auth).send({ DUPLICATE_DISTANCE_THRESHOLD_COSINE: 0.05, NO_SUCH_SETTING: 1, CHROMAPRINT_GATE_ENABLED: 'maybe', AI_MODEL_PROVIDER: 'SKYNET' }).expect(400);
    expect(bad.body.error).toMatch(/NO_SUCH_SETTING: unknown setting/);
    expect(bad.body.error).toMatch(/CHROMAPRINT_GATE_ENABLED/);
    expect(bad.body.error).toMatch(/AI_MODEL_PROVIDER/);
    expect(await get('DUPLICATE_DISTANCE_THRESHOLD_COSINE')).toMatchObject({ value: 0.04, source: 'default' });
    await request(app.url).put('/api/config').set(auth).send({ DURATION_TOLERANCE_SECONDS: -1 }).expect(400);
    await request(app.url).put('/api/config').set(auth).send(['not', 'an', 'object']).expect(400);

    const ok = await request(app.url).put('/api/config').set(auth).send({ DUPLICATE_DISTANCE_THRESHOLD_COSINE: 0.05, CATALOGUE_ID_SCHEME_VERSION: 4, OPENAI_API_KEY: 'sk-settings-secret-123', AI_MODEL_PROVIDER: 'OPENAI' }).expect(200);
    expect(ok.body.updated.sort()).toEqual(['AI_MODEL_PROVIDER', 'CATALOGUE_ID_SCHEME_VERSION', 'DUPLICATE_DISTANCE_THRESHOLD_COSINE', 'OPENAI_API_KEY']);
    expect(ok.body.restart_required).toEqual(['CATALOGUE_ID_SCHEME_VERSION']);
    expect(JSON.stringify(ok.body)).not.toContain('sk-settings-secret-123');
    expect(await get('DUPLICATE_DISTANCE_THRESHOLD_COSINE')).toMatchObject({ value: 0.05, source: 'database' });
    expect(await get('OPENAI_API_KEY')).toMatchObject({ value: '__unchanged__', source: 'database' });
    // The catalogue owns the identity threshold: it receives it over the bus into its own settings.
    await waitFor('catalogue setting', async () => {
      const rows = await sql(`SELECT value FROM catalogue.settings WHERE key = 'DUPLICATE_DISTANCE_THRESHOLD_COSINE'`);
      return rows[0]?.value === '0.05' ? true : undefined;
    });
    // The mask keeps a secret; null resets a value to its default (also in the owning service).
    await request(app.url).put('/api/config').set(auth).send({ OPENAI_API_KEY: '__unchanged__', DUPLICATE_DISTANCE_THRESHOLD_COSINE: null }).expect(200);
    expect(await sql(`SELECT value FROM registry.app_config WHERE key = 'OPENAI_API_KEY'`)).toEqual([{ value: 'sk-settings-secret-123' }]);
    expect(await get('DUPLICATE_DISTANCE_THRESHOLD_COSINE')).toMatchObject({ value: 0.04, source: 'default' });
    await waitFor('catalogue reset', async () => ((await sql(`SELECT value FROM catalogue.settings WHERE key = 'DUPLICATE_DISTANCE_THRESHOLD_COSINE'`)).length === 0 ? true : undefined));
    await request(app.url).get('/api/config/settings').set('Cookie', userCookie).expect(403);
    await request(app.url).put('/api/config').set('Cookie', userCookie).set('origin', app.url).send({ AI_MODEL_PROVIDER: 'NONE' }).expect(403);
    // GET /api/config: a session admin also gets every setting with value and source, secrets masked; nobody else does.
    const adminConfig = (await request(app.url).get('/api/config').set('Cookie', await loginCookie(app.url)).expect(200)).body;
    const byKey = new Map((adminConfig.settings as Array<{ key: string }>).map((x) => [x.key, x]));
    expect(byKey.get('OPENAI_API_KEY')).toMatchObject({ value: '__unchanged__', source: 'database', secret: true });
    expect(byKey.get('DURATION_TOLERANCE_SECONDS')).toMatchObject({ value: 2, source: 'env' });
    expect(byKey.get('TOP_N_MOODS')).toMatchObject({ value: 5, source: 'default', owner: 'analysis' });
    expect(JSON.stringify(adminConfig)).not.toContain('sk-settings-secret-123');
    expect((await request(app.url).get('/api/config').set('Cookie', userCookie).expect(200)).body.settings).toBeUndefined();
    expect((await request(app.url).get('/api/config').set(auth).expect(200)).body.settings).toBeUndefined();
  });

  it('When cancel_all is posted with an empty body, then every live task shows the request, ends REVOKED by its owner, and the history lists tasks with durations', async () => {
    const startedAt = new Date(Date.now() - 5000).toISOString();
    await sql(`INSERT INTO registry.tasks (id, type, owner, state, message, seq, started_at) VALUES ('t-live-1', 'clustering', 'playlist', 'RUNNING', 'Run 3 of 9', 4, $1), ('t-live-2', 'cleaning', 'catalogue', 'NEW', 'Queued', 1, now())`, [startedAt]);
    // These board rows have no run in their owners' tables: this test plays the owners, ending a run on
    // the cancel request with its REVOKED snapshot (as the task-run owners do).
    const requested: string[] = [];
    await app.stack.bus.consume({
      queue: 'ops-test.task-cancel',
      bindings: [RoutingKeys.taskCancelRequested],
      schema: TaskCancelRequestedEvent,
      handler: async (e) => {
        if (!e.taskId.startsWith('t-live-')) return;
        requested.push(e.taskId);
        const owner: Pick<TaskUpdatedEvent, 'type' | 'owner'> = e.taskId === 't-live-1' ? { type: 'clustering', owner: 'playlist' } : { type: 'cleaning', owner: 'catalogue' };
        const seq = e.taskId === 't-live-1' ? 5 : 2;
        await app.stack.bus.publish(RoutingKeys.taskUpdated, { taskId: e.taskId, ...owner, state: 'REVOKED', progress: 33, message: 'Cancelled; work done so far is kept', servers: [], log: [], details: {}, seq, startedAt, finishedAt: new Date().toISOString() } satisfies TaskUpdatedEvent);
      },
    });
    const some = await request(app.url).post('/api/cancel_all/main_clustering').set(auth).expect(200);
    expect(some.body).toMatchObject({ cancelled_jobs_count: 1, task_ids: ['t-live-1'] });
    // The registry never writes a task's state: until its owner's snapshot it shows the owner's state and the request.
    expect(await sql(`SELECT state, cancel_requested_at IS NOT NULL AS asked FROM registry.tasks WHERE id = 't-live-2'`)).toEqual([{ state: 'NEW', asked: false }]);
    const all = await request(app.url).post('/api/cancel_all').set(auth).expect(200);
    expect(all.body).toMatchObject({ task_ids: expect.arrayContaining(['t-live-2']) });
    await waitFor('owners ended both', async () => ((await request(app.url).get('/api/active_tasks').set(auth).expect(200)).body.task_id === undefined ? true : undefined));
    expect(requested).toEqual(expect.arrayContaining(['t-live-1', 't-live-2']));
    const ended = (await request(app.url).get('/api/status/t-live-1').set(auth).expect(200)).body;
    expect(ended).toMatchObject({ state: 'REVOKED', status: 'REVOKED', status_message: 'Cancelled; work done so far is kept', details: { cancel_requested_at: expect.any(String) } });
    const hist = await request(app.url).get('/api/tasks?kind=clustering&limit=5').set(auth).expect(200);
    expect(hist.body.tasks).toEqual([expect.objectContaining({ task_id: 't-live-1', state: 'REVOKED', duration_seconds: expect.any(Number) })]);
    expect(hist.body.tasks[0].duration_seconds).toBeGreaterThanOrEqual(5);
    await request(app.url).get('/api/tasks?limit=0').set(auth).expect(400);
    await request(app.url).get('/api/tasks').set('Cookie', userCookie).expect(403);
    // A task whose owner has not ended it yet (no owner answers for this one): still the owner's state, with the request shown.
    await sql(`INSERT INTO registry.tasks (id, type, owner, state, message, seq, started_at) VALUES ('t-slow-owner', 'backup', 'registry', 'RUNNING', 'Dumping catalogue', 2, now())`);
    await request(app.url).post('/api/cancel/t-slow-owner').set(auth).expect(200);
    const pending = (await request(app.url).get('/api/status/t-slow-owner').set(auth).expect(200)).body;
    expect(pending).toMatchObject({ state: 'RUNNING', status: 'PROGRESS', status_message: 'Cancel requested · Dumping catalogue', details: { cancel_requested_at: expect.any(String) } });
    expect((await request(app.url).get('/api/active_tasks').set(auth).expect(200)).body).toMatchObject({ task_id: 't-slow-owner' });
    // The owner's snapshot wins: it ends the task (or completes it, for a kind that cannot stop midway).
    await app.stack.bus.publish(RoutingKeys.taskUpdated, { taskId: 't-slow-owner', type: 'backup', owner: 'registry', state: 'SUCCESS', progress: 100, message: 'Backup written', servers: [], log: [], details: {}, seq: 3 } satisfies TaskUpdatedEvent);
    await waitFor('owner snapshot', async () => ((await request(app.url).get('/api/status/t-slow-owner').set(auth).expect(200)).body.state === 'SUCCESS' ? true : undefined));
    expect((await request(app.url).get('/api/status/t-slow-owner').set(auth).expect(200)).body.status_message).toBe('Backup written');
  });
});
