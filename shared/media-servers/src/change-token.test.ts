import { JellyfinClient } from './jellyfin';
import { LyrionClient } from './lyrion';
import { NavidromeClient } from './navidrome';
import { PlexClient } from './plex';
import { sendJson, stubsClosedAfterEach } from './__tests__/stub-server';

/** libraryChangeToken per kind (change detection, issue 35): one cheap call, a token that moves with the library. */
describe('libraryChangeToken', () => {
  const startStub = stubsClosedAfterEach();

  it('When a Subsonic library was not rescanned, then getIndexes is asked past the previous lastModified and the token stays', async () => {
    let lastModified = 1_700_000_000_000;
    const stub = await startStub((req, res) => {
      const since = Number(req.query.get('ifModifiedSince') ?? 0);
      // Like Subsonic servers: the artist index only when the library changed after ifModifiedSince.
      const indexes = lastModified < since ? { lastModified, ignoredArticles: 'The' } : { lastModified, ignoredArticles: 'The', index: [{ name: 'A', artist: [{ id: '1', name: 'A' }] }] };
      sendJson(res, { 'subsonic-response': { status: 'ok', version: '1.16.1', indexes } });
    });
    const client = new NavidromeClient({ type: 'navidrome', creds: { url: stub.url, user: 'u', password: 'p' } }, { retries: 0 });
    const first = await client.libraryChangeToken();
    expect(first).toBe(String(lastModified));
    expect(stub.requests[0]?.path).toBe('/rest/getIndexes.view');
    expect(stub.requests[0]?.query.has('ifModifiedSince')).toBe(false);
    expect(await client.libraryChangeToken(first)).toBe(first);
    expect(stub.requests[1]?.query.get('ifModifiedSince')).toBe(String(lastModified + 1));
    lastModified += 60_000;
    expect(await client.libraryChangeToken(first)).toBe(String(lastModified));
  });

  it('When a Jellyfin library gains or loses a song, then the token (count and newest id per library) changes', async () => {
    let items = [{ Id: 'b' }, { Id: 'a' }];
    const stub = await startStub((req, res) => sendJson(res, { Items: items.slice(0, Number(req.query.get('Limit'))), TotalRecordCount: items.length }));
    const client = new JellyfinClient({ type: 'jellyfin', creds: { url: stub.url, user_id: 'u1', token: 't' }, musicLibraries: ['lib1'] }, { retries: 0 });
    const first = await client.libraryChangeToken();
    expect(first).toBe('2:b');
    const q = stub.requests[0]!.query;
    expect([q.get('IncludeItemTypes'), q.get('SortBy'), q.get('SortOrder'), q.get('Limit'), q.get('ParentId')]).toEqual(['Audio', 'DateCreated', 'Descending', '1', 'lib1']);
    items = [{ Id: 'c' }, ...items];
    expect(await client.libraryChangeToken()).toBe('3:c');
    items = [items[0]!, items[2]!];
    expect(await client.libraryChangeToken()).toBe('2:c');
  });

  it('When Plex rescans a music section, then the token follows its updatedAt and scannedAt (other sections and kinds ignored)', async () => {
    let scannedAt = 100;
    const stub = await startStub((_req, res) =>
      sendJson(res, { MediaContainer: { Directory: [{ key: '2', type: 'artist', updatedAt: 50, scannedAt }, { key: '3', type: 'movie', updatedAt: 9, scannedAt: 9 }, { key: '4', type: 'artist', updatedAt: 7, scannedAt: 7 }] } }),
    );
    const client = new PlexClient({ type: 'plex', creds: { url: stub.url, token: 'tok' }, musicLibraries: ['2'] }, { retries: 0, plexClientId: 'cid' });
    expect(await client.libraryChangeToken()).toBe('2:50:100');
    expect(stub.requests[0]?.path).toBe('/library/sections');
    scannedAt = 160;
    expect(await client.libraryChangeToken()).toBe('2:50:160');
  });

  it('When Lyrion is rescanning and then done, then the token names the scan and the new song count', async () => {
    let status: Record<string, unknown> = { lastscan: '1700000000', 'info total songs': 10, rescan: 1 };
    const stub = await startStub((req, res) => {
      const body = JSON.parse(req.body) as { id: number; params: unknown };
      sendJson(res, { id: body.id, method: 'slim.request', params: body.params, result: status });
    });
    const client = new LyrionClient({ type: 'lyrion', creds: { url: stub.url } }, { retries: 0 });
    expect(await client.libraryChangeToken()).toBe('1700000000:10:scanning');
    expect(JSON.parse(stub.requests[0]!.body).params[1]).toEqual(['serverstatus', 0, 0]);
    status = { lastscan: '1700000300', 'info total songs': 11 };
    expect(await client.libraryChangeToken()).toBe('1700000300:11');
  });
});
