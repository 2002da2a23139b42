import type { FingerprintParams, TrackRowDto } from '@polyphony/contracts';
import type { ProviderTrack, ServerConnection } from '@polyphony/media-servers';
import { AppError, NotFoundError, UpstreamUnavailableError, type Logger } from '@polyphony/platform';
import { normaliseInto } from '@polyphony/vectors';
import type { MediaClientFactory, RegistryPort } from '../core/ports';
import type { RankedRow, RequestScope } from '../core/scope';

/** Reference defaults (reference-implementation.md 2.7 "Sonic fingerprint"). */
export const FINGERPRINT_DEFAULT_N = 100;
/** Most recent history songs used as seeds (reference SONIC_FINGERPRINT_TOP_N_SONGS). */
export const FINGERPRINT_SEEDS = 20;
/** History entries requested from the media server (more than the seeds: some are not analysed yet). */
export const FINGERPRINT_HISTORY_LIMIT = 100;
/** Recency half-life in days. */
export const RECENCY_HALF_LIFE_DAYS = 30;
/** Weight of a history entry without a last-played date. */
export const WEIGHT_NO_DATE = 0.25;
/** Weight of a history entry whose date cannot be parsed. */
export const WEIGHT_BAD_DATE = 0.5;

/**
 * Recency weight of one listening-history entry: `exp(-ln 2 / 30 * days since last played)` (30-day
 * half-life; a future date counts as today), 0.25 without a date and 0.5 for an unparsable one
 * (reference values, `tasks/sonic_fingerprint_manager.py`, reference-implementation.md 2.7).
 */
export function recencyWeight(lastPlayed: string | undefined, now: number): number {
  if (!lastPlayed) return WEIGHT_NO_DATE;
  const t = Date.parse(lastPlayed);
  if (!Number.isFinite(t)) return WEIGHT_BAD_DATE;
  const days = Math.max(0, (now - t) / 86_400_000);
  return Math.exp((-Math.LN2 / RECENCY_HALF_LIFE_DAYS) * days);
}

/**
 * Sonic fingerprint (spec "Selecting a server at runtime" 8, reference "Sonic fingerprint"): the selected
 * server's listening history, read with that server's stored credentials (overridable per call), each
 * entry resolved to its canonical id through the catalogue's input resolver; the first FINGERPRINT_SEEDS
 * distinct analysed songs are the seeds, weighted by `recencyWeight`; the normalised weighted mean of their
 * unit embeddings is queried on the server's songs. Seeds come first (distance 0), then the nearest songs
 * (cosine distance to the centroid); n rows in total, all under the server's ids.
 */
export class FingerprintService {
  constructor(
    private readonly registry: RegistryPort,
    private readonly clients: MediaClientFactory,
    private readonly logger: Logger,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /**
   * @throws UpstreamUnavailableError (502) when the media server cannot be read
   * @throws NotFoundError when a given media-server user name does not exist
   */
  async generate(scope: RequestScope, params: FingerprintParams, n: number, now = Date.now()): Promise<TrackRowDto[]> {
    if (scope.serverId === undefined) return [];
    const server = await this.registry.getServer(scope.serverId);
    const connection = await this.withOverrides(server.connection, params);
    let history: ProviderTrack[];
    try {
      history = await this.clients(connection).getListeningHistory(FINGERPRINT_HISTORY_LIMIT);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new UpstreamUnavailableError(`Could not read the listening history of ${server.name}: ${(err as Error).message}`, 502, { cause: err });
    }
    if (history.length === 0) return [];
    const rows = await scope.rowsOfInput(history.map((h) => h.id));
    const index = scope.gen.index;
    const seeds: Array<{ row: number; weight: number }> = [];
    const taken = new Set<number>();
    history.forEach((h, i) => {
      const row = rows[i]!;
      if (row < 0 || taken.has(row) || seeds.length >= Math.min(FINGERPRINT_SEEDS, n)) return;
      taken.add(row);
      seeds.push({ row, weight: recencyWeight(h.lastPlayed, now) });
    });
    if (seeds.length === 0) return [];
    const dim = index.dim;
    const sum = new Float32Array(dim);
    for (const s of seeds) {
      const v = index.getVector(s.row);
      for (let d = 0; d < dim; d++) sum[d]! += s.weight * v[d]!;
    }
    const centroid = new Float32Array(dim);
    if (!(normaliseInto(sum, 0, centroid, 0, dim) > 0)) centroid.set(index.getVector(seeds[0]!.row));
    const mask = await scope.mask();
    const want = n - seeds.length;
    const ranked: RankedRow[] = seeds.map((s) => ({ row: s.row, distance: 0 }));
    if (want > 0 && mask.count > 0) {
      // A little extra absorbs rows the output mapping drops.
      const k = Math.min(mask.count, want + Math.ceil(want / 10) + 2);
      for (const h of index.search(centroid, { k, mask, exclude: taken })) ranked.push(h);
    }
    return (await scope.present(ranked)).slice(0, n);
  }

  /**
   * The stored connection with per-call credentials applied: Jellyfin/Emby `jellyfin_token` replaces the
   * token and `jellyfin_user_identifier` the user (a 32-hex user id is used as is; a user name is looked
   * up in the server's `/Users` list); Navidrome `navidrome_user`/`navidrome_password` replace the user
   * and password. Other kinds, and parameters for another kind, are ignored (reference behaviour).
   */
  async withOverrides(conn: ServerConnection, params: FingerprintParams): Promise<ServerConnection> {
    const creds = { ...conn.creds };
    if (conn.type === 'jellyfin' || conn.type === 'emby') {
      if (params.jellyfin_token) creds.token = params.jellyfin_token;
      const who = params.jellyfin_user_identifier;
      if (who) {
        const compact = who.replace(/-/g, '');
        if (/^[0-9a-f]{32}$/i.test(compact)) creds.user_id = compact.toLowerCase();
        else {
          const id = await this.lookupUser(creds.url ?? '', creds.token ?? '', who);
          if (id) creds.user_id = id;
        }
      }
    } else if (conn.type === 'navidrome') {
      if (params.navidrome_user) {
        creds.user = params.navidrome_user;
        delete creds.api_key;
      }
      if (params.navidrome_password) creds.password = params.navidrome_password;
    }
    return { ...conn, creds };
  }

  /**
   * Id of the Jellyfin/Emby user called `name` (case-insensitive) from `GET /Users`.
   * @returns undefined when the list cannot be read with this token (the stored user is then used)
   * @throws NotFoundError when the list was read and has no such user
   */
  private async lookupUser(url: string, token: string, name: string): Promise<string | undefined> {
    let users: Array<{ Name?: unknown; Id?: unknown }>;
    try {
      const res = await this.fetchImpl(`${url.replace(/\/+$/, '')}/Users`, {
        headers: { Authorization: `MediaBrowser Client="polyphony", Device="index", DeviceId="polyphony-index", Version="1", Token="${token}"`, 'X-Emby-Token': token, Accept: 'application/json' },
        signal: AbortSignal.timeout(10_000),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      users = (await res.json()) as Array<{ Name?: unknown; Id?: unknown }>;
      if (!Array.isArray(users)) throw new Error('not a list');
    } catch (err) {
      this.logger.warn('media-server user list unavailable; using the stored user', { err: (err as Error).message });
      return undefined;
    }
    const hit = users.find((u) => typeof u.Name === 'string' && u.Name.toLowerCase() === name.toLowerCase());
    if (!hit || typeof hit.Id !== 'string') throw new NotFoundError(`Media-server user "${name}" not found`);
    return hit.Id.replace(/-/g, '').toLowerCase();
  }
}
