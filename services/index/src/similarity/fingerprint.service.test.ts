import { createLogger } from '@polyphony/platform';
import { FingerprintService, recencyWeight, WEIGHT_BAD_DATE, WEIGHT_NO_DATE } from './fingerprint.service';

const now = Date.UTC(2026, 0, 31);
const logger = createLogger({ service: 'test', level: 'error' });

describe('recencyWeight', () => {
  it.each([
    ['2026-01-31T00:00:00Z', 1],
    ['2026-01-01T00:00:00Z', 0.5],
    ['2025-12-02T00:00:00Z', 0.25],
    ['2027-01-01T00:00:00Z', 1],
  ])('When last played at %s, then the weight is %f (30-day half-life)', (date, w) => {
    expect(recencyWeight(date, now)).toBeCloseTo(w, 9);
  });
  it('When the date is missing or unparsable, then the reference fallbacks apply', () => {
    expect(recencyWeight(undefined, now)).toBe(WEIGHT_NO_DATE);
    expect(recencyWeight('yesterday-ish', now)).toBe(WEIGHT_BAD_DATE);
  });
});

describe('FingerprintService.withOverrides', () => {
  const registry = { getServer: () => Promise.reject(new Error('unused')) };
  const service = (fetchImpl?: typeof fetch) => new FingerprintService(registry, () => { throw new Error('unused'); }, logger, fetchImpl);

  it('When Navidrome credentials are given, then they replace the stored user and password', async () => {
    const conn = await service().withOverrides({ type: 'navidrome', creds: { url: 'http://n', user: 'a', password: 'b', api_key: 'k' } }, { navidrome_user: 'bob', navidrome_password: 'pw' });
    expect(conn.creds).toEqual({ url: 'http://n', user: 'bob', password: 'pw' });
  });

  it('When a Jellyfin user id (with dashes) and token are given, then they are used without a lookup', async () => {
    const fetchImpl = jest.fn();
    const conn = await service(fetchImpl as unknown as typeof fetch).withOverrides(
      { type: 'jellyfin', creds: { url: 'http://j', user_id: 'x', token: 't' } },
      { jellyfin_user_identifier: 'AABBCCDD-0000-1111-2222-333344445555', jellyfin_token: 'tok' },
    );
    expect(conn.creds).toMatchObject({ user_id: 'aabbccdd000011112222333344445555', token: 'tok' });
    expect(fetchImpl).not.toHaveBeenCalled();
  });

  it('When the user list cannot be read, then the stored user is kept', async () => {
    const fetchImpl = jest.fn().mockResolvedValue(new Response('nope', { status: 401 }));
    const conn = await service(fetchImpl as unknown as typeof fetch).withOverrides({ type: 'emby', creds: { url: 'http://e', user_id: 'stored', token: 't' } }, { jellyfin_user_identifier: 'alice' });
    expect(conn.creds.user_id).toBe('stored');
  });

  it('When parameters of another kind are sent, then they are ignored', async () => {
    const conn = await service().withOverrides({ type: 'plex', creds: { url: 'http://p', token: 't' } }, { navidrome_user: 'x', jellyfin_token: 'y' });
    expect(conn.creds).toEqual({ url: 'http://p', token: 't' });
  });
});
