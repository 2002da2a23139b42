import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { RoutingKeys, TaskCancelRequestedEvent, type TaskUpdatedEvent } from '@polyphony/contracts';
import { createFakePlexTv, createFakeSubsonic, syntheticCatalogue, type StartedFake, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { ADMIN, API_TOKEN, startTestStack } from './helpers';

/**
 * The web UI in a real browser (Debian chromium driven by playwright-core), against the whole
 * product and fake media servers, used the way a person would: log in, add two Navidrome servers
 * from the Setup page (test, then save), see the default, the sidebar Music server dropdown and
 * the dashboard's Music Server Status, pick the second server and see feature calls carry
 * `server=`, link Plex by PIN, edit with a blank password (secret kept), follow and cancel a
 * running task, delete the second server, log out, and finally the first-run admin creation.
 * Screenshots land in artifacts/ui-screenshots/ (kept by CI as an artifact).
 */
/** Screenshots of every step: a CI artifact folder (gitignored). */
const SCREENSHOTS = path.resolve(__dirname, '../../../artifacts/ui-screenshots');

describe('web UI (chromium, full stack)', () => {
  jest.setTimeout(90_000);
  const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  const NAV1 = { user: 'nav-one', password: 'first-secret-pw' };
  const NAV2 = { user: 'nav-two', password: 'second-secret-pw' };
  const fake1 = createFakeSubsonic({ catalogue: syntheticCatalogue(20), ...NAV1 });
  const fake2 = createFakeSubsonic({ catalogue: syntheticCatalogue(20), ...NAV2 });
  const plexTv = createFakePlexTv({ accountToken: 'plex-linked-token-42' });
  const started: StartedFake[] = [];
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const scriptErrors: string[] = [];

  const sql = (text: string, params: unknown[] = []) => db.query(text, params);
  const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const servers = async () => (await request(url).get('/api/servers').set(auth).expect(200)).body as { servers: Array<{ id: string; name: string; is_default: boolean }>; default_id: string };

  beforeAll(async () => {
    for (const f of [fake1, fake2, plexTv]) started.push(await f.start());
    ({ stack, db, url } = await startTestStack({ PLEX_TV_URL: started[2]!.url }));
    mkdirSync(SCREENSHOTS, { recursive: true });
    profile = mkdtempSync(path.join(os.tmpdir(), 'ui-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 860 } });
    context.setDefaultTimeout(10_000);
    page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => void d.accept());
    context.on('weberror', (e) => scriptErrors.push(e.error().message));
    // A Content-Security-Policy violation (inline script or style, foreign origin) shows up as a console error.
    context.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) scriptErrors.push(m.text());
    });
  });
  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await stack?.stop();
    await db?.drop();
    for (const s of started) await s.close();
  });

  /** Fills the add/edit form's Navidrome fields. */
  async function fillNavidrome(name: string, serverUrl: string, creds: { user: string; password: string }) {
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Type').selectOption('navidrome');
    await page.getByLabel('Server URL').fill(serverUrl);
    await page.getByLabel('Username').fill(creds.user);
    await page.getByLabel('Password').fill(creds.password);
  }

  it('When the root is opened without a session, then it answers 200 and the page sends the visitor to the login form; a wrong password shows the error', async () => {
    await request(url).get('/').expect(200).expect('content-type', /html/);
    await page.goto(url + '/');
    await page.waitForURL('**/login');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid username or password' }).waitFor();
    await shot('login-error');
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(url + '/');
    await page.getByRole('heading', { name: /Dashboard/ }).waitFor();
    expect(await page.locator('h1 .tag').textContent()).toBe('CATALOGUE');
    expect(await page.locator('#who').textContent()).toContain(ADMIN.username);
  });

  it('When a Navidrome server is added from Setup (wrong password, test, then save), then it is listed as the default', async () => {
    await nav('Setup').click();
    await page.getByRole('heading', { name: 'Music Servers' }).waitFor();
    await page.getByRole('button', { name: 'Add server' }).click();
    await fillNavidrome('Home Navidrome', started[0]!.url, { ...NAV1, password: 'wrong-password' });
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByText(/Credentials rejected/).waitFor();
    await page.getByLabel('Password').fill(NAV1.password);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByText(/Connection OK.*sample tracks/).waitFor();
    expect(await page.locator('.libs input[type=checkbox]').count()).toBeGreaterThan(0);
    await shot('setup-form');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const row = page.locator('table.servers tbody tr', { hasText: 'Home Navidrome' });
    await row.waitFor();
    expect(await row.locator('.badge').textContent()).toBe('default');
    expect(await page.getByRole('button', { name: 'Delete Home Navidrome' }).isDisabled()).toBe(true);
    expect(await page.locator('#server-picker').isHidden()).toBe(true);
    const { servers: list } = await servers();
    expect(list.map((s) => [s.name, s.is_default])).toEqual([['Home Navidrome', true]]);
  });

  it('When a second server is added, then the Music server dropdown and the dashboard Music Server Status appear', async () => {
    await page.getByRole('button', { name: 'Add server' }).click();
    await fillNavidrome('Second Navidrome', started[1]!.url, NAV2);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByText(/Connection OK/).waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.locator('table.servers tbody tr', { hasText: 'Second Navidrome' }).waitFor();
    await page.getByRole('combobox', { name: 'Music server' }).waitFor({ state: 'visible' });
    expect(await page.locator('#server option').allTextContents()).toEqual(['Home Navidrome (default)', 'Second Navidrome']);
    await shot('setup-two-servers');
    await nav('Dashboard').click();
    await page.getByRole('heading', { name: 'Music Server Status' }).waitFor();
    const rows = page.locator('section', { has: page.getByRole('heading', { name: 'Music Server Status' }) }).locator('table tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.first().textContent()).toContain('Home Navidrome');
    await shot('dashboard');
  });

  it('When an hour passes on the dashboard, then the Music Server Status is fetched again', async () => {
    const other = await context.newPage();
    try {
      await other.clock.install();
      await other.goto(url + '/#/');
      await other.getByRole('heading', { name: 'Music Server Status' }).waitFor();
      let fetches = 0;
      other.on('request', (r) => {
        if (new URL(r.url()).pathname === '/api/servers') fetches++;
      });
      await other.clock.runFor('58:00');
      await other.waitForTimeout(300);
      expect(fetches).toBe(0);
      const refetch = other.waitForRequest((r) => new URL(r.url()).pathname === '/api/servers', { timeout: 5000 });
      await other.clock.runFor('03:00');
      await refetch;
    } finally {
      await other.close();
    }
  });

  it('When the second server is chosen, then feature calls carry server= and the choice survives a reload; the default sends none', async () => {
    const second = (await servers()).servers.find((s) => s.name === 'Second Navidrome')!;
    await page.getByRole('combobox', { name: 'Music server' }).selectOption(second.id);
    await nav('Similar songs').click();
    await page.getByRole('heading', { name: /Similar songs/ }).waitFor();
    expect(await page.locator('h1 .tag').textContent()).toBe('PER SERVER');
    const search = async () => {
      const req = page.waitForRequest((r) => r.url().includes('/api/search_tracks'), { timeout: 5000 });
      req.catch(() => undefined); // awaited below; keeps a failing step from leaving it unhandled
      await page.getByRole('searchbox', { name: 'Seed song' }).fill('song');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      return new URL((await req).url());
    };
    expect((await search()).searchParams.get('server')).toBe(second.id);
    await shot('similar');
    await page.reload();
    await page.getByRole('heading', { name: /Similar songs/ }).waitFor();
    expect(await page.getByRole('combobox', { name: 'Music server' }).inputValue()).toBe(second.id);
    expect((await search()).searchParams.get('server')).toBe(second.id);
    const home = (await servers()).default_id;
    await page.getByRole('combobox', { name: 'Music server' }).selectOption(home);
    await page.getByRole('heading', { name: /Similar songs/ }).waitFor();
    expect((await search()).searchParams.has('server')).toBe(false);
    await page.getByRole('combobox', { name: 'Music server' }).selectOption(second.id);
  });

  it('When the other pages are opened, then each shows its tag; Users creates an account only with the current password', async () => {
    await nav('Song path').click();
    await page.getByRole('heading', { name: /Song path/ }).waitFor();
    expect(await page.locator('h1 .tag').textContent()).toBe('PER SERVER');
    await page.getByRole('searchbox', { name: 'Start song' }).waitFor();
    await nav('Analysis').click();
    await page.getByRole('heading', { name: /Analysis/ }).first().waitFor();
    expect(await page.locator('h1 .tag').textContent()).toBe('CATALOGUE');
    await page.getByRole('button', { name: 'Start analysis' }).waitFor();
    await shot('analysis');
    await nav('Users').click();
    await page.getByRole('heading', { name: 'Accounts' }).waitFor();
    expect(await page.locator('h1 .tag').textContent()).toBe('CATALOGUE');
    await page.getByLabel('Username', { exact: true }).fill('listener');
    await page.getByLabel('Password', { exact: true }).fill('listener-pw-1');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('alert').filter({ hasText: /current_password/ }).waitFor();
    await page.getByLabel('Your current password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.locator('tbody tr', { hasText: 'listener' }).waitFor();
    await shot('users');
    const users = (await request(url).get('/api/users').set(auth).expect(200)).body.users as Array<{ username: string; role: string }>;
    expect(users.find((u) => u.username === 'listener')?.role).toBe('user');
  });

  it('When Plex is chosen in the add form and the PIN is approved, then the token field is filled', async () => {
    await nav('Setup').click();
    await page.getByRole('button', { name: 'Add server' }).click();
    await page.getByLabel('Type').selectOption('plex');
    const pinResponse = page.waitForResponse((r) => r.url().endsWith('/api/plex/pin') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in with Plex' }).click();
    const pin = (await (await pinResponse).json()) as { id: string; code: string };
    await page.getByText(pin.code).waitFor();
    plexTv.approve(Number(pin.id));
    await page.getByText(/Signed in to Plex/).waitFor({ timeout: 8000 });
    expect(await page.getByLabel('Plex token').inputValue()).toBe('plex-linked-token-42');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByLabel('Plex token').count()).toBe(0);
  });

  it('When a server is edited with the password left blank, then the stored secret is kept and no secret reaches the page', async () => {
    const second = (await servers()).servers.find((s) => s.name === 'Second Navidrome')!;
    await page.getByRole('button', { name: 'Edit Second Navidrome' }).click();
    const pw = page.getByLabel('Password');
    expect(await pw.inputValue()).toBe('');
    expect(await pw.getAttribute('placeholder')).toBe('unchanged');
    expect(await page.getByLabel('Username').inputValue()).toBe(NAV2.user);
    const html = await page.content();
    for (const secret of [NAV1.password, NAV2.password, '__unchanged__']) expect(html).not.toContain(secret);
    await shot('setup-edit');
    await page.getByRole('button', { name: 'Test connection' }).click(); // blank secret: the stored one is used
    await page.getByText(/Connection OK/).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Second Renamed');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.locator('table.servers tbody tr', { hasText: 'Second Renamed' }).waitFor();
    const [row] = await sql(`SELECT name, creds FROM registry.music_servers WHERE id = $1`, [second.id]);
    expect(row).toEqual({ name: 'Second Renamed', creds: { url: started[1]!.url, user: NAV2.user, password: NAV2.password } });
  });

  it('When tasks run, then the task bar shows one with a one-line status, the dashboard shows each with a progress bar, and Cancel ends them', async () => {
    const taskId = 'ui-test-sweep-1';
    const event: TaskUpdatedEvent = { taskId, type: 'sweep', owner: 'catalogue', state: 'RUNNING', progress: 40, message: 'Matching Second Renamed: 8 of 20', servers: [], log: [], details: {}, seq: 1 };
    // These tasks have no run in their owners' tables: the test plays their owner, which ends a run on a
    // cancel request and sends its REVOKED snapshot (the registry never writes a task's state itself).
    await stack.bus.consume({
      queue: 'ui-test.task-cancel',
      bindings: [RoutingKeys.taskCancelRequested],
      schema: TaskCancelRequestedEvent,
      handler: async (e) => {
        if (e.taskId.startsWith('ui-test-')) await stack.bus.publish(RoutingKeys.taskUpdated, { ...event, taskId: e.taskId, type: e.type, owner: e.type === 'clustering' ? 'playlist' : 'catalogue', state: 'REVOKED', message: 'Cancelled; work done so far is kept', seq: 2 } satisfies TaskUpdatedEvent);
      },
    });
    await stack.bus.publish(RoutingKeys.taskUpdated, event);
    for (let i = 0; i < 50 && !(await request(url).get('/api/active_tasks').set(auth)).body.task_id; i++) await new Promise((r) => setTimeout(r, 100));
    await page.reload();
    const bar = page.locator('#taskbar');
    await bar.waitFor({ state: 'visible' });
    expect(await bar.textContent()).toContain('Sweep: 40% · Matching Second Renamed: 8 of 20');
    expect(await bar.locator('progress').getAttribute('value')).toBe('40');
    await shot('task-running');
    // A second live task: the dashboard shows every running task with its own progress bar.
    const second: TaskUpdatedEvent = { ...event, taskId: 'ui-test-clustering-1', type: 'clustering', owner: 'playlist', progress: 70, message: 'Run 700 of 1000' };
    await stack.bus.publish(RoutingKeys.taskUpdated, second);
    for (let i = 0; i < 50 && (await request(url).get(`/api/status/${second.taskId}`).set(auth)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    await nav('Dashboard').click();
    const live = page.getByRole('region', { name: 'Running tasks' });
    await live.locator(`li[data-task-id="${second.taskId}"]`).waitFor();
    expect(await live.locator(`li[data-task-id="${taskId}"] progress`).getAttribute('value')).toBe('40');
    expect(await live.locator(`li[data-task-id="${second.taskId}"] progress`).getAttribute('value')).toBe('70');
    expect(await live.locator(`li[data-task-id="${second.taskId}"]`).textContent()).toContain('clustering: 70% · Run 700 of 1000');
    await shot('dashboard-live-tasks');
    await request(url).post(`/api/cancel/${second.taskId}`).set(auth).expect(200);
    await bar.getByText(/Sweep: 40%/).waitFor();
    await bar.getByRole('button', { name: 'Cancel' }).click();
    await bar.waitFor({ state: 'hidden' });
    const status = await request(url).get(`/api/status/${taskId}`).set(auth).expect(200);
    expect(status.body.state).toBe('REVOKED');
    await nav('Setup').click();
    await page.locator('table.servers tbody tr').first().waitFor();
  });

  it('When the non-default server is deleted, then it leaves the list and the dropdown goes away', async () => {
    await page.getByRole('button', { name: 'Delete Second Renamed' }).click();
    await page.locator('table.servers tbody tr', { hasText: 'Second Renamed' }).waitFor({ state: 'detached' });
    await page.locator('#server-picker').waitFor({ state: 'hidden' });
    const { servers: list } = await servers();
    expect(list.map((s) => s.name)).toEqual(['Home Navidrome']);
  });

  it('When the user logs out, then the session is gone; a plain user then sees only the user pages', async () => {
    await page.getByRole('button', { name: 'Logout' }).click();
    await page.waitForURL('**/login');
    await page.goto(url + '/');
    await page.waitForURL('**/login');
    // A plain user sees neither Setup nor Users, and cannot start an analysis.
    await page.getByLabel('Username').fill('listener');
    await page.getByLabel('Password').fill('listener-pw-1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: /Dashboard/ }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual(['Dashboard', 'Browse', 'Analysis', 'Similar songs', 'Instant playlist', 'Song path', 'Song alchemy', 'Album creation', 'Artist similarity', 'Sonic fingerprint', 'Recording search', 'Search', 'Lyrics search', 'Map', 'Hyperbolic', 'Users', 'My accounts']);
    await nav('Analysis').click();
    expect(await page.getByRole('button', { name: 'Start analysis' }).isDisabled()).toBe(true);
    await page.goto(url + '/#/setup');
    await page.getByText('This page needs the admin role.').waitFor();
    await page.getByRole('button', { name: 'Logout' }).click();
    await page.waitForURL('**/login');
  });

  it('When no admin exists (first run), then Setup works without login and creates the first admin', async () => {
    await sql(`DELETE FROM auth.service_users WHERE role = 'admin'`);
    await page.goto(url + '/');
    await page.getByRole('heading', { name: 'Create the admin account' }).waitFor();
    expect(await page.locator('table.servers tbody tr').count()).toBe(1);
    expect(await nav('Dashboard').count()).toBe(0);
    await shot('first-run');
    await page.getByLabel('Admin username').fill('second-admin');
    await page.getByLabel('Admin password').fill('second-admin-pw');
    await page.getByLabel('Repeat password').fill('second-admin-pw');
    await page.getByRole('button', { name: 'Create admin' }).click();
    await page.locator('#who', { hasText: 'second-admin (admin)' }).waitFor();
    await nav('Users').waitFor();
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM auth.service_users WHERE role = 'admin' AND username = 'second-admin'`);
    expect(n).toBe(1);
  });

  it('When the whole walk-through is done, then no page threw an uncaught script error', () => {
    expect(scriptErrors).toEqual([]);
  });
});
