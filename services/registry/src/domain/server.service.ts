import { createHash, randomUUID } from 'node:crypto';
import { CHANGE_DETECTION_DEFAULT, CREDENTIAL_SETS, type ChangeDetection, type ChangeDetectionInput, OPTIONAL_CREDS, RoutingKeys, SECRET_KEYS, SECRET_MASK, type ServerSavedEvent, type SweepRequestedEvent } from '@polyphony/contracts';
import {
  createMediaServerClient,
  isMediaServerError,
  signInWithPassword,
  type LibraryInfo,
  type MediaServerClient,
  type MediaServerErrorKind,
  type ServerConnection,
  type ServerType,
  type SignInResult,
} from '@polyphony/media-servers';
import { AppError, ConflictError, NotFoundError, UpstreamUnavailableError, ValidationError, type Bus, type Logger } from '@polyphony/platform';
import type { ServerStore } from './ports';
import type { MusicServer } from './server';

export interface ServerInputData {
  name: string;
  server_type: ServerType;
  creds: Record<string, string>;
  music_libraries?: string[];
  is_default?: boolean;
  make_default?: boolean;
  change_detection?: ChangeDetectionInput;
}

/** Public shape of a server (reference section 3 field names). Secrets are masked; non-admins get no creds. */
export interface ServerView {
  server_id: string;
  id: string;
  name: string;
  server_type: ServerType;
  creds?: Record<string, string>;
  music_libraries: string[];
  is_default: boolean;
  track_count: number | null;
  matched_count: number | null;
  change_detection: ChangeDetection;
  created_at: string;
  updated_at: string;
}

/** Masks every secret credential: set secrets become SECRET_MASK, the stored value never leaves. */
export function maskCreds(creds: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(creds)) out[k] = SECRET_KEYS.includes(k) ? (v ? SECRET_MASK : '') : v;
  return out;
}

export function toView(s: MusicServer, includeCreds: boolean): ServerView {
  return {
    server_id: s.id,
    id: s.id,
    name: s.name,
    server_type: s.type,
    ...(includeCreds ? { creds: maskCreds(s.creds) } : {}),
    music_libraries: s.musicLibraries,
    is_default: s.isDefault,
    track_count: s.trackCount,
    matched_count: s.matchedCount,
    change_detection: { mode: s.changeDetection.mode, interval_seconds: s.changeDetection.intervalSeconds, push_token_set: s.changeDetection.pushTokenSha256 !== null },
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** Shortest push token accepted (characters): a webhook secret must not be guessable. */
export const PUSH_TOKEN_MIN_LENGTH = 16;

/**
 * The change-detection setting after an edit: keys left out keep `current` (or the default, poll every 900 s);
 * a blank or masked `push_token` keeps the stored one; a given one is stored as its sha256 only.
 * @throws ValidationError for a push token shorter than PUSH_TOKEN_MIN_LENGTH (the schema bounds the rest).
 */
export function mergeChangeDetection(current: MusicServer['changeDetection'] | undefined, input: ChangeDetectionInput | undefined): MusicServer['changeDetection'] {
  const base = current ?? { mode: CHANGE_DETECTION_DEFAULT.mode, intervalSeconds: CHANGE_DETECTION_DEFAULT.interval_seconds, pushTokenSha256: null };
  if (!input) return base;
  let pushTokenSha256 = base.pushTokenSha256;
  const token = input.push_token?.trim();
  if (token && token !== SECRET_MASK) {
    if (token.length < PUSH_TOKEN_MIN_LENGTH) throw new ValidationError(`change_detection.push_token must have at least ${PUSH_TOKEN_MIN_LENGTH} characters`);
    pushTokenSha256 = createHash('sha256').update(token, 'utf8').digest('hex');
  }
  return { mode: input.mode ?? base.mode, intervalSeconds: input.interval_seconds ?? base.intervalSeconds, pushTokenSha256 };
}

/**
 * Validates credentials of a kind against its accepted key sets (CREDENTIAL_SETS: jellyfin/emby
 * url,user_id,token; navidrome url,user,password or url,api_key; lyrion url (+ optional
 * user,password); plex url,token): every key of one set present and non-blank, keys of two
 * different sets not mixed, only known keys, `url` an absolute http(s) URL. Returns the cleaned
 * creds (blank values dropped, url trimmed without trailing slashes).
 * @throws ValidationError listing every problem.
 */
export function validateCreds(type: ServerType, creds: Record<string, string>): Record<string, string> {
  const sets = CREDENTIAL_SETS[type];
  const allowed = new Set([...sets.flat(), ...OPTIONAL_CREDS[type]]);
  const present = (k: string): boolean => typeof creds[k] === 'string' && creds[k].trim() !== '';
  const problems: string[] = [];
  for (const key of Object.keys(creds)) if (!allowed.has(key)) problems.push(`creds.${key} is not a ${type} credential`);
  const missing = sets.map((set) => set.filter((k) => !present(k)));
  if (!missing.some((m) => m.length === 0)) {
    const best = missing.reduce((a, m) => (m.length < a.length ? m : a), missing[0] as string[]);
    const alternatives = sets.length > 1 ? ` (or give ${sets.filter((_, i) => missing[i] !== best).map((s) => s.join(', ')).join('; ')})` : '';
    for (const key of best) problems.push(`creds.${key} is required for ${type}${alternatives}`);
  }
  // Keys that belong to one set only (navidrome: user/password vs api_key) must not be mixed.
  const exclusive = sets.map((set) => set.filter((k) => k !== 'url' && !sets.some((other) => other !== set && other.includes(k)) && present(k)));
  if (exclusive.filter((keys) => keys.length > 0).length > 1) {
    problems.push(`creds: give either ${sets.map((s) => s.filter((k) => k !== 'url').join(' + ')).join(' or ')} for ${type}, not both`);
  }
  const url = creds.url?.trim();
  if (url) {
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push('creds.url must be http(s)');
    } catch {
      problems.push('creds.url is not a valid URL');
    }
  }
  if (problems.length) throw new ValidationError(problems.join('; '));
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(creds)) if (v !== undefined && v !== '') clean[k] = k === 'url' ? normaliseUrl(v) : v;
  return clean;
}

/** A server URL as stored: trimmed, without trailing slashes. */
function normaliseUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

/**
 * Whether two server URLs are the same address (scheme, host, port, path and query; case of
 * scheme and host and trailing slashes ignored). A stored secret is only ever sent to the URL
 * it was saved with (issue 18 item 4).
 */
export function sameServerUrl(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  try {
    const x = new URL(normaliseUrl(a));
    const y = new URL(normaliseUrl(b));
    return x.origin === y.origin && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '') && x.search === y.search;
  } catch {
    return normaliseUrl(a) === normaliseUrl(b);
  }
}

/** A secret value given in a request (not blank, not the mask). */
function isGiven(v: string | undefined): v is string {
  return v !== undefined && v !== '' && v !== SECRET_MASK;
}

/** Fixed sentence per media-server error class; never text from the media server. */
const ERROR_TEXT: Record<MediaServerErrorKind, string> = {
  bad_credentials: 'The media server refused the credentials',
  permission_denied: 'The media server accepted the credentials, but this user may not read its libraries',
  unreachable: 'The media server could not be reached (connection refused, unknown host, timeout or a 5xx answer)',
  protocol: 'The address answered, but not as a media server of this kind does (check the URL, the kind, and that it does not redirect to another address)',
  not_found: 'The media server does not know something the request named (for example a library in the filter)',
};

/**
 * The HTTP error for a media-server failure while serving a request: bad or insufficient
 * credentials are the caller's input (400); an unreachable or misbehaving server is upstream
 * (502). The message is fixed per class (no upstream text); non-media-server errors pass through.
 */
export function mediaServerHttpError(err: unknown, type: ServerType): unknown {
  if (!isMediaServerError(err)) return err;
  const text = `${ERROR_TEXT[err.kind]} (${type})`;
  if (err.kind === 'bad_credentials') return new AppError('media_server_auth_failed', text, 400);
  if (err.kind === 'permission_denied') return new AppError('media_server_forbidden', text, 400);
  return new UpstreamUnavailableError(err.status ? `${text}; HTTP ${err.status}` : text, 502);
}

export type ClientFactory = (conn: ServerConnection) => MediaServerClient;
/** Jellyfin/Emby password sign-in (media-servers `signInWithPassword`); injectable for tests. */
export type SignInFunction = (type: 'jellyfin' | 'emby', url: string, username: string, password: string) => Promise<SignInResult>;

/** Input of {@link ServerService.signIn}. */
export interface SignInInput {
  server_type: 'jellyfin' | 'emby';
  url: string;
  username: string;
  password: string;
  server_id?: string;
  name?: string;
  music_libraries?: string[];
  make_default?: boolean;
}

/**
 * Server registry: add / edit / delete / default, connection tests, library lists.
 * Saving (add or edit) publishes `registry.server.saved.v1` and requests one alignment over every
 * server with `cancelRunning` (the catalogue cancels a queued or running sweep, keeping its matches).
 * Deleting publishes `registry.server.deleted.v1` (the catalogue removes that server's mapping rows).
 */
export class ServerService {
  constructor(
    private readonly repo: ServerStore,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly clientFactory: ClientFactory = createMediaServerClient,
    private readonly signInFn: SignInFunction = signInWithPassword,
  ) {}

  list(): Promise<MusicServer[]> {
    return this.repo.list();
  }

  async get(id: string): Promise<MusicServer> {
    const s = await this.repo.findById(id);
    if (!s) throw new NotFoundError(`Server ${id} not found`);
    return s;
  }

  /** Resolves a display name or internal id; undefined when absent/unknown. Absent value = the default. */
  async resolve(value: string | undefined): Promise<MusicServer | undefined> {
    if (value === undefined || value === '') return this.repo.findDefault();
    return this.repo.findByIdOrName(value);
  }

  async create(input: ServerInputData): Promise<MusicServer> {
    const creds = validateCreds(input.server_type, input.creds);
    const created = await this.repo.write(async (m) => {
      const removedSeeds = await this.repo.deleteSeedEntries(m);
      const first = (await this.repo.count(m)) === 0;
      const wantDefault = first || removedSeeds > 0 ? true : Boolean(input.is_default || input.make_default);
      const s = await this.repo.insert(m, { name: input.name.trim(), type: input.server_type, creds, musicLibraries: input.music_libraries ?? [], isDefault: false, changeDetection: mergeChangeDetection(undefined, input.change_detection) });
      if (wantDefault) await this.repo.setDefault(m, s.id);
      return (await this.repo.findById(s.id, m))!;
    });
    this.logger.info('server added', { serverId: created.id, type: created.type, isDefault: created.isDefault });
    await this.afterSave(created.id, 'created');
    return created;
  }

  /**
   * Edits a server. A blank or masked secret keeps the stored value, but only while the url stays
   * the one the secret was saved with: a new url needs every stored secret re-entered (400
   * otherwise), so an edit can never send a stored secret to another address. Giving the keys of
   * another credential set (navidrome api_key instead of user + password) replaces the stored set.
   */
  async update(id: string, patch: Partial<ServerInputData>): Promise<MusicServer> {
    const updated = await this.repo.write(async (m) => {
      const current = await this.repo.findById(id, m);
      if (!current) throw new NotFoundError(`Server ${id} not found`);
      const type = patch.server_type ?? current.type;
      const stored = type === current.type ? current.creds : {};
      const merged: Record<string, string> = { ...stored };
      for (const [k, v] of Object.entries(patch.creds ?? {})) {
        if (SECRET_KEYS.includes(k) && !isGiven(v)) continue;
        merged[k] = v;
      }
      dropReplacedCredentialSet(type, merged, patch.creds ?? {});
      if (type !== current.type) {
        // Secrets of another kind never carry over; a masked secret without a stored one is missing.
        for (const k of SECRET_KEYS) if (patch.creds?.[k] === SECRET_MASK) delete merged[k];
      }
      this.refuseStoredSecretsForNewUrl(current.creds.url, merged, patch.creds ?? {});
      const creds = validateCreds(type, merged);
      const changeDetection = mergeChangeDetection(current.changeDetection, patch.change_detection);
      const s = await this.repo.update(m, id, { name: (patch.name ?? current.name).trim(), type, creds, musicLibraries: patch.music_libraries ?? current.musicLibraries, changeDetection });
      if (patch.is_default || patch.make_default) await this.repo.setDefault(m, id);
      return (await this.repo.findById(s.id, m))!;
    });
    this.logger.info('server updated', { serverId: id });
    // An edit of the change detection alone changes nothing an alignment reads: saved is published, no alignment.
    const onlyChangeDetection = Object.keys(patch).every((k) => k === 'change_detection');
    await this.afterSave(id, 'updated', !onlyChangeDetection);
    return updated;
  }

  async makeDefault(id: string): Promise<MusicServer> {
    const s = await this.repo.write(async (m) => {
      if (!(await this.repo.findById(id, m))) throw new NotFoundError(`Server ${id} not found`);
      await this.repo.setDefault(m, id);
      return (await this.repo.findById(id, m))!;
    });
    await this.bus.publish(RoutingKeys.serverSaved, { serverId: id, action: 'default_changed' } satisfies ServerSavedEvent);
    return s;
  }

  /** Deletes a server; refuses the default (409). The catalogue drops its mapping rows on the event; analyzed songs stay. */
  async delete(id: string): Promise<void> {
    await this.repo.write(async (m) => {
      const s = await this.repo.findById(id, m);
      if (!s) throw new NotFoundError(`Server ${id} not found`);
      if (s.isDefault) throw new ConflictError('The default server cannot be deleted; make another server the default first', 'default_server');
      await this.repo.delete(m, id);
    });
    this.logger.info('server deleted', { serverId: id });
    await this.bus.publish(RoutingKeys.serverDeleted, { serverId: id });
  }

  private async afterSave(serverId: string, action: 'created' | 'updated', align = true): Promise<void> {
    await this.bus.publish(RoutingKeys.serverSaved, { serverId, action } satisfies ServerSavedEvent);
    if (align) await this.requestAlignment(true);
  }

  /** Enqueues one alignment over every server (cancelRunning: a save cancels queued/running sweeps first). Returns the task id. */
  async requestAlignment(cancelRunning: boolean): Promise<string> {
    const taskId = randomUUID();
    await this.bus.publish(RoutingKeys.sweepRequested, { taskId, fullRefresh: true, cancelRunning } satisfies SweepRequestedEvent);
    return taskId;
  }

  /** Enqueues a sweep of one server. Returns the task id. */
  async requestSweep(serverId: string): Promise<string> {
    await this.get(serverId);
    const taskId = randomUUID();
    await this.bus.publish(RoutingKeys.sweepRequested, { taskId, serverId, fullRefresh: true, cancelRunning: false } satisfies SweepRequestedEvent);
    return taskId;
  }

  /**
   * Throws ValidationError when `merged.url` differs from the url the server was saved with
   * (`storedUrl`) while `merged` still holds a stored secret (one `given` did not re-enter): a
   * stored secret is only ever sent to the url it was saved with; a new url needs it re-entered.
   */
  private refuseStoredSecretsForNewUrl(storedUrl: string | undefined, merged: Record<string, string>, given: Record<string, string>): void {
    if (!merged.url || sameServerUrl(merged.url, storedUrl)) return;
    const reused = SECRET_KEYS.filter((k) => isGiven(merged[k]) && !isGiven(given[k]));
    if (reused.length) {
      throw new ValidationError(
        `The url differs from the one this server was saved with: re-enter ${reused.map((k) => `creds.${k}`).join(', ')} (a stored secret is only sent to the url it was saved with)`,
      );
    }
  }

  /**
   * Credentials for a test or library listing. With `serverId`, blank or masked secrets are taken
   * from that stored server (same kind), but only while the url is the one it was saved with
   * (400 otherwise); an unknown `serverId` is 404.
   */
  private async credsForTest(type: ServerType, creds: Record<string, string>, serverId?: string): Promise<Record<string, string>> {
    const merged = { ...creds };
    if (serverId) {
      const stored = await this.repo.findById(serverId);
      if (!stored) throw new NotFoundError(`Server ${serverId} not found`);
      if (stored.type === type) {
        for (const k of SECRET_KEYS) if (!isGiven(merged[k]) && stored.creds[k]) merged[k] = stored.creds[k] as string;
        dropReplacedCredentialSet(type, merged, creds);
        this.refuseStoredSecretsForNewUrl(stored.creds.url, merged, creds);
      }
    }
    for (const k of SECRET_KEYS) if (!isGiven(merged[k])) delete merged[k];
    return validateCreds(type, merged);
  }

  /**
   * Tests a connection: reachable, credentials accepted, version, libraries, a sample, path format.
   * Returns only this structured result: no text from the media server (the error is a fixed
   * sentence per class). Never throws for a failing media server; bad input is a 400.
   */
  async test(input: { server_type: ServerType; creds: Record<string, string>; music_libraries?: string[]; server_id?: string }): Promise<ServerTestOutcome> {
    const creds = await this.credsForTest(input.server_type, input.creds, input.server_id);
    const client = this.clientFactory({ type: input.server_type, creds, musicLibraries: input.music_libraries });
    const failed = (kind: MediaServerErrorKind): ServerTestOutcome => ({
      ok: false, reachable: kind !== 'unreachable', server_type: input.server_type, server_name: null, version: null, library_count: 0, libraries: [],
      sample_count: 0, path_format: 'none', error_class: kind, error: ERROR_TEXT[kind], auth_failed: kind === 'bad_credentials', warnings: [],
    });
    let r;
    try {
      r = await client.testConnection();
    } catch (err) {
      const kind: MediaServerErrorKind = isMediaServerError(err) ? err.kind : 'protocol';
      this.logger.warn('server test failed', { serverType: input.server_type, errorClass: kind, error: isMediaServerError(err) ? undefined : (err as Error)?.name });
      return failed(kind);
    }
    const warnings: string[] = [];
    if (r.sampleTrackCount > 0 && !r.pathsLookAbsolute) warnings.push('Track paths are not absolute: path-based matching across servers will fall back to metadata');
    if (r.ok && r.sampleTrackCount === 0) warnings.push('Connected, but no tracks were found (check the library filter)');
    const kind = r.ok ? null : (r.errorKind ?? 'protocol');
    return {
      ok: r.ok,
      reachable: kind !== 'unreachable',
      server_type: input.server_type,
      server_name: bounded(r.serverName),
      version: bounded(r.version),
      library_count: r.libraries.length,
      libraries: r.libraries.map((l) => ({ id: l.id, name: l.name })),
      sample_count: r.sampleTrackCount,
      path_format: r.sampleTrackCount === 0 ? 'none' : r.pathsLookAbsolute ? 'absolute' : 'relative',
      error_class: kind,
      error: kind ? ERROR_TEXT[kind] : null,
      auth_failed: kind === 'bad_credentials',
      warnings,
    };
  }

  /**
   * Library filter units of a server (for the add/edit form).
   * @throws 400 (bad input, or credentials the media server refuses), 502 (unreachable or
   *   misbehaving media server), 404 (unknown server_id).
   */
  async libraries(input: { server_type: ServerType; creds: Record<string, string>; server_id?: string }): Promise<LibraryInfo[]> {
    const creds = await this.credsForTest(input.server_type, input.creds, input.server_id);
    try {
      return await this.clientFactory({ type: input.server_type, creds }).listLibraries();
    } catch (err) {
      throw mediaServerHttpError(err, input.server_type);
    }
  }

  /**
   * Jellyfin/Emby username + password sign-in: `AuthenticateByName` yields a token and the user id,
   * stored as `{url, user_id, token}` on a new server (`name` required) or on `server_id`; the
   * password is used for this one request and never stored or logged.
   * @throws 400 (bad input, refused username/password, unknown kind for server_id), 404 (unknown
   *   server_id), 502 (media server unreachable or not answering as Jellyfin/Emby), 409 (name taken).
   */
  async signIn(input: SignInInput): Promise<MusicServer> {
    const url = normaliseUrl(input.url);
    validateCreds(input.server_type, { url, user_id: 'placeholder', token: 'placeholder' });
    if (input.server_id) {
      const current = await this.get(input.server_id);
      if (current.type !== input.server_type) throw new ValidationError(`Server ${input.server_id} is a ${current.type} server, not ${input.server_type}`);
    } else if (!input.name) {
      throw new ValidationError('name is required to add a server (or give server_id to update one)');
    }
    let signed: SignInResult;
    try {
      signed = await this.signInFn(input.server_type, url, input.username, input.password);
    } catch (err) {
      throw mediaServerHttpError(err, input.server_type);
    }
    const creds = { url, user_id: signed.userId, token: signed.token };
    this.logger.info('media-server sign-in succeeded', { serverType: input.server_type, serverId: input.server_id });
    const extra = { music_libraries: input.music_libraries, make_default: input.make_default };
    if (input.server_id) return this.update(input.server_id, { creds, ...extra });
    return this.create({ name: input.name as string, server_type: input.server_type, creds, ...extra });
  }

  /** Connection settings of a server, with secrets, for other services (internal callers only). */
  connection(s: MusicServer): ServerConnection {
    return { type: s.type, creds: s.creds, musicLibraries: s.musicLibraries };
  }
}

/** The structured connection-test result (contracts `ServerTestResult`). */
export interface ServerTestOutcome {
  ok: boolean;
  reachable: boolean;
  server_type: ServerType;
  server_name: string | null;
  version: string | null;
  library_count: number;
  libraries: Array<{ id: string; name: string }>;
  sample_count: number;
  path_format: 'none' | 'absolute' | 'relative';
  error_class: MediaServerErrorKind | null;
  error: string | null;
  auth_failed: boolean;
  warnings: string[];
}

/** An upstream-reported name or version, capped at 200 characters; null when absent. */
function bounded(v: string | undefined): string | null {
  return v ? v.slice(0, 200) : null;
}

/** The one credential set whose own keys (in no other set) `given` sets to real values, if exactly one. */
function targetedSet(type: ServerType, given: Record<string, string>): string[] | undefined {
  const sets = CREDENTIAL_SETS[type];
  if (sets.length < 2) return undefined;
  const has = (k: string): boolean => (SECRET_KEYS.includes(k) ? isGiven(given[k]) : Boolean(given[k]?.trim()));
  const hit = sets.filter((set) => set.some((k) => k !== 'url' && !sets.some((o) => o !== set && o.includes(k)) && has(k)));
  return hit.length === 1 ? hit[0] : undefined;
}

/**
 * When `given` aims at one credential set of a kind with several (navidrome: api_key vs
 * user + password), removes the other sets' keys from `merged`, so switching sets replaces the
 * stored one instead of mixing them.
 */
function dropReplacedCredentialSet(type: ServerType, merged: Record<string, string>, given: Record<string, string>): void {
  const target = targetedSet(type, given);
  if (!target) return;
  for (const set of CREDENTIAL_SETS[type]) {
    if (set === target) continue;
    for (const k of set) if (!target.includes(k)) delete merged[k];
  }
}
