import { configDefaultsOf } from './probes.routes';

describe('GET /api/config/defaults answer (configDefaultsOf)', () => {
  it('When the server is Subsonic or Lyrion, then default_user is its user name; Jellyfin and Emby give default_user_id; no secret is ever answered', () => {
    expect(configDefaultsOf({ type: 'navidrome', creds: { url: 'http://nd', user: 'alice', password: 'pw-secret' } })).toEqual({ server_type: 'navidrome', default_user: 'alice', default_user_id: null });
    expect(configDefaultsOf({ type: 'lyrion', creds: { url: 'http://lms', user: 'bob', password: 'pw-secret' } })).toEqual({ server_type: 'lyrion', default_user: 'bob', default_user_id: null });
    expect(configDefaultsOf({ type: 'jellyfin', creds: { url: 'http://jf', user_id: 'f00d', token: 'tok-secret' } })).toEqual({ server_type: 'jellyfin', default_user: null, default_user_id: 'f00d' });
    expect(configDefaultsOf({ type: 'emby', creds: { url: 'http://emby', user_id: 'e1', token: 'tok-secret' } })).toEqual({ server_type: 'emby', default_user: null, default_user_id: 'e1' });
    for (const creds of [{ url: 'http://nd', api_key: 'key-secret' }, { url: 'http://nd', user: '  ' }]) {
      expect(configDefaultsOf({ type: 'navidrome', creds })).toEqual({ server_type: 'navidrome', default_user: null, default_user_id: null });
    }
    expect(configDefaultsOf({ type: 'plex', creds: { url: 'http://plex', token: 'tok-secret', user: 'x' } })).toEqual({ server_type: 'plex', default_user: null, default_user_id: null });
    expect(configDefaultsOf(undefined)).toEqual({ server_type: null, default_user: null, default_user_id: null });
  });
});
