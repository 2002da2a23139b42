import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';

const run = promisify(execFile);

/** Folder of the stored previous-release installs, one sub-folder per release (`<date>-<commit>`). */
export const UPGRADE_FIXTURES = join(__dirname, 'fixtures');

/**
 * The session signing key the fixture installs were first started with (JWT_SECRET; stored by the gateway at first
 * start, so the upgraded install, started without it, must use the stored one). A throw-away test value.
 */
export const UPGRADE_JWT_SECRET = 'upgrade-fixture-session-key-0123456789abcdef';

/** What an upgrade fixture's `meta.json` records beside its database dump (`db.dump`, pg_dump custom format). */
export interface UpgradeMeta {
  format: 1;
  /** Commit of the release that wrote the install. */
  release: string;
  created_at: string;
  /** The golden families whose state the dump holds (the anchors family ran before the dump). */
  golden_families_run: string[];
  /** A second user, created by the admin, with its password (a test account of a throw-away install). */
  user: { username: string; password: string; role: 'user' };
  /** That user's session cookie (`polyphony_session=...`) and when it expires (s since the epoch). */
  session: { cookie: string; expires_at: number };
  /** A playlist written to the default server. */
  playlist: { name: string; tracks: number };
  /** A disabled schedule. */
  schedule: { name: string; kind: string; cron: string; enabled: false };
  /** A changed setting. */
  setting: { key: string; value: number };
  /** Applied migrations per schema at dump time. */
  migrations: Record<string, string[]>;
}

/**
 * Gives a golden install the state a user's install has besides its analysed songs (issue 36 "Upgrades that lose
 * nothing"): a second user with a live session, a playlist written to the default server, a disabled schedule and
 * a changed setting. `trackIds` are provider ids on the default server. Returns what it made (for meta.json).
 */
export async function seedUpgradeState(url: string, auth: Record<string, string>, trackIds: string[]): Promise<Omit<UpgradeMeta, 'format' | 'release' | 'created_at' | 'golden_families_run' | 'migrations'>> {
  const user = { username: 'household', password: 'household-pass-1', role: 'user' as const };
  await request(url).post('/api/users').set(auth).send(user).expect(201);
  const login = await request(url).post('/login').send({ username: user.username, password: user.password }).expect(200);
  const raw = [login.headers['set-cookie']].flat().find((c?: string) => c?.startsWith('polyphony_session='));
  if (!raw) throw new Error('upgrade fixture: no session cookie');
  const cookie = raw.split(';')[0]!;
  const token = cookie.slice('polyphony_session='.length);
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { exp: number };
  const playlist = { name: 'Upgrade fixture', tracks: trackIds.length };
  await request(url).post('/api/create_playlist').set(auth).send({ playlist_name: playlist.name, track_ids: trackIds }).expect(201);
  const schedule = { name: 'Weekly clustering (upgrade fixture)', kind: 'clustering', cron: '15 4 * * 2', enabled: false as const };
  await request(url).post('/api/cron').set(auth).send({ ...schedule, timezone: 'UTC', params: {} }).expect(201);
  const setting = { key: 'NUM_CLUSTERS_MAX', value: 17 };
  await request(url).put('/api/config').set(auth).send({ [setting.key]: setting.value }).expect(200);
  return { user, session: { cookie, expires_at: payload.exp }, playlist, schedule, setting };
}

/**
 * The applied migrations of every schema of the database at `sql` (each service's typeorm `migrations` table),
 * in the order they ran.
 */
export async function appliedMigrations(sql: <T = any>(text: string, params?: unknown[]) => Promise<T[]>): Promise<Record<string, string[]>> {
  const tables = await sql<{ schema: string }>(`SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'migrations' ORDER BY table_schema`);
  const out: Record<string, string[]> = {};
  for (const { schema } of tables) out[schema] = (await sql<{ name: string }>(`SELECT name FROM "${schema}".migrations ORDER BY id`)).map((r) => r.name);
  return out;
}

/** Writes `<UPGRADE_FIXTURES>/<folder>/db.dump` (pg_dump custom format, no owners or grants) and `meta.json`. */
export async function writeUpgradeFixture(folder: string, databaseUrl: string, meta: UpgradeMeta): Promise<string> {
  const dir = join(UPGRADE_FIXTURES, folder);
  mkdirSync(dir, { recursive: true });
  await run('pg_dump', ['--format=custom', '--compress=9', '--no-owner', '--no-acl', `--file=${join(dir, 'db.dump')}`, databaseUrl]);
  writeFileSync(join(dir, 'meta.json'), `${JSON.stringify(meta, null, 2)}\n`);
  return dir;
}

/** Restores `<dir>/db.dump` into the (empty) database at `databaseUrl`; throws with pg_restore's message on failure. */
export async function restoreUpgradeFixture(dir: string, databaseUrl: string): Promise<void> {
  await run('pg_restore', ['--no-owner', '--no-acl', '--exit-on-error', `--dbname=${databaseUrl}`, join(dir, 'db.dump')]);
}
