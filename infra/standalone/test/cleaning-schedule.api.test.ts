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

  const schedules = async () => (await request(url).get('/api/cron').set(auth).expect(200)).body.schedules as Array<{ id: string; name: string; kind: string; cron: string; timezone: string; enabled: boolean }>;
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
    const settings = (await request(url).get('/api/config/settings').set(auth).expect(200)).body.settings as Array<{ key: string }>;
    expect(settings.map((s) => s.key)).not.toContain('CLEANING_SCHEDULE_HOURS');
    const refused = await request(url).put('/api/config').set(auth).send({ CLEANING_SCHEDULE_HOURS: 12 }).expect(400);
    expect(JSON.stringify(refused.body)).toMatch(/CLEANING_SCHEDULE_HOURS/);
    const n = await db.count(`SELECT count(*)::int AS n FROM registry.app_config WHERE key = 'CLEANING_SCHEDULE_HOURS'`);
    expect(n).toBe(0);
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
