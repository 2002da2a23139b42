import { NotFoundError } from './errors';
import { JellyfinClient } from './jellyfin';
import { sendJson, stubsClosedAfterEach } from './__tests__/stub-server';

/** "Add to queue" on Jellyfin (issue 34): the user's controllable sessions, then Sessions/{id}/Playing. */
describe('JellyfinClient.addToQueue', () => {
  const startStub = stubsClosedAfterEach();
  const UID = '5f0c1e2d3c4b5a69788796a5b4c3d2e1';
  const client = (url: string) => new JellyfinClient({ type: 'jellyfin', creds: { url, user_id: UID, token: 'tok' } }, { retries: 0 });
  const sessions = [
    { Id: 'old', LastActivityDate: '2026-12-01T10:00:00.0000000Z', SupportsRemoteControl: true },
    { Id: 'tv', LastActivityDate: '2026-12-04T08:00:00.0000000Z', SupportsRemoteControl: true },
    { Id: 'newest-but-not-remote', LastActivityDate: '2026-12-04T09:00:00.0000000Z', SupportsRemoteControl: false },
  ];

  it('When the user has controllable sessions, then the songs play now on the most recently active one (or the one asked for)', async () => {
    const stub = await startStub((req, res) => (req.method === 'GET' && req.path === '/Sessions' ? sendJson(res, sessions) : sendJson(res, '', 204)));
    expect(await client(stub.url).addToQueue(['a', 'b'])).toEqual({ method: 'sessions_playing', queueId: 'tv' });
    const play = stub.requests.find((r) => r.method === 'POST')!;
    expect(play.path).toBe('/Sessions/tv/Playing');
    expect(Object.fromEntries(play.query)).toEqual({ ItemIds: 'a,b', PlayCommand: 'PlayNow' });
    expect(stub.requests[0]!.query.get('ControllableByUserId')).toBe(UID);
    expect((await client(stub.url).addToQueue(['c'], { sessionId: 'old' })).queueId).toBe('old');
  });

  it('When the user has no controllable session (or not the one asked for), then NotFoundError and nothing is sent', async () => {
    const stub = await startStub((req, res) => sendJson(res, req.path === '/Sessions' ? [sessions[2]] : ''));
    await expect(client(stub.url).addToQueue(['a'])).rejects.toBeInstanceOf(NotFoundError);
    await expect(client(stub.url).addToQueue(['a'], { sessionId: 'tv' })).rejects.toBeInstanceOf(NotFoundError);
    expect(stub.requests.every((r) => r.method === 'GET')).toBe(true);
  });
});
