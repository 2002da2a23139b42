import { EmbyClient } from './emby';
import { createMediaServerClient, credsProblems, validateCreds } from './factory';
import { JellyfinClient } from './jellyfin';
import { LyrionClient } from './lyrion';
import { NavidromeClient } from './navidrome';
import { PlexClient } from './plex';

describe('validateCreds', () => {
  it.each([
    ['jellyfin', {}, ['url', 'user_id', 'token']],
    ['emby', { url: 'http://h:8096', user_id: 'u' }, ['token']],
    ['navidrome', { url: 'http://h:4533', user: 'a' }, ['password']],
    ['navidrome', { url: 'http://h:4533', api_key: 'k' }, []],
    ['lyrion', { url: 'http://h:9000' }, []],
    ['plex', { url: '  ', token: 't' }, ['url']],
    ['plex', { url: 'ftp://h', token: 't' }, ['url']],
    ['jellyfin', { url: 'not a url', user_id: 'u', token: 't' }, ['url']],
    ['jellyfin', { url: 'https://music.example.org/jellyfin', user_id: 'u', token: 't' }, []],
  ] as const)('When %s creds are %j, then the problem keys are %j', (type, creds, expected) => {
    expect(validateCreds(type, creds as Record<string, string>)).toEqual(expected);
  });

  it('When the url is malformed, then credsProblems says invalid_url rather than missing', () => {
    expect(credsProblems('lyrion', { url: 'h:9000x' })).toEqual([{ key: 'url', problem: 'invalid_url' }]);
    expect(credsProblems('lyrion', {})).toEqual([{ key: 'url', problem: 'missing' }]);
  });
});

describe('createMediaServerClient', () => {
  it.each([
    ['jellyfin', { url: 'http://h/', user_id: 'u', token: 't' }, JellyfinClient],
    ['emby', { url: 'http://h', user_id: 'u', token: 't' }, EmbyClient],
    ['navidrome', { url: 'http://h', user: 'u', password: 'p' }, NavidromeClient],
    ['lyrion', { url: 'http://h' }, LyrionClient],
    ['plex', { url: 'http://h', token: 't' }, PlexClient],
  ] as const)('When the type is %s, then the matching client is built', (type, creds, cls) => {
    const c = createMediaServerClient({ type, creds }, { timeoutMs: 1000, retries: 0 });
    expect(c).toBeInstanceOf(cls);
    expect(c.type).toBe(type);
  });

  it('When credentials are incomplete or the type unknown, then a TypeError names the problem without values', () => {
    expect(() => createMediaServerClient({ type: 'plex', creds: { url: 'http://h' } })).toThrow(/token missing/);
    expect(() => createMediaServerClient({ type: 'mpd' as never, creds: {} })).toThrow(TypeError);
  });
});
