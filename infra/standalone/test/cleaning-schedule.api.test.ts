import request from 'supertest';
import type { TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';

/**
 * Issue "Operations" (schedules): the catalogue's CLEANING_SCHEDULE_HOURS timer is gone; an install
 * starts with a built-in "Cleaning" schedule in /api/cron, converted once from the old setting (here
 * from the environment on first start), editable and deletable by the admin and never re-created by a
 * later start. The old key is no longer a setting.
 */
describe('built-in cleaning schedule replacing CLEANING_SCHEDULE_HOURS (full stack)', () => {
  jest.setTimeout(5 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const env = { CLEANING_SCHEDULE_HOURS: '168', TZ: 'Europe/Paris' };
  let stack: Stack | undefined;
  let db: TestDatabase;
  let url: string;

  type Row = { id: string; name: string; kind: string; cron: string; timezone: string; enabled: boolean };
  const all = async () => (await request(url).get('/api/cron').set(auth).expect(200)).body.schedules as Row[];
  /** The cleaning schedules (the install also starts with the disabled Album of the Week, issue 31). */
  const schedules = async () => (await all()).filter((x) => x.kind === 'cleaning');
  const restart = async () => {
    await stack?.stop();
    ({ stack, url } = await startTestStack(env, db));
  };

  beforeAll(async () => {
    ({ stack, db, url } = await startTestStack(env));
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  });

  it('When an install starts with CLEANING_SCHEDULE_HOURS=168, then it has one weekly "Cleaning" schedule in its time zone and the old key is not a setting', async () => {
    expect(await schedules()).toEqual([expect.objectContaining({ name: 'Cleaning', kind: 'cleaning', cron: '30 3 * * 0', timezone: 'Europe/Paris', enabled: true })]);
    expect((await all()).filter((x) => x.kind !== 'cleaning')).toEqual([expect.objectContaining({ name: 'Album of the Week', kind: 'album_of_the_week', cron: '30 0 * * 6', timezone: 'Europe/Paris', enabled: false })]);
    const settings = (await request(url).get('/api/config/settings').set(auth).expect(200)).body.settings as Array<{ key: string }>;
    expect(settings.map((s) => s.key)).not.toContain('CLEANING_SCHEDULE_HOURS');
    const refused = await request(url).put('/api/config').set(auth).send({ CLEANING_SCHEDULE_HOURS: 12 }).expect(400);
    expect(JSON.stringify(refused.body)).toMatch(/CLEANING_SCHEDULE_HOURS/);
    const n = await db.count(`SELECT count(*)::int AS n FROM registry.app_config WHERE key = 'CLEANING_SCHEDULE_HOURS'`);
    expect(n).toBe(0);
  });

  it('When the built-in schedule is due, then the one scheduler starts a cleaning task in the catalogue service', async () => {
    const [cleaning] = await schedules();
    await request(url).put(`/api/cron/${cleaning!.id}`).set(auth).send({ name: 'Cleaning', kind: 'cleaning', cron: '*/2 * * * * *', timezone: 'UTC' }).expect(200);
    const deadline = Date.now() + 60_000;
    let started: { task_id: string | null } | undefined;
    while (!started && Date.now() < deadline) {
      const row = ((await request(url).get('/api/cron').set(auth).expect(200)).body.schedules as Array<{ kind: string; history: Array<{ outcome: string; task_id: string | null; message: string }> }>).find((x) => x.kind === 'cleaning')!;
      started = row.history.find((h) => h.outcome === 'started');
      if (!started && row.history.some((h) => h.outcome === 'failed')) throw new Error(`firing failed: ${JSON.stringify(row.history)}`);
      if (!started) await new Promise((r) => setTimeout(r, 250));
    }
    await request(url).put(`/api/cron/${cleaning!.id}`).set(auth).send({ name: 'Cleaning', kind: 'cleaning', cron: '30 3 * * 0', timezone: 'Europe/Paris' }).expect(200);
    expect(started?.task_id).toEqual(expect.any(String));
    const status = await request(url).get(`/api/status/${started!.task_id}`).set(auth).expect(200);
    expect(status.body.task_type_from_db).toMatch(/cleaning/);
    // Let the started cleaning (and a firing claimed just before the edit) end before the next test restarts the stack.
    const end = Date.now() + 120_000;
    while (Date.now() < end && Object.keys((await request(url).get('/api/active_tasks').set(auth).expect(200)).body).length) await new Promise((r) => setTimeout(r, 500));
    expect((await request(url).get('/api/active_tasks').set(auth).expect(200)).body).toEqual({});
  });

  it('When the admin edits it and the install restarts, then the edit stays and no second one appears; when deleted, it stays deleted', async () => {
    const [cleaning] = await schedules();
    await request(url).put(`/api/cron/${cleaning!.id}`).set(auth).send({ name: 'Cleaning', kind: 'cleaning', cron: '0 4 * * 1', timezone: 'UTC' }).expect(200);
    await restart();
    expect(await schedules()).toEqual([expect.objectContaining({ id: cleaning!.id, cron: '0 4 * * 1', timezone: 'UTC' })]);
    await request(url).delete(`/api/cron/${cleaning!.id}`).set(auth).expect(200);
    await restart();
    expect(await schedules()).toEqual([]);
  });
});
