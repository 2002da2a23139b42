import { randomBytes } from 'node:crypto';
import { ConflictError, ForbiddenError, NotFoundError, SettingsStore, UnauthorizedError, ValidationError, type CallerIdentity, type Logger } from '@polyphony/platform';
import type { UserRecord, UserRepository } from '../store/user.repository';
import { signSession, verifySession } from './jwt';
import { constantTimeEquals, hashPassword, verifyPassword } from './password';

/** Auth settings as stored in auth.settings (seeded from the environment on first start). */
export interface AuthSettings {
  authEnabled: boolean;
  apiToken?: string;
  /** Signing secret of session cookies; a fresh random one per start when not configured. */
  jwtSecret: string;
  jwtSecretIsEphemeral: boolean;
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
 * Cookie sessions are re-validated against service_users on every request: a deleted user is
 * refused at once, a token issued before password_changed_at is refused, and the database role
 * overrides the token's claim. Bearer API_TOKEN callers are admin-equivalent and exempt from
 * current_password.
 */
export class AuthService {
  private settings!: AuthSettings;

  constructor(
    private readonly users: UserRepository,
    private readonly store: SettingsStore,
    private readonly ttlSeconds: number,
    private readonly logger: Logger,
  ) {}

  /**
   * First-start import of the environment seeds, then loads the settings. When no admin exists and
   * SERVICE_USER / SERVICE_PASSWORD are stored, the admin is created from them (first boot, or after
   * the recovery procedure re-seeded them). Throws when no admin exists and no admin seed is known on
   * a fresh install, because SERVICE_USER and SERVICE_PASSWORD are mandatory.
   */
  async init(seeds: Record<string, string | undefined>): Promise<void> {
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
    const apiToken = all.API_TOKEN || undefined;
    const jwtSecret = all.JWT_SECRET || undefined;
    this.settings = { authEnabled, apiToken, jwtSecret: jwtSecret ?? randomBytes(48).toString('hex'), jwtSecretIsEphemeral: !jwtSecret };
  }

  get authEnabled(): boolean {
    return this.settings.authEnabled;
  }

  /** True while no admin account exists (first run / after admin recovery). */
  async setupWindowOpen(): Promise<boolean> {
    return (await this.users.countAdmins()) === 0;
  }

  /** Checks a Bearer token against API_TOKEN in constant time; undefined when wrong or none configured. */
  authenticateBearer(token: string): CallerIdentity | undefined {
    const expected = this.settings.apiToken;
    if (!expected || !constantTimeEquals(token, expected)) return undefined;
    return { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() };
  }

  /** Validates a session cookie against the users table; undefined when invalid for any reason. */
  async authenticateCookie(token: string): Promise<CallerIdentity | undefined> {
    const claims = verifySession(token, this.settings.jwtSecret);
    if (!claims) return undefined;
    const user = await this.users.findById(claims.sub);
    if (!user) return undefined;
    if (claims.iat_ms < user.passwordChangedAt) return undefined;
    return { sub: user.id, username: user.username, role: user.role, via: 'cookie', iat: Date.now() };
  }

  /** Verifies username/password; returns the user and a fresh session token. 401 on any mismatch. */
  async login(username: string, password: string): Promise<{ user: UserRecord; token: string }> {
    const user = await this.users.findByUsername(username);
    // Hash anyway when the user is unknown so timing does not reveal which usernames exist.
    const ok = user ? await verifyPassword(password, user.passwordHash) : (await hashPassword(password), false);
    if (!user || !ok) throw new UnauthorizedError('Invalid username or password');
    return { user, token: this.issue(user) };
  }

  /** Issues a session token for `user`, stamped at or after its password change. */
  issue(user: UserRecord): string {
    return signSession({ sub: user.id, role: user.role, iat_ms: Math.max(Date.now(), user.passwordChangedAt) }, this.settings.jwtSecret, this.ttlSeconds);
  }

  get sessionTtlSeconds(): number {
    return this.ttlSeconds;
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
  async changePassword(actor: CallerIdentity, targetId: string, input: { password: string; current_password?: string }): Promise<{ freshToken?: string }> {
    const self = actor.sub === targetId;
    if (!self && actor.role !== 'admin') throw new ForbiddenError('Only admins can change other users’ passwords');
    const target = await this.users.findById(targetId);
    if (!target) throw new NotFoundError(`User ${targetId} not found`);
    await this.requireCurrentPassword(actor, input.current_password);
    const changedAt = await this.users.setPassword(target.id, await hashPassword(input.password));
    this.logger.info('password changed', { userId: target.id, self });
    return self && actor.via === 'cookie' ? { freshToken: this.issue({ ...target, passwordChangedAt: changedAt }) } : {};
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
  async createFirstAdmin(username: string, password: string): Promise<{ user: UserRecord; token: string }> {
    if (!(await this.setupWindowOpen())) throw new ConflictError('An admin already exists', 'setup_closed');
    const user = await this.users.create(username, 'admin', await hashPassword(password));
    return { user, token: this.issue(user) };
  }
}
