import { createLogger, type SettingsStore } from '@polyphony/platform';
import type { SessionRepository, SessionWithUser } from '../store/session.repository';
import type { UserRepository } from '../store/user.repository';
import { AuthService, SESSION_STALE_MS } from './auth.service';
import { signSession } from './jwt';

const SID = '0b0c0d0e-1111-4222-8333-444455556666';
const USER = { id: 'user-1', username: 'listener', role: 'user' as const, passwordHash: 'x', passwordChangedAt: 0, createdAt: new Date(0) };

/** An AuthService whose session repository the test switches between up, down (connection refused) and gone. */
async function authWithSessions() {
  const state = { mode: 'up' as 'up' | 'down' | 'gone', reads: 0 };
  const store = new Map<string, string>([['installed_at', 'x'], ['JWT_SECRET', 'j'.repeat(48)]]);
  const settings = { get: async (k: string) => store.get(k), set: async (k: string, v: string) => void store.set(k, v), all: async () => Object.fromEntries(store), seedOnce: async () => undefined } as unknown as SettingsStore;
  const sessions = {
    findLive: async (id: string): Promise<SessionWithUser | undefined> => {
      state.reads++;
      if (state.mode === 'down') throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      if (state.mode === 'gone') return undefined;
      return { id, expiresAt: Date.now() + 3_600_000, maxExpiresAt: Date.now() + 86_400_000, user: USER };
    },
    extend: async () => undefined,
  } as unknown as SessionRepository;
  const auth = new AuthService({ countAdmins: async () => 1 } as unknown as UserRepository, sessions, settings, { ttlSeconds: 3600, maxSeconds: 86400 }, createLogger({ service: 'test', level: 'error' }));
  await auth.init({});
  const cookie = signSession({ sub: USER.id, sid: SID, role: 'user' }, 'j'.repeat(48), Date.now() + 3_600_000);
  return { auth, state, cookie };
}

describe('session cookies while the database is unreachable (issue 36)', () => {
  it('When the database goes down, then a session read before is accepted from memory (not extended); an unknown one is the transient error (503)', async () => {
    const { auth, state, cookie } = await authWithSessions();
    expect((await auth.authenticateCookie(cookie))?.identity).toMatchObject({ sub: USER.id, via: 'cookie' });
    state.mode = 'down';
    const during = await auth.authenticateCookie(cookie);
    expect(during?.identity).toMatchObject({ sub: USER.id, username: 'listener', role: 'user', via: 'cookie' });
    expect(during?.refreshed).toBeUndefined();
    expect(state.reads).toBe(2);
    const other = signSession({ sub: USER.id, sid: '0b0c0d0e-1111-4222-8333-777777777777', role: 'user' }, 'j'.repeat(48), Date.now() + 3_600_000);
    await expect(auth.authenticateCookie(other)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('When the database said the session is gone, then it is refused during a later outage too; a read older than SESSION_STALE_MS is not used', async () => {
    const { auth, state, cookie } = await authWithSessions();
    await auth.authenticateCookie(cookie);
    state.mode = 'gone';
    expect(await auth.authenticateCookie(cookie)).toBeUndefined();
    state.mode = 'down';
    await expect(auth.authenticateCookie(cookie)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    const late = await authWithSessions();
    await late.auth.authenticateCookie(late.cookie);
    const now = Date.now();
    const spy = jest.spyOn(Date, 'now').mockReturnValue(now + SESSION_STALE_MS + 1000);
    try {
      late.state.mode = 'down';
      await expect(late.auth.authenticateCookie(late.cookie)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      spy.mockRestore();
    }
  });
});
