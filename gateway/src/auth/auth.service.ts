import { createHash, randomBytes } from 'node:crypto';
import { ConflictError, ForbiddenError, NotFoundError, SettingsStore, isTransientFault, UnauthorizedError, ValidationError, type CallerIdentity, type Logger } from '@polyphony/platform';
import type { SessionRepository, SessionWithUser } from '../store/session.repository';
import type { UserRecord, UserRepository } from '../store/user.repository';
import { signSession, verifySession } from './jwt';
import { constantTimeEquals, hashPassword, needsRehash, verifyPassword } from './password';

/** Auth settings as loaded at start (auth.settings, with environment secrets winning). */
export interface AuthSettings {
  authEnabled: boolean;
  /** `sha256:<hex>` of the API token; the token itself is never stored. */
  apiTokenHash?: string;
  /** Session signing secrets: the first signs, every one verifies (rotation). Random per start when none is configured. */
  jwtSecrets: string[];
  jwtSecretIsEphemeral: boolean;
}

/** Secrets given in the environment; each one, when present, replaces the stored value at start. */
export interface EnvSecrets {
  apiToken?: string;
  jwtSecret?: string;
  /** Verify-only previous signing secret (never stored). */
  jwtSecretPrevious?: string;
}

/** Session lifetimes in seconds: idle (extended by use) and absolute. */
export interface SessionLifetimes {
  ttlSeconds: number;
  maxSeconds: number;
}

/** A signed session token and when it expires (epoch ms). */
export interface IssuedSession {
  token: string;
  expiresAt: number;
}

/**
 * How long a session row read from the database may stand in for it while the database is unreachable (issue 36):
 * 5 minutes. Only used when the look-up fails on a transient fault; see `AuthService.authenticateCookie`.
 */
export const SESSION_STALE_MS = 5 * 60_000;
/** Sessions remembered for outages (the most recently verified ones; about 1 kB each). */
const SESSION_MEMORY_ENTRIES = 10_000;

/** Stored form of the API token: SHA-256 is enough for a high-entropy token (no dictionary to try). */
export function hashApiToken(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;
}

export interface PublicUser {
  id: string;
  username: string;
  role: 'admin' | 'user';
  created_at: string;
  password_changed_at: string;
}

export const toPublicUser = (u: UserRecord): PublicUser => ({
  id: u.id,
  username: u.username,
  role: u.role,
  created_at: u.createdAt.toISOString(),
  password_changed_at: new Date(u.passwordChangedAt).toISOString(),
});

/**
 * Authentication and user management (spec: Authentication 1-8).
 * Every cookie names a server-side session (auth.sessions) that is looked up with its user on every
 * request: logout deletes it, a password or role change deletes every session of the user, deleting
 * the user cascades, and the database role overrides the token's claim. Sessions end after
 * `ttlSeconds` unused (a request in the second half of that window extends it and re-issues the
 * cookie) and after `maxSeconds` in any case. Bearer API_TOKEN callers are admin-equivalent and
 * exempt from current_password.
 */
export class AuthService {
  private settings!: AuthSettings;
  /** The last good read of each recently used session, by session id (see `authenticateCookie`). */
  private readonly lastGoodSessions = new Map<string, { session: SessionWithUser; at: number }>();
  /** The last Bearer token that matched and the hash it matched (see `authenticateBearer`). */
  private verifiedBearer?: { hash: string; token: string };

  constructor(
    private readonly users: UserRepository,
    private readonly sessions: SessionRepository,
    private readonly store: SettingsStore,
    private readonly lifetimes: SessionLifetimes,
    private readonly logger: Logger,
  ) {}

  /**
   * First-start import of the environment seeds, then loads the settings. When no admin exists and
   * SERVICE_USER / SERVICE_PASSWORD are stored, the admin is created from them (first boot, or after
   * the recovery procedure re-seeded them). Throws when no admin exists and no admin seed is known on
   * a fresh install, because SERVICE_USER and SERVICE_PASSWORD are mandatory.
   */
  async init(seeds: Record<string, string | undefined>, secrets: EnvSecrets = {}): Promise<void> {
    const fresh = (await this.store.get('installed_at')) === undefined;
    await this.store.seedOnce(seeds);
    const all = await this.store.all();
    if ((await this.users.countAdmins()) === 0) {
      const user = all.SERVICE_USER;
      const password = all.SERVICE_PASSWORD;
      if (user && password) {
        await this.users.create(user, 'admin', await hashPassword(password));
        // The plain seed password is not kept once the admin row holds its hash.
        await this.store.set('SERVICE_PASSWORD', '');
        this.logger.info('admin account seeded', { username: user });
      } else if (fresh) {
        throw new ValidationError('SERVICE_USER and SERVICE_PASSWORD must be set on first start');
      } else {
        this.logger.warn('no admin account exists: first-run setup window is open');
      }
    }
    if (fresh) await this.store.set('installed_at', new Date().toISOString());
    const authEnabled = all.AUTH_ENABLED === undefined ? true : all.AUTH_ENABLED === 'true';
    const apiTokenHash = await this.loadApiToken(all.API_TOKEN || undefined, secrets.apiToken);
    const jwtSecret = await this.loadJwtSecret(all.JWT_SECRET || undefined, secrets.jwtSecret);
    const jwtSecrets = [jwtSecret ?? randomBytes(48).toString('hex'), ...(secrets.jwtSecretPrevious ? [secrets.jwtSecretPrevious] : [])];
    this.settings = { authEnabled, apiTokenHash, jwtSecrets, jwtSecretIsEphemeral: !jwtSecret };
  }

  /**
   * The API token hash in force: the environment's token wins over the stored one (an operator
   * rotating a Kubernetes Secret), and is stored as its hash; a plain token stored by an older
   * version is replaced by its hash. Logged without the value.
   */
  private async loadApiToken(stored: string | undefined, fromEnv: string | undefined): Promise<string | undefined> {
    if (fromEnv !== undefined) {
      const hash = hashApiToken(fromEnv);
      if (stored !== hash) {
        await this.store.set('API_TOKEN', hash);
        this.logger.info(stored ? 'API_TOKEN from the environment replaces the stored token' : 'API_TOKEN from the environment stored (as a hash)');
      }
      return hash;
    }
    if (stored && !stored.startsWith('sha256:')) {
      const hash = hashApiToken(stored);
      await this.store.set('API_TOKEN', hash);
      this.logger.info('stored API_TOKEN converted to a hash');
      return hash;
    }
    return stored;
  }

  /** The signing secret in force: the environment's wins over the stored one and replaces it (logged without the value). */
  private async loadJwtSecret(stored: string | undefined, fromEnv: string | undefined): Promise<string | undefined> {
    if (fromEnv === undefined) return stored;
    if (stored !== fromEnv) {
      await this.store.set('JWT_SECRET', fromEnv);
      if (stored) this.logger.info('JWT_SECRET from the environment replaces the stored secret');
    }
    return fromEnv;
  }

  get authEnabled(): boolean {
    return this.settings.authEnabled;
  }

  /** True when no JWT_SECRET is configured (env seed or auth.settings) and sessions use a per-process key. */
  get sessionKeyIsEphemeral(): boolean {
    return this.settings.jwtSecretIsEphemeral;
  }

  /** True while no admin account exists (first run / after admin recovery). */
  async setupWindowOpen(): Promise<boolean> {
    return (await this.users.countAdmins()) === 0;
  }

  /**
   * Checks a Bearer token against the stored API token hash in constant time; undefined when wrong or none configured.
   * The last token that matched is remembered with the hash it matched (one entry, forgotten when the hash in force
   * changes): a request carrying the same token is accepted after a constant-time comparison of the strings
   * (`constantTimeEquals`) instead of a SHA-256 per request (issue 19: ~4% of the gateway's CPU on an API-token request). Any
   * other token takes the hash comparison, with the same result as before.
   */
  authenticateBearer(token: string): CallerIdentity | undefined {
    const expected = this.settings.apiTokenHash;
    if (!expected) return undefined;
    const known = this.verifiedBearer;
    if (!(known !== undefined && known.hash === expected && constantTimeEquals(token, known.token))) {
      if (!constantTimeEquals(hashApiToken(token), expected)) return undefined;
      this.verifiedBearer = { hash: expected, token };
    }
    return { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() };
  }

  /**
   * Validates a session cookie: signature, mandatory `exp`, and a live session row of an existing
   * user (one query). Returns the caller and, when the session was past half its idle lifetime, a
   * refreshed token to set as the new cookie. Undefined when invalid for any reason. While the database is
   * unreachable, a session read in the last `SESSION_STALE_MS` is accepted from memory (not extended; see
   * `sessionDuringOutage`); any other session is a 503 with `Retry-After`.
   */
  async authenticateCookie(token: string): Promise<{ identity: CallerIdentity; refreshed?: IssuedSession } | undefined> {
    const claims = verifySession(token, this.settings.jwtSecrets);
    if (!claims) return undefined;
    let session: SessionWithUser | undefined;
    let fromMemory = false;
    try {
      session = await this.sessions.findLive(claims.sid);
      this.rememberSession(claims.sid, session);
    } catch (err) {
      session = this.sessionDuringOutage(claims.sid, err);
      fromMemory = true;
    }
    if (!session || session.user.id !== claims.sub) return undefined;
    const { user } = session;
    const identity: CallerIdentity = { sub: user.id, username: user.username, role: user.role, via: 'cookie', iat: Date.now() };
    let refreshed: IssuedSession | undefined;
    const ttlMs = this.lifetimes.ttlSeconds * 1000;
    if (!fromMemory && session.expiresAt - Date.now() < ttlMs / 2 && session.expiresAt < session.maxExpiresAt) {
      // Extending is a convenience: a database lost between the read and this write leaves the cookie as it is.
      const expiresAt = await this.sessions.extend(session.id, this.lifetimes.ttlSeconds).catch((err: unknown) => {
        if (isTransientFault(err)) return undefined;
        throw err;
      });
      if (expiresAt) refreshed = { token: signSession({ sub: user.id, sid: session.id, role: user.role }, this.settings.jwtSecrets[0]!, expiresAt), expiresAt };
    }
    return { identity, refreshed };
  }

  /** Keeps the last good read of a session (or forgets it when the database says it is gone). */
  private rememberSession(sid: string, session: SessionWithUser | undefined): void {
    this.lastGoodSessions.delete(sid);
    if (!session) return;
    if (this.lastGoodSessions.size >= SESSION_MEMORY_ENTRIES) this.lastGoodSessions.delete(this.lastGoodSessions.keys().next().value!);
    this.lastGoodSessions.set(sid, { session, at: Date.now() });
  }

  /**
   * The session to use when its look-up failed with `err` (issue 36, "database outage under traffic"): on a transient
   * fault (the database unreachable), the row read less than `SESSION_STALE_MS` ago, if it has not expired since;
   * otherwise `err` is rethrown (a 503 with `Retry-After` for a transient fault). Safe for revocation: logout, a
   * password or role change and user deletion all need the same database, so none can have happened unseen by this
   * gateway except through another gateway replica that still reaches it (a partition): such a change takes effect
   * here within `SESSION_STALE_MS` at most, or as soon as this gateway reaches the database again.
   */
  private sessionDuringOutage(sid: string, err: unknown): SessionWithUser {
    const kept = this.lastGoodSessions.get(sid);
    const now = Date.now();
    if (isTransientFault(err) && kept && now - kept.at < SESSION_STALE_MS && kept.session.expiresAt > now && kept.session.maxExpiresAt > now) return kept.session;
    throw err;
  }

  /** Verifies username/password; returns the user and a fresh session. 401 on any mismatch. */
  async login(username: string, password: string): Promise<{ user: UserRecord; session: IssuedSession }> {
    const user = await this.users.findByUsername(username);
    // Hash anyway when the user is unknown so timing does not reveal which usernames exist.
    const ok = user ? await verifyPassword(password, user.passwordHash) : (await hashPassword(password), false);
    if (!user || !ok) throw new UnauthorizedError('Invalid username or password');
    // An account imported from the reference keeps its Argon2 hash until its first login: re-hashed to our scheme now.
    if (needsRehash(user.passwordHash)) await this.users.setPassword(user.id, await hashPassword(password));
    return { user, session: await this.issue(user) };
  }

  /** Opens a session for `user` and signs its token. */
  async issue(user: UserRecord): Promise<IssuedSession> {
    const { id, expiresAt } = await this.sessions.create(user.id, this.lifetimes.ttlSeconds, this.lifetimes.maxSeconds);
    return { token: signSession({ sub: user.id, sid: id, role: user.role }, this.settings.jwtSecrets[0]!, expiresAt), expiresAt };
  }

  /** Ends the session a cookie names (logout); a cookie that does not verify ends nothing. */
  async logout(token: string | undefined): Promise<void> {
    const claims = token ? verifySession(token, this.settings.jwtSecrets) : undefined;
    if (claims) {
      this.lastGoodSessions.delete(claims.sid);
      await this.sessions.revoke(claims.sid);
    }
  }

  private async requireCurrentPassword(actor: CallerIdentity, currentPassword: string | undefined): Promise<void> {
    if (actor.via === 'bearer' || actor.via === 'anonymous' || actor.via === 'setup') return;
    if (!currentPassword) throw new ValidationError('current_password is required');
    const me = await this.users.findById(actor.sub);
    if (!me || !(await verifyPassword(currentPassword, me.passwordHash))) throw new ForbiddenError('current_password is wrong');
  }

  async listUsers(): Promise<PublicUser[]> {
    return (await this.users.list()).map(toPublicUser);
  }

  /** Creates a user (admin only; current_password for cookie callers). 409 on duplicate username. */
  async createUser(actor: CallerIdentity, input: { username: string; password: string; role: 'admin' | 'user'; current_password?: string }): Promise<PublicUser> {
    if (actor.role !== 'admin') throw new ForbiddenError('Admin role required');
    await this.requireCurrentPassword(actor, input.current_password);
    const created = await this.users.create(input.username, input.role, await hashPassword(input.password));
    this.logger.info('user created', { userId: created.id, role: created.role });
    return toPublicUser(created);
  }

  /**
   * Changes a password (own, or any as admin). Sets password_changed_at, which ends every session
   * issued before it. Returns a fresh token when the actor changed their own password.
   */
  async changePassword(actor: CallerIdentity, targetId: string, input: { password: string; current_password?: string }): Promise<{ fresh?: IssuedSession }> {
    const self = actor.sub === targetId;
    if (!self && actor.role !== 'admin') throw new ForbiddenError('Only admins can change other users’ passwords');
    const target = await this.users.findById(targetId);
    if (!target) throw new NotFoundError(`User ${targetId} not found`);
    await this.requireCurrentPassword(actor, input.current_password);
    // The update ends every session of the user (trigger); the caller's own gets a fresh one.
    await this.users.setPassword(target.id, await hashPassword(input.password));
    await this.sessions.revokeAllOf(target.id);
    this.logger.info('password changed', { userId: target.id, self });
    return self && actor.via === 'cookie' ? { fresh: await this.issue(target) } : {};
  }

  /** Deletes a user (admin only; current_password for cookie callers); the last admin is refused (409). */
  async deleteUser(actor: CallerIdentity, targetId: string, currentPassword: string | undefined): Promise<void> {
    if (actor.role !== 'admin') throw new ForbiddenError('Admin role required');
    await this.requireCurrentPassword(actor, currentPassword);
    const outcome = await this.users.deleteGuardingLastAdmin(targetId);
    if (outcome === 'not_found') throw new NotFoundError(`User ${targetId} not found`);
    if (outcome === 'last_admin') throw new ConflictError('The last admin cannot be deleted', 'last_admin');
    this.logger.info('user deleted', { userId: targetId });
  }

  /** First-run window only: creates the first admin. 409 once an admin exists. */
  async createFirstAdmin(username: string, password: string): Promise<{ user: UserRecord; session: IssuedSession }> {
    if (!(await this.setupWindowOpen())) throw new ConflictError('An admin already exists', 'setup_closed');
    const user = await this.users.create(username, 'admin', await hashPassword(password));
    return { user, session: await this.issue(user) };
  }
}
