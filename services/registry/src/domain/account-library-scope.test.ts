import { UnreachableError, type LibraryInfo, type MediaServerClient, type ServerConnection } from '@polyphony/media-servers';
import { AppError, createLogger } from '@polyphony/platform';
import { AccountService, LIBRARY_SCOPE_TTL_MS, type UserAccount, type UserAccountStore } from './account.service';
import type { MusicServer } from './server';
import type { ServerService } from './server.service';

const URL_ = 'http://nas.test:4533';
const SERVER: MusicServer = {
  id: '11111111-1111-4111-8111-111111111111', name: 'Home', type: 'navidrome', creds: { url: URL_, user: 'admin', password: 'admin-pw' },
  musicLibraries: [], isDefault: true, trackCount: null, matchedCount: null,
  changeDetection: { mode: 'off', intervalSeconds: 900, pushTokenSha256: null }, createdAt: new Date(), updatedAt: new Date(),
};

/** One in-memory account row per (user, server). */
function memoryStore(): UserAccountStore & { rows: Map<string, UserAccount> } {
  const rows = new Map<string, UserAccount>();
  const k = (u: string, s: string) => `${u}/${s}`;
  return {
    rows,
    listForUser: async (u) => [...rows.values()].filter((a) => a.userId === u),
    find: async (u, s) => rows.get(k(u, s)),
    upsert: async (a) => {
      const row = { ...a, limitToLibraries: rows.get(k(a.userId, a.serverId))?.limitToLibraries ?? false, linkedAt: new Date() };
      rows.set(k(a.userId, a.serverId), row);
      return row;
    },
    setLimitToLibraries: async (u, s, on) => {
      const a = rows.get(k(u, s));
      if (a) a.limitToLibraries = on;
      return a !== undefined;
    },
    remove: async (u, s) => rows.delete(k(u, s)),
    removeUser: async () => 0,
  };
}

/**
 * Clients that answer libraries by credentials: the server's admin sees folders 1-3, alice's account folders 1 and 3,
 * bob's every folder; `down` makes every call fail as an unreachable server.
 */
function clients() {
  const state = { down: false, calls: 0 };
  const seen: Record<string, string[]> = { admin: ['1', '2', '3'], alice: ['1', '3'], bob: ['1', '2', '3'] };
  const factory = (conn: ServerConnection): MediaServerClient => {
    const libs = async (): Promise<LibraryInfo[]> => {
      state.calls++;
      if (state.down) throw new UnreachableError('navidrome: connect ECONNREFUSED');
      return (seen[conn.creds.user ?? ''] ?? []).map((id) => ({ id, name: `Folder ${id}` }));
    };
    return { type: 'navidrome', visibleLibraries: libs, listLibraries: libs } as unknown as MediaServerClient;
  };
  return { state, factory };
}

function service(store: UserAccountStore, factory: (c: ServerConnection) => MediaServerClient): AccountService {
  const servers = {
    get: async (id: string) => {
      if (id !== SERVER.id) throw new AppError('not_found', 'no server', 404);
      return SERVER;
    },
    resolve: async (id: string) => (id === SERVER.id ? SERVER : undefined),
    connection: (s: MusicServer) => ({ type: s.type, creds: s.creds, musicLibraries: s.musicLibraries }),
  } as unknown as ServerService;
  return new AccountService(store, servers, {} as never, factory, (() => Promise.reject(new Error('unused'))) as never, createLogger({ service: 'test', level: 'error' }));
}

async function link(store: UserAccountStore, user: string, limit: boolean): Promise<void> {
  await store.upsert({ userId: user, serverId: SERVER.id, creds: { url: URL_, user, password: `${user}-pw` }, accountName: user, libraries: [] });
  await store.setLimitToLibraries(user, SERVER.id, limit);
}

describe('AccountService library scope (issue 34)', () => {
  it('When a linked user asked for the limit, then the scope is the folders their own account sees, read once per cache period', async () => {
    const store = memoryStore();
    const { state, factory } = clients();
    await link(store, 'alice', true);
    const accounts = service(store, factory);
    expect(await accounts.libraryScope(SERVER.id, 'alice')).toEqual({ limited: true, libraries: ['1', '3'] });
    const calls = state.calls;
    expect(await accounts.libraryScope(SERVER.id, 'alice')).toEqual({ limited: true, libraries: ['1', '3'] });
    expect(state.calls).toBe(calls);
  });

  it('When the user did not ask, has no account, or sees every folder, then no filter is needed (no media-server call for the first two)', async () => {
    const store = memoryStore();
    const { state, factory } = clients();
    await link(store, 'alice', false);
    await link(store, 'bob', true);
    const accounts = service(store, factory);
    expect(await accounts.libraryScope(SERVER.id, 'alice')).toEqual({ limited: false, libraries: null });
    expect(await accounts.libraryScope(SERVER.id, 'nobody')).toEqual({ limited: false, libraries: null });
    expect(state.calls).toBe(0);
    expect(await accounts.libraryScope(SERVER.id, 'bob')).toEqual({ limited: true, libraries: null });
  });

  it('When the media server does not answer, then the scope is a 502 with a clear message, never an unlimited answer', async () => {
    const store = memoryStore();
    const { state, factory } = clients();
    await link(store, 'alice', true);
    state.down = true;
    const err = (await service(store, factory).libraryScope(SERVER.id, 'alice').catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect([err.httpStatus, err.code]).toEqual([502, 'library_scope_unavailable']);
    expect(err.message).toMatch(/Home did not answer which libraries your account can see/);
    expect(err.message).not.toContain('ECONNREFUSED');
  });

  it('When the setting changes, then the next scope reflects it at once; Lyrion and unlinked callers are refused', async () => {
    const store = memoryStore();
    const { factory } = clients();
    await link(store, 'alice', false);
    const accounts = service(store, factory);
    expect((await accounts.libraryScope(SERVER.id, 'alice')).limited).toBe(false);
    expect((await accounts.setLibraryScope('alice', SERVER.id, true)).limit_to_libraries).toBe(true);
    expect(await accounts.libraryScope(SERVER.id, 'alice')).toEqual({ limited: true, libraries: ['1', '3'] });
    await expect(accounts.setLibraryScope('carol', SERVER.id, true)).rejects.toMatchObject({ httpStatus: 409, code: 'account_not_linked' });
    await expect(accounts.setLibraryScope(undefined, SERVER.id, true)).rejects.toMatchObject({ httpStatus: 403 });
    const lyrion = { ...SERVER, type: 'lyrion' as const };
    const onLyrion = new AccountService(store, { get: async () => lyrion } as unknown as ServerService, {} as never, factory, (() => Promise.reject(new Error('unused'))) as never, createLogger({ service: 'test', level: 'error' }));
    await expect(onLyrion.setLibraryScope('alice', SERVER.id, true)).rejects.toMatchObject({ httpStatus: 400, code: 'library_scope_not_supported' });
    expect(LIBRARY_SCOPE_TTL_MS).toBe(60_000);
  });
});
