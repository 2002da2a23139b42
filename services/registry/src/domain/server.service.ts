import { randomUUID } from 'node:crypto';
import { OPTIONAL_CREDS, REQUIRED_CREDS, RoutingKeys, SECRET_KEYS, SECRET_MASK, type ServerSavedEvent, type SweepRequestedEvent } from '@polyphony/contracts';
import { BadCredentialsError, createMediaServerClient, type LibraryInfo, type MediaServerClient, type ServerConnection, type ServerType } from '@polyphony/media-servers';
import { ConflictError, NotFoundError, ValidationError, type Bus, type Logger } from '@polyphony/platform';
import type { ServerRepository } from '../store/server.repository';
import type { MusicServer } from './server';

export interface ServerInputData {
  name: string;
  server_type: ServerType;
  creds: Record<string, string>;
  music_libraries?: string[];
  is_default?: boolean;
  make_default?: boolean;
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
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/**
 * Validates credentials of a kind: required keys present and non-blank, only known keys, `url` an
 * absolute http(s) URL. Throws ValidationError listing every problem.
 */
export function validateCreds(type: ServerType, creds: Record<string, string>): Record<string, string> {
  const required = REQUIRED_CREDS[type];
  const allowed = new Set([...required, ...OPTIONAL_CREDS[type]]);
  const problems: string[] = [];
  for (const key of required) if (!creds[key]?.trim()) problems.push(`creds.${key} is required for ${type}`);
  for (const key of Object.keys(creds)) if (!allowed.has(key)) problems.push(`creds.${key} is not a ${type} credential`);
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
  for (const [k, v] of Object.entries(creds)) if (v !== undefined && v !== '') clean[k] = k === 'url' ? v.trim().replace(/\/+$/, '') : v;
  return clean;
}

export type ClientFactory = (conn: ServerConnection) => MediaServerClient;

/**
 * Server registry: add / edit / delete / default, connection tests, library lists.
 * Saving (add or edit) publishes `registry.server.saved.v1` and requests one alignment over every
 * server with `cancelRunning` (the catalogue cancels a queued or running sweep, keeping its matches).
 * Deleting publishes `registry.server.deleted.v1` (the catalogue removes that server's mapping rows).
 */
export class ServerService {
  constructor(
    private readonly repo: ServerRepository,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly clientFactory: ClientFactory = createMediaServerClient,
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
      const s = await this.repo.insert(m, { name: input.name.trim(), type: input.server_type, creds, musicLibraries: input.music_libraries ?? [], isDefault: false });
      if (wantDefault) await this.repo.setDefault(m, s.id);
      return (await this.repo.findById(s.id, m))!;
    });
    this.logger.info('server added', { serverId: created.id, type: created.type, isDefault: created.isDefault });
    await this.afterSave(created.id, 'created');
    return created;
  }

  /** Edits a server. A blank or masked secret keeps the stored value. */
  async update(id: string, patch: Partial<ServerInputData>): Promise<MusicServer> {
    const updated = await this.repo.write(async (m) => {
      const current = await this.repo.findById(id, m);
      if (!current) throw new NotFoundError(`Server ${id} not found`);
      const type = patch.server_type ?? current.type;
      const merged: Record<string, string> = { ...(type === current.type ? current.creds : {}) };
      for (const [k, v] of Object.entries(patch.creds ?? {})) {
        if (SECRET_KEYS.includes(k) && (v === '' || v === SECRET_MASK)) continue;
        merged[k] = v;
      }
      if (type !== current.type) {
        // Secrets of another kind never carry over; a masked secret without a stored one is missing.
        for (const k of SECRET_KEYS) if (patch.creds?.[k] === SECRET_MASK) delete merged[k];
      }
      const creds = validateCreds(type, merged);
      const s = await this.repo.update(m, id, { name: (patch.name ?? current.name).trim(), type, creds, musicLibraries: patch.music_libraries ?? current.musicLibraries });
      if (patch.is_default || patch.make_default) await this.repo.setDefault(m, id);
      return (await this.repo.findById(s.id, m))!;
    });
    this.logger.info('server updated', { serverId: id });
    await this.afterSave(id, 'updated');
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

  private async afterSave(serverId: string, action: 'created' | 'updated'): Promise<void> {
    await this.bus.publish(RoutingKeys.serverSaved, { serverId, action } satisfies ServerSavedEvent);
    await this.requestAlignment(true);
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

  /** Credentials for a test of an existing server: blank/masked secrets are taken from the stored row. */
  private async credsForTest(type: ServerType, creds: Record<string, string>, serverId?: string): Promise<Record<string, string>> {
    const merged = { ...creds };
    if (serverId) {
      const stored = await this.repo.findById(serverId);
      if (stored && stored.type === type) for (const k of SECRET_KEYS) if (!merged[k] || merged[k] === SECRET_MASK) if (stored.creds[k]) merged[k] = stored.creds[k];
    }
    for (const k of SECRET_KEYS) if (merged[k] === SECRET_MASK) delete merged[k];
    return validateCreds(type, merged);
  }

  /** Tests a connection before saving: reachable, credentials accepted, sample count, libraries, path format. Never throws for a failing server. */
  async test(input: { server_type: ServerType; creds: Record<string, string>; music_libraries?: string[]; server_id?: string }) {
    const creds = await this.credsForTest(input.server_type, input.creds, input.server_id);
    const client = this.clientFactory({ type: input.server_type, creds, musicLibraries: input.music_libraries });
    try {
      const r = await client.testConnection();
      const warnings: string[] = [];
      if (r.sampleTrackCount > 0 && !r.pathsLookAbsolute) warnings.push('Track paths are not absolute: path-based matching across servers will fall back to metadata');
      return {
        ok: r.ok,
        error: r.ok ? null : (r.message ?? 'Connection failed'),
        auth_failed: r.errorKind === 'bad_credentials',
        sample_count: r.sampleTrackCount,
        path_format: (r.sampleTrackCount === 0 ? 'none' : r.pathsLookAbsolute ? 'absolute' : 'relative') as 'none' | 'absolute' | 'relative',
        libraries: r.libraries.map((l) => ({ id: l.id, name: l.name })),
        server_name: r.serverName ?? null,
        warnings,
      };
    } catch (err) {
      return { ok: false, error: (err as Error).message, auth_failed: err instanceof BadCredentialsError, sample_count: 0, path_format: 'none' as const, libraries: [], server_name: null, warnings: [] };
    }
  }

  /** Library filter units of a server (for the add/edit form). */
  async libraries(input: { server_type: ServerType; creds: Record<string, string>; server_id?: string }): Promise<LibraryInfo[]> {
    const creds = await this.credsForTest(input.server_type, input.creds, input.server_id);
    return this.clientFactory({ type: input.server_type, creds }).listLibraries();
  }

  /** Connection settings of a server, with secrets, for other services (internal callers only). */
  connection(s: MusicServer): ServerConnection {
    return { type: s.type, creds: s.creds, musicLibraries: s.musicLibraries };
  }
}
