import { createLogger, type SettingsStore } from '@polyphony/platform';
import type { SessionRepository } from '../store/session.repository';
import type { UserRepository } from '../store/user.repository';
import { AuthService } from './auth.service';
import { constantTimeEquals } from './password';

/** An AuthService over in-memory stand-ins of its store and repositories (one admin exists; no database). */
async function authWith(apiToken: string | undefined, stored: Record<string, string> = {}): Promise<{ auth: AuthService; store: Map<string, string> }> {
  const store = new Map<string, string>(Object.entries({ installed_at: 'x', ...stored }));
  const settings = {
    get: async (k: string) => store.get(k),
    set: async (k: string, v: string) => void store.set(k, v),
    all: async () => Object.fromEntries(store),
    seedOnce: async () => undefined,
  } as unknown as SettingsStore;
  const users = { countAdmins: async () => 1 } as unknown as UserRepository;
  const auth = new AuthService(users, {} as SessionRepository, settings, { ttlSeconds: 3600, maxSeconds: 86400 }, createLogger({ service: 'test', level: 'error' }));
  await auth.init({}, apiToken === undefined ? {} : { apiToken });
  return { auth, store };
}

describe('Bearer API token check', () => {
  it('accepts the token on every request (first by its hash, then remembered) and refuses others, near misses included', async () => {
    const { auth } = await authWith('the-api-token-0123456789abcdef');
    for (let i = 0; i < 3; i++) {
      expect(auth.authenticateBearer('the-api-token-0123456789abcdef')).toMatchObject({ sub: 'api-token', role: 'admin', via: 'bearer' });
      for (const wrong of ['the-api-token-0123456789abcdeF', 'the-api-token-0123456789abcde', 'the-api-token-0123456789abcdef0', '', 'x']) {
        expect(auth.authenticateBearer(wrong)).toBeUndefined();
      }
    }
  });

  it('forgets the remembered token when the token in force changes (a restart with a rotated API_TOKEN)', async () => {
    const first = await authWith('token-one');
    expect(first.auth.authenticateBearer('token-one')).toBeDefined();
    // Same store, new environment token: the stored hash is replaced and the old token no longer passes.
    const rotated = await authWith('token-two', Object.fromEntries(first.store));
    expect(rotated.auth.authenticateBearer('token-one')).toBeUndefined();
    expect(rotated.auth.authenticateBearer('token-two')).toBeDefined();
    // The same service object after its settings are reloaded with another hash.
    await first.auth.init({}, { apiToken: 'token-three' });
    expect(first.auth.authenticateBearer('token-one')).toBeUndefined();
    expect(first.auth.authenticateBearer('token-three')).toBeDefined();
  });

  it('refuses every token when none is configured', async () => {
    const { auth } = await authWith(undefined);
    expect(auth.authenticateBearer('anything')).toBeUndefined();
  });

  it('the remembered token is compared in constant time (constantTimeEquals): equal strings only', () => {
    expect(constantTimeEquals('abc', 'abc')).toBe(true);
    for (const [a, b] of [['abd', 'abc'], ['ab', 'abc'], ['abcd', 'abc'], ['', 'abc'], ['abc', ''], ['\u0000bc', 'abc'], ['é', 'e']]) expect(constantTimeEquals(a!, b!)).toBe(false);
    expect(constantTimeEquals('', '')).toBe(true);
  });
});
