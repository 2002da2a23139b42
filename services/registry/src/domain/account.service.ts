import type { AccountDto, AccountLinkBody, LibraryScopeResponse, ServerForUserResponse } from '@polyphony/contracts';
import {
  BadCredentialsError,
  NotFoundError as MediaNotFoundError,
  PermissionDeniedError,
  ProtocolError,
  UnreachableError,
  type MediaServerErrorKind,
  type ServerType,
} from '@polyphony/media-servers';
import { AppError, ForbiddenError, NotFoundError, ValidationError, type Logger } from '@polyphony/platform';
import type { PlexLinkService } from './plex-link.service';
import type { MusicServer } from './server';
import { mediaServerHttpError, sameServerUrl, validateCreds, type ClientFactory, type ServerService, type SignInFunction } from './server.service';

/** A polyphony user's own account on one media server (credentials in clear: never leaves the service). */
export interface UserAccount {
  userId: string;
  serverId: string;
  /** Full credentials of the kind, `url` included: the server's url when the account was linked. */
  creds: Record<string, string>;
  accountName: string | null;
  libraries: Array<{ id: string; name: string }>;
  /** The user asked for answers limited to the libraries this account sees (issue 34). */
  limitToLibraries: boolean;
  linkedAt: Date;
}

/** registry.user_accounts (implemented in store/user-account.repository.ts). */
export interface UserAccountStore {
  listForUser(userId: string): Promise<UserAccount[]>;
  find(userId: string, serverId: string): Promise<UserAccount | undefined>;
  /** Inserts or replaces the account of (userId, serverId); a replaced account keeps its `limitToLibraries`. */
  upsert(a: Omit<UserAccount, 'linkedAt' | 'limitToLibraries'>): Promise<UserAccount>;
  /** Sets the account's `limitToLibraries`; false when there is no account. */
  setLimitToLibraries(userId: string, serverId: string, on: boolean): Promise<boolean>;
  /** False when there was none. */
  remove(userId: string, serverId: string): Promise<boolean>;
  /** Forgets every account of a user; how many. */
  removeUser(userId: string): Promise<number>;
}

/**
 * Server kinds whose API lets results be limited to what one account can see: Subsonic music folders
 * per user (`getMusicFolders` answers the user's folders), Jellyfin/Emby per-user views (`/Users/{id}/Views`),
 * Plex shared sections (a shared user's token lists only the sections shared with them). Lyrion: none.
 */
export const LIBRARY_SCOPE_KINDS: readonly ServerType[] = ['navidrome', 'jellyfin', 'emby', 'plex'];

/**
 * How long the libraries a user's account sees are kept before the media server is asked again (issue 34: "cache the
 * user's libraries briefly"): a library shared or unshared on the media server shows within this time. Linking,
 * unlinking and the setting itself drop the entry at once.
 */
export const LIBRARY_SCOPE_TTL_MS = 60_000;

/** Who calls: a signed-in polyphony user (session cookie); API-token, Setup and anonymous callers have no own accounts. */
export interface AccountCaller {
  sub: string;
  via: string;
}

/** The user id of a caller that may own media-server accounts, or undefined. */
export function accountOwner(caller: AccountCaller | undefined): string | undefined {
  return caller && caller.via === 'cookie' ? caller.sub : undefined;
}

/**
 * Households (issue 34): each polyphony user's own account on each media server. Linking verifies the
 * credentials against the server (its connection test with the account) before storing them; the account
 * always uses the url the server had when it was linked, and a stored secret is never sent to another url
 * (an account whose server moved reads `needs_relink` and the server's account is used until it is linked
 * again). Answers never carry a secret.
 */
export class AccountService {
  /** (userId, serverId) -> the library scope read from the media server, with when (see {@link LIBRARY_SCOPE_TTL_MS}). */
  private readonly scopeCache = new Map<string, { at: number; scope: LibraryScopeResponse }>();

  constructor(
    private readonly store: UserAccountStore,
    private readonly servers: ServerService,
    private readonly plex: PlexLinkService,
    private readonly clientFactory: ClientFactory,
    private readonly signInFn: SignInFunction,
    private readonly logger: Logger,
  ) {}

  /** The caller's account on every server (registry order). */
  async list(userId: string | undefined): Promise<AccountDto[]> {
    const [servers, accounts] = await Promise.all([this.servers.list(), userId ? this.store.listForUser(userId) : Promise.resolve([])]);
    return servers.map((s) => view(s, accounts.find((a) => a.serverId === s.id)));
  }

  /** @throws NotFoundError (404) for an unknown server. */
  async get(userId: string | undefined, serverId: string): Promise<AccountDto> {
    const server = await this.servers.get(serverId);
    return view(server, userId ? await this.store.find(userId, server.id) : undefined);
  }

  /**
   * Verifies and stores the caller's account on a server (see AccountLinkBody for the credential kinds).
   * @throws ForbiddenError (403) for a caller that is not a signed-in user; NotFoundError (404) unknown server;
   *   AppError 400 `accounts_not_supported` (Lyrion), ValidationError (400) wrong keys for the kind,
   *   `media_server_auth_failed` / `media_server_forbidden` (400) refused credentials, 404 unknown Plex PIN,
   *   409 `pin_not_linked` while the PIN has no token yet; 502 when the server (or plex.tv) is unreachable.
   */
  async link(userId: string | undefined, serverId: string, body: AccountLinkBody): Promise<AccountDto> {
    if (!userId) throw new ForbiddenError('Only a signed-in user can link their own media-server account');
    const server = await this.servers.get(serverId);
    const url = server.creds.url ?? '';
    const { creds, accountName } = await this.credentialsOf(server, body);
    const full = validateCreds(server.type, { url, ...creds });
    const client = this.clientFactory({ type: server.type, creds: full });
    let libraries: Array<{ id: string; name: string }>;
    try {
      const r = await client.testConnection();
      if (!r.ok) throw mediaServerHttpError(kindError(r.errorKind ?? 'protocol'), server.type);
      libraries = r.libraries.map((l) => ({ id: l.id, name: l.name }));
    } catch (err) {
      throw mediaServerHttpError(err, server.type);
    }
    await this.store.upsert({ userId, serverId: server.id, creds: full, accountName, libraries });
    this.scopeCache.delete(scopeKey(userId, server.id));
    this.logger.info('media-server account linked', { serverId: server.id, userId, serverType: server.type, libraries: libraries.length });
    return this.get(userId, server.id);
  }

  /** Forgets the caller's account on a server (nothing to forget is fine). @throws 403 / 404 as link. */
  async unlink(userId: string | undefined, serverId: string): Promise<void> {
    if (!userId) throw new ForbiddenError('Only a signed-in user has their own media-server accounts');
    const server = await this.servers.get(serverId);
    if (await this.store.remove(userId, server.id)) this.logger.info('media-server account unlinked', { serverId: server.id, userId });
    this.scopeCache.delete(scopeKey(userId, server.id));
  }

  /**
   * Turns the limit of the caller's answers on a server to their own account's libraries on or off (issue 34).
   * @throws ForbiddenError (403) for a caller that is not a signed-in user; NotFoundError (404) unknown server;
   *   AppError 400 `library_scope_not_supported` for a kind without per-account libraries (Lyrion); AppError 409
   *   `account_not_linked` when the caller has no usable linked account on the server.
   */
  async setLibraryScope(userId: string | undefined, serverId: string, on: boolean): Promise<AccountDto> {
    if (!userId) throw new ForbiddenError('Only a signed-in user has their own media-server accounts');
    const server = await this.servers.get(serverId);
    if (!LIBRARY_SCOPE_KINDS.includes(server.type)) {
      throw new AppError('library_scope_not_supported', `A ${server.type} server has no per-account libraries: every account sees the whole server`, 400);
    }
    const account = await this.store.find(userId, server.id);
    if (!account || !usable(server, account)) throw new AppError('account_not_linked', 'Link your own account on this server first: the limit uses the libraries that account can see', 409);
    await this.store.setLimitToLibraries(userId, server.id, on);
    this.scopeCache.delete(scopeKey(userId, server.id));
    this.logger.info('library scope of a media-server account set', { serverId: server.id, userId, limitToLibraries: on });
    return this.get(userId, server.id);
  }

  /**
   * The libraries `userId`'s answers on a server are limited to (issue 34): none (`limited: false`) unless the user has
   * a usable linked account there, asked for the limit, and the kind has per-account libraries; then the library ids
   * the account sees now (the client's `visibleLibraries` with the account's own credentials), kept
   * {@link LIBRARY_SCOPE_TTL_MS}.
   * @throws NotFoundError (404) unknown server; AppError 502 `library_scope_unavailable` when the media server does
   *   not answer the list (unreachable, refused credentials, protocol error): the caller must fail the request, never
   *   answer unlimited.
   */
  async libraryScope(serverId: string, userId: string): Promise<LibraryScopeResponse> {
    const s = await this.servers.resolve(serverId);
    if (!s) throw new NotFoundError(`Server ${serverId} not found`);
    const key = scopeKey(userId, s.id);
    const cached = this.scopeCache.get(key);
    if (cached && Date.now() - cached.at < LIBRARY_SCOPE_TTL_MS) return cached.scope;
    const account = await this.store.find(userId, s.id);
    let scope: LibraryScopeResponse = { limited: false, libraries: null };
    if (account && account.limitToLibraries && usable(s, account) && LIBRARY_SCOPE_KINDS.includes(s.type)) {
      let libraries;
      try {
        libraries = await this.clientFactory({ type: s.type, creds: account.creds }).visibleLibraries();
      } catch (err) {
        this.logger.warn('libraries of a user account could not be read', { serverId: s.id, userId, err: (err as Error).name });
        throw new AppError(
          'library_scope_unavailable',
          `${s.name} did not answer which libraries your account can see, so results limited to your libraries cannot be given now; try again, or turn the limit off`,
          502,
        );
      }
      if (libraries !== null) {
        const ids = libraries.map((l) => l.id).sort();
        scope = { limited: true, libraries: (await this.seesWholeServer(s, ids)) ? null : ids };
      }
    }
    this.scopeCache.set(key, { at: Date.now(), scope });
    if (this.scopeCache.size > 10_000) this.scopeCache.delete(this.scopeCache.keys().next().value as string);
    return scope;
  }

  /** Forgets every account of a deleted polyphony user (their secrets do not outlive them). */
  async forgetUser(userId: string): Promise<number> {
    const removed = await this.store.removeUser(userId);
    if (removed) this.logger.info('media-server accounts of a deleted user forgotten', { userId, removed });
    return removed;
  }

  /** Starts a Plex PIN for the caller's own account (the token is read by the registry at link time). */
  plexPin(clientId: string): Promise<{ id: string; code: string; link_url: string }> {
    return this.plex.create(clientId);
  }

  /**
   * The connection other services use for `userId` on a server: the user's own linked account when usable,
   * else the server's account. @throws NotFoundError (404) for an unknown server.
   */
  async connectionFor(serverId: string, userId: string | undefined): Promise<ServerForUserResponse> {
    const s = await this.servers.resolve(serverId);
    if (!s) throw new NotFoundError(`Server ${serverId} not found`);
    const base = { id: s.id, name: s.name, type: s.type, isDefault: s.isDefault };
    const account = userId ? await this.store.find(userId, s.id) : undefined;
    if (account && usable(s, account)) {
      return { ...base, account: 'user', connection: { type: s.type, creds: account.creds, musicLibraries: s.musicLibraries } };
    }
    return { ...base, account: 'server', connection: this.servers.connection(s) };
  }

  /**
   * True when `ids` holds every library the server is analysed in: its `music_libraries` filter, else every library its
   * own account lists (one more call with the server's credentials; a failure answers false: the filter is kept).
   */
  private async seesWholeServer(s: MusicServer, ids: readonly string[]): Promise<boolean> {
    const seen = new Set(ids);
    let wanted: string[] = s.musicLibraries ?? [];
    if (wanted.length === 0) {
      try {
        wanted = (await this.clientFactory(this.servers.connection(s)).listLibraries()).map((l) => l.id);
      } catch {
        return false;
      }
    }
    return wanted.length > 0 && wanted.every((id) => seen.has(id));
  }

  /** The credential keys of the body for the server's kind (without url), and the account's display name. */
  private async credentialsOf(server: MusicServer, body: AccountLinkBody): Promise<{ creds: Record<string, string>; accountName: string | null }> {
    const given = Object.entries(body).filter(([, v]) => v !== undefined).map(([k]) => k);
    const only = (allowed: string[]): void => {
      const extra = given.filter((k) => !allowed.includes(k));
      if (extra.length) throw new ValidationError(`${extra.join(', ')} ${extra.length > 1 ? 'are' : 'is'} not used to link a ${server.type} account (give ${allowed.join(', ')})`);
    };
    switch (server.type) {
      case 'lyrion':
        throw new AppError('accounts_not_supported', 'Lyrion Music Server has no per-user accounts (one server-wide login): playlists are written with the server account', 400);
      case 'navidrome':
        if (body.api_key) {
          only(['api_key']);
          return { creds: { api_key: body.api_key }, accountName: null };
        }
        only(['user', 'password']);
        if (!body.user || !body.password) throw new ValidationError('Give user and password (or api_key) of your account on this server');
        return { creds: { user: body.user, password: body.password }, accountName: body.user };
      case 'jellyfin':
      case 'emby': {
        if (body.token || body.user_id) {
          only(['user_id', 'token']);
          if (!body.token || !body.user_id) throw new ValidationError('Give user_id and token (or username and password)');
          return { creds: { user_id: body.user_id, token: body.token }, accountName: body.user_id };
        }
        only(['username', 'password']);
        if (!body.username || !body.password) throw new ValidationError('Give username and password (or user_id and token) of your account on this server');
        let signed;
        try {
          signed = await this.signInFn(server.type, server.creds.url ?? '', body.username, body.password);
        } catch (err) {
          throw mediaServerHttpError(err, server.type);
        }
        return { creds: { user_id: signed.userId, token: signed.token }, accountName: body.username };
      }
      case 'plex': {
        if (body.token) {
          only(['token']);
          return { creds: { token: body.token }, accountName: null };
        }
        only(['plex_pin_id', 'client_id']);
        if (!body.plex_pin_id || !body.client_id) throw new ValidationError('Give token, or plex_pin_id and client_id of a PIN started with POST /api/me/plex/pin');
        const { token } = await this.plex.poll(body.plex_pin_id, body.client_id);
        if (!token) throw new AppError('pin_not_linked', 'The Plex PIN is not linked yet: enter the code at plex.tv/link, then try again', 409);
        return { creds: { token }, accountName: null };
      }
    }
  }
}

function scopeKey(userId: string, serverId: string): string {
  return `${userId}\u0000${serverId}`;
}

/** A stored account is usable while it holds a complete credential set for the url the server still has. */
function usable(server: MusicServer, account: UserAccount): boolean {
  if (!sameServerUrl(account.creds.url, server.creds.url)) return false;
  try {
    validateCreds(server.type, account.creds);
    return true;
  } catch {
    return false;
  }
}

function view(server: MusicServer, account: UserAccount | undefined): AccountDto {
  const status = !account ? 'not_linked' : usable(server, account) ? 'linked' : 'needs_relink';
  return {
    server_id: server.id,
    server_name: server.name,
    server_type: server.type,
    status,
    linked: status === 'linked',
    account_name: account?.accountName ?? null,
    libraries: account ? account.libraries : null,
    library_scope_supported: LIBRARY_SCOPE_KINDS.includes(server.type),
    limit_to_libraries: account ? account.limitToLibraries : false,
    linked_at: account ? account.linkedAt.toISOString() : null,
  };
}

/** A media-server error of a kind, for a failed connection test that answered instead of throwing. */
function kindError(kind: MediaServerErrorKind): Error {
  const text = 'connection test with the account failed';
  switch (kind) {
    case 'bad_credentials':
      return new BadCredentialsError(text);
    case 'permission_denied':
      return new PermissionDeniedError(text);
    case 'unreachable':
      return new UnreachableError(text);
    case 'not_found':
      return new MediaNotFoundError(text);
    default:
      return new ProtocolError(text);
  }
}
