import { authRoutes, buildPath, buildQuery, featureRoutes, serverRoutes, taskRoutes } from '@polyphony/contracts';
import { buildRequest, errorMessage } from './request';
import { resolveSelected, serverParamFor } from './selection';
import { parseHashRoute } from './route';
import { fmtBytes, fmtDistance, parseLabelScores, similarHref, trackLabel } from './track-format';
import { clamp, fmtDuration, pct } from './numbers';
import { credentialFields } from './server-kinds';
import { settingInputKind, settingsChanges } from './settings-logic';
import { isActiveState, liveTasks, taskServerRows } from './task-logic';
import { describeSteering, withSteering } from './steering-logic';

describe('web UI request building', () => {
  it('When a route path has :params, then they are filled URI-encoded from the route definition; a missing one throws', () => {
    expect(buildPath(serverRoutes.sweep.path, { id: 'a b/c' })).toBe('/api/servers/a%20b%2Fc/sweep');
    expect(() => buildPath(serverRoutes.sweep.path, {})).toThrow(/Missing path parameter "id"/);
  });

  it('When a query has blanks, nulls and arrays, then blanks are left out and arrays repeat the key', () => {
    expect(buildQuery({ a: 1, b: '', c: null, d: undefined, e: ['x', 'y'], f: false })).toBe('?a=1&e=x&e=y&f=false');
    expect(buildQuery({ b: '' })).toBe('');
  });

  it('When the selected server is not the default, then GET calls carry it in the query and POST calls in the JSON body', () => {
    const get = buildRequest(featureRoutes.similarTracks, { query: { item_id: '7', n: 5 } }, 'srv-2');
    expect(get).toEqual({ method: 'GET', url: '/api/similar_tracks?item_id=7&n=5&server=srv-2', body: undefined });
    const post = buildRequest(featureRoutes.alchemy, { body: { items: [{ id: '1', op: 'ADD' }] } }, 'srv-2');
    expect(post.method).toBe('POST');
    expect(post.body).toEqual({ items: [{ id: '1', op: 'ADD' }], server: 'srv-2' });
    expect(buildRequest(featureRoutes.similarTracks, { query: { item_id: '7' } }).url).toBe('/api/similar_tracks?item_id=7');
  });

  it('When a POST has no body, then {} is sent (the API takes JSON only); a DELETE with a body keeps it', () => {
    expect(buildRequest(taskRoutes.cancel, { params: { id: 't1' } }).body).toEqual({});
    const del = buildRequest(authRoutes.deleteUser, { params: { id: 'u1' }, body: { current_password: 'pw' } });
    expect(del).toEqual({ method: 'DELETE', url: '/api/users/u1', body: { current_password: 'pw' } });
    expect(buildRequest(serverRoutes.remove, { params: { id: 's1' } }, 'x').url).toBe('/api/servers/s1?server=x');
  });

  it("When the API answers an error body, then its message is shown; otherwise the HTTP status is named", () => {
    expect(errorMessage(409, { error: 'An analysis is already running', code: 'busy', request_id: 'r' })).toEqual({ message: 'An analysis is already running', code: 'busy' });
    expect(errorMessage(502, null)).toEqual({ message: 'Request failed (HTTP 502)' });
    expect(errorMessage(500, { error: '' }).message).toBe('Request failed (HTTP 500)');
  });
});

describe('web UI server selection and routes', () => {
  const servers = [{ id: 'a' }, { id: 'b' }];
  it('When the remembered server exists, then it is selected; a vanished or absent one falls back to the default', () => {
    expect(resolveSelected('b', servers, 'a')).toBe('b');
    expect(resolveSelected('gone', servers, 'a')).toBe('a');
    expect(resolveSelected(null, servers, 'a')).toBe('a');
    expect(resolveSelected(null, [], null)).toBeNull();
  });
  it('When the default is selected, then no server parameter is sent', () => {
    expect(serverParamFor('a', 'a')).toBeUndefined();
    expect(serverParamFor('b', 'a')).toBe('b');
    expect(serverParamFor(null, 'a')).toBeUndefined();
  });
  it('When a hash route has parameters, then the page key and the parameters are separated', () => {
    expect(parseHashRoute('#/similar?item_id=12&label=A%20B')).toMatchObject({ key: 'similar' });
    expect(parseHashRoute('#/similar?item_id=12&label=A%20B').params.get('label')).toBe('A B');
    expect(parseHashRoute('').key).toBe('');
    expect(parseHashRoute('#/').key).toBe('');
    expect(parseHashRoute('#/setup/').key).toBe('setup');
  });
});

describe('web UI formatting', () => {
  it('When a track has missing tags, then the label uses placeholders; its similar link carries id and label', () => {
    expect(trackLabel({ item_id: '1', title: null, author: 'X' })).toBe('(untitled) — X');
    const href = similarHref({ item_id: 'a&b', title: 'T', author: 'A' });
    expect(parseHashRoute(href).params.get('item_id')).toBe('a&b');
    expect(parseHashRoute(href).key).toBe('similar');
  });
  it('When numbers are formatted, then percentages, durations, bytes and distances read right', () => {
    expect(pct(1, 3)).toBe('33%');
    expect(pct(5, 0)).toBe('0%');
    expect(fmtDuration(3725)).toBe('1 h 02 min');
    expect(fmtDuration(65)).toBe('1 min 05 s');
    expect(fmtDuration(undefined)).toBe('—');
    expect(fmtBytes(1536)).toBe('1.5 kB');
    expect(fmtBytes(10)).toBe('10 B');
    expect(fmtDistance(0.123456)).toBe('0.1235');
    expect(fmtDistance(null)).toBe('—');
    expect(clamp(NaN, 0, 1)).toBe(0);
    expect(clamp(5, 0, 1)).toBe(1);
  });
  it('When a mood vector string is parsed, then pairs come best first and junk is skipped', () => {
    expect(parseLabelScores('rock:0.2,happy:0.7,bad,x:NaN')).toEqual([
      { label: 'happy', score: 0.7 },
      { label: 'rock', score: 0.2 },
    ]);
    expect(parseLabelScores(null)).toEqual([]);
  });
});

describe('web UI setup and settings logic', () => {
  it('When a kind is chosen, then its fields follow the contracts credential sets (secrets and optional keys marked)', () => {
    expect(credentialFields('jellyfin').map((f) => [f.key, f.secret, f.optional])).toEqual([
      ['url', false, false],
      ['user_id', false, false],
      ['token', true, false],
    ]);
    const nav = credentialFields('navidrome');
    expect(nav.map((f) => f.key)).toEqual(['url', 'user', 'password', 'api_key']);
    expect(nav.filter((f) => f.optional).map((f) => f.key)).toEqual(['user', 'password', 'api_key']);
    expect(credentialFields('plex').find((f) => f.key === 'token')?.label).toBe('Plex token');
    expect(credentialFields('lyrion').map((f) => f.label)).toEqual(['Server URL', 'Username (optional)', 'Password (optional)']);
  });
  it('When settings are edited, then only changes are sent; a blank secret keeps the stored one; numbers stay numbers; blank text resets', () => {
    const shown = [
      { key: 'AI_MODEL_PROVIDER', value: 'NONE', secret: false },
      { key: 'OPENAI_API_KEY', value: '__unchanged__', secret: true },
      { key: 'AI_REQUEST_TIMEOUT_SECONDS', value: 60, secret: false },
      { key: 'CLEANING_CATALOGUE', value: false, secret: false },
      { key: 'OPENAI_MODEL_NAME', value: 'gpt', secret: false },
    ];
    const edited = new Map<string, string | boolean>([
      ['AI_MODEL_PROVIDER', 'OPENAI'],
      ['OPENAI_API_KEY', ''],
      ['AI_REQUEST_TIMEOUT_SECONDS', '30'],
      ['CLEANING_CATALOGUE', false],
      ['OPENAI_MODEL_NAME', ''],
    ]);
    expect(settingsChanges(shown, edited)).toEqual({ AI_MODEL_PROVIDER: 'OPENAI', AI_REQUEST_TIMEOUT_SECONDS: 30, OPENAI_MODEL_NAME: null });
    edited.set('OPENAI_API_KEY', 'sk-new');
    expect(settingsChanges(shown, edited).OPENAI_API_KEY).toBe('sk-new');
  });
  it('When a setting is rendered, then its control kind comes from its contract schema', () => {
    expect(settingInputKind({ key: 'AI_MODEL_PROVIDER', value: 'NONE', secret: false })).toEqual({ type: 'enum', options: ['NONE', 'OPENAI', 'OLLAMA', 'GEMINI', 'MISTRAL'] });
    expect(settingInputKind({ key: 'CLEANING_CATALOGUE', value: false, secret: false })).toEqual({ type: 'boolean' });
    expect(settingInputKind({ key: 'AI_REQUEST_TIMEOUT_SECONDS', value: 60, secret: false })).toEqual({ type: 'number' });
    expect(settingInputKind({ key: 'UNKNOWN', value: 'x', secret: false })).toEqual({ type: 'text' });
  });
  it('When the dashboard lists tasks, then every running one appears once, oldest start first, finished ones not', () => {
    const live = liveTasks([
      { task_id: 'c', task_type: 'clustering', state: 'RUNNING', started_at: '2026-01-01T10:05:00Z', progress: 40 },
      { task_id: 'a', task_type: 'main_analysis', state: 'RUNNING', started_at: '2026-01-01T10:00:00Z', progress: 10 },
      { task_id: 'x', task_type: 'cleaning', state: 'SUCCESS', started_at: '2026-01-01T09:00:00Z' },
      { task_id: 'a', task_type: 'main_analysis', state: 'RUNNING', started_at: '2026-01-01T10:00:00Z' },
      { task_id: 'n', task_type: 'index_build', state: 'NEW', created_at: '2026-01-01T10:06:00Z' },
      { task_id: 'p', task_type: 'sweep', status: 'PROGRESS', started_at: '2026-01-01T10:01:00Z' },
      {},
      null,
    ]);
    expect(live.map((t) => t.task_id)).toEqual(['a', 'p', 'c', 'n']);
    expect(liveTasks([{}])).toEqual([]);
  });
  it('When a task is read, then running states are recognised and per-server counts become rows with names', () => {
    expect(isActiveState('RUNNING')).toBe(true);
    expect(isActiveState('PROGRESS')).toBe(true);
    expect(isActiveState('SUCCESS')).toBe(false);
    expect(isActiveState(undefined)).toBe(false);
    const rows = taskServerRows({ details: { servers: [{ serverId: 's1', seen: 3, analyzed: 2, status: 'done' }, { serverId: 's2', serverName: 'Two', error: 'unreachable', status: 'failed' }] } }, new Map([['s1', 'One']]));
    expect(rows).toEqual([
      ['One', 'done', '3', '0', '0', '2', '0'],
      ['Two', 'failed: unreachable', '0', '0', '0', '0', '0'],
    ]);
  });
});

describe('steering controls', () => {
  it('When concepts are added, then one of the same name replaces the earlier weight, at most 8 are kept, and the list reads as more/less', () => {
    let items = withSteering([], { concept: 'piano', weight: 0.5 });
    items = withSteering(items, { concept: 'drums', weight: -1 });
    items = withSteering(items, { concept: 'piano', weight: 0.8 });
    expect(items).toEqual([{ concept: 'drums', weight: -1 }, { concept: 'piano', weight: 0.8 }]);
    expect(describeSteering(items)).toBe('less drums (1), more piano (0.8)');
    const full = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].reduce((acc, concept) => withSteering(acc, { concept, weight: 0.1 }), [] as ReturnType<typeof withSteering>);
    expect(full).toHaveLength(8);
    expect(withSteering(full, { concept: 'z', weight: 1 })).toEqual(full);
  });
});
