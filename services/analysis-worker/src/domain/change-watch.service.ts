import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { CHANGE_DETECTION_DEFAULT, RoutingKeys, type AnalysisTrackRequested, type RemovalCheckResponse } from '@polyphony/contracts';
import type { ProviderTrack } from '@polyphony/media-servers';
import { ConflictError, NotFoundError, UnauthorizedError, jitteredBackoffMs, leaseOwnerName, type Bus, type Logger } from '@polyphony/platform';
import type { AnalysisRunStore, ChangeWatchStore, MediaClientFactory, RegistryPort, ServerInfo, WatchState } from './ports';
import { metadataHash } from './track-processor';

/** What the change watch needs from the catalogue: mapped provider ids, files changed in place, and the removal check. */
export interface WatchCataloguePort {
  mappedProviderIds(serverId: string, providerIds: string[]): Promise<Set<string>>;
  /**
   * Of these listed tracks, the mapped ones whose stored file stamp is set and differs from the listed `fileStamp`
   * (changed in place under the same provider id, issue 35). POST /internal/mappings/lookup with `stamps`.
   */
  changedProviderIds(serverId: string, tracks: ReadonlyArray<Pick<ProviderTrack, 'id' | 'fileStamp'>>): Promise<Set<string>>;
  /** POST /internal/removals/:serverId: prunes the server's mappings of files gone (the cleaning's rule), lists unmapped files. */
  removalCheck(serverId: string): Promise<RemovalCheckResponse>;
}

/** The run store's part the change watch uses: exclusions, queued rows and their publish confirmation. */
export type WatchRunStore = Pick<AnalysisRunStore, 'isExcluded' | 'enqueue' | 'markPublished'>;

export interface ChangeWatchOptions {
  /** How often this process looks for due servers, ms (default 1000). */
  tickMs?: number;
  /** Lease of one server's check, ms (default 120 000; renewed every third of it while the check runs). */
  leaseTtlMs?: number;
  /** The registry's server list is read at most this often, ms (default 5000). */
  serversCacheMs?: number;
  /** Newest albums read per change (default 50). */
  recentAlbums?: number;
  /** The newest-album pass stops after this many albums in a row without a new song (default 3). */
  knownAlbumsToStop?: number;
  /** Most tracks one change enqueues (default 1000): a larger import is left to a full analysis run (logged). */
  maxTracksPerCheck?: number;
  /** First retry delay after a failed check, ms (doubles, jittered, at most the server's interval; default 5000). */
  retryBaseMs?: number;
  /** The run's TOP_N_MOODS for the requests (default: the processor's setting). */
  topNMoods?: () => Promise<number | undefined>;
}

/** What one check found: the new token, and for a change what it enqueued and removed. */
export interface CheckResult {
  token: string;
  /** First check of the server: the token is the baseline, nothing is analysed. */
  baseline: boolean;
  changed: boolean;
  /** The batch id (the `taskId` of its analysis requests), when something was enqueued. */
  batchId?: string;
  added: number;
  /** Mapped files changed in place (listed stamp differs from the stored one) queued for re-analysis. */
  changedFiles: number;
  removed: number;
  /** The removal check refused to prune (the listing looked partial). */
  removalRefused: boolean;
  /** Unmapped files left for a full analysis run (over maxTracksPerCheck). */
  leftOver: number;
}

/** A queued request is taken as in flight (not published again) for this long, seconds. */
const IN_FLIGHT_SECONDS = 3600;

/**
 * Change detection per server (issue 35), run by every analysis-worker replica; one replica checks a server at a
 * time (a lease on its `analysis.change_watch` row), and the row keeps the state across restarts.
 *
 * A check: one cheap call for the library's change token (`libraryChangeToken`, per kind). The first token is the
 * baseline (nothing analysed: a full analysis run covers what was there). An unchanged token ends the check. A new
 * token means the library changed:
 * 1. the newest albums (`iterateRecentAlbumTracks`, newest first, stopping after a few albums without a new song):
 *    their unmapped, not excluded, not already queued tracks are enqueued and published as ordinary
 *    `analysis.track.requested.v1` messages under a fresh batch id (the same pipeline as a run, identity included);
 * 2. the catalogue's removal check (one metadata listing; the cleaning's partial-listing rule; mapping rows only),
 *    whose list of unmapped files also catches songs added where no newest-album list shows them, and whose list of
 *    changed files (listed stamp, e.g. `size:<bytes>`, differs from the mapping's stored one) is re-analysed: those
 *    mapped files are published with `changedFile` (the same pipeline; the catalogue decides again whether the file
 *    is still the same song, and moves the mapping when it is not). Tracks of step 1 are compared the same way.
 * No index rebuild is requested: the index applies each `analysis.track.completed.v1` and mapping-log change in place.
 * While a full analysis run is live, checks wait (the run sees every change). A failed check (media server, catalogue,
 * broker) is logged and retried with a jittered backoff up to the interval; nothing throws out of the loop.
 */
export class ChangeWatchService {
  private readonly owner = leaseOwnerName('change-watch');
  private readonly tickMs: number;
  private readonly leaseTtlMs: number;
  private readonly serversCacheMs: number;
  private readonly recentAlbums: number;
  private readonly knownAlbumsToStop: number;
  private readonly maxTracksPerCheck: number;
  private readonly retryBaseMs: number;
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private stopped = true;
  private servers?: { at: number; list: ServerInfo[] };
  private readonly checks = new Map<string, Promise<void>>();
  private lastPrune = 0;

  constructor(
    private readonly store: ChangeWatchStore,
    private readonly runs: WatchRunStore,
    private readonly registry: RegistryPort,
    private readonly catalogue: WatchCataloguePort,
    private readonly clientFactory: MediaClientFactory,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly options: ChangeWatchOptions = {},
  ) {
    this.tickMs = options.tickMs ?? 1000;
    this.leaseTtlMs = options.leaseTtlMs ?? 120_000;
    this.serversCacheMs = options.serversCacheMs ?? 5000;
    this.recentAlbums = options.recentAlbums ?? 50;
    this.knownAlbumsToStop = options.knownAlbumsToStop ?? 3;
    this.maxTracksPerCheck = options.maxTracksPerCheck ?? 1000;
    this.retryBaseMs = options.retryBaseMs ?? 5000;
  }

  /** Starts the loop (a tick every `tickMs`). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops the loop, waits for running checks and hands their leases back (another replica checks at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.checks.values()]);
    await this.store.releaseAll(this.owner).catch(() => undefined);
  }

  /** Resolves when no check runs in this process (tests). */
  async idle(): Promise<void> {
    await this.ticking;
    await Promise.allSettled([...this.checks.values()]);
  }

  /**
   * A webhook call (POST /api/hooks/servers/:id/changed): the server's check runs at the next tick of any replica.
   * @throws NotFoundError (404) unknown server; UnauthorizedError (401) no push token set or a wrong one;
   *   ConflictError (409) the server's change detection is off.
   */
  async nudge(serverId: string, token: string | undefined): Promise<void> {
    let server: ServerInfo;
    try {
      server = await this.registry.getServer(serverId);
    } catch (err) {
      if ((err as { httpStatus?: number }).httpStatus === 404) throw new NotFoundError(`Server ${serverId} not found`);
      throw err;
    }
    const want = server.changeDetection?.pushTokenSha256;
    if (!want || !token || !sameSha256(token, want)) throw new UnauthorizedError('A valid push token is required');
    if (!watched(server)) throw new ConflictError('Change detection is off for this server');
    if (!(await this.store.nudge(serverId))) {
      await this.store.sync((await this.serverList(true)).filter(watched).map((s) => s.id));
      await this.store.nudge(serverId);
    }
    this.logger.info('change check requested by webhook', { serverId });
    this.schedule(0);
  }

  /** Every server's watch state (the status view). */
  status(): ReturnType<ChangeWatchStore['list']> {
    return this.store.list();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule(this.tickMs);
      });
    }, ms);
    this.timer.unref();
  }

  /** One pass: due servers are leased and checked (each in the background). Never throws. */
  async tick(): Promise<void> {
    try {
      const servers = (await this.serverList(false)).filter(watched);
      await this.store.sync(servers.map((s) => s.id));
      if (await this.store.fullRunLive()) return;
      const idle = servers.filter((s) => !this.checks.has(s.id));
      const intervals = idle.map((s) => s.changeDetection?.intervalSeconds ?? CHANGE_DETECTION_DEFAULT.interval_seconds);
      const claimed = await this.store.claimDue(idle.map((s) => s.id), this.owner, Math.ceil(this.leaseTtlMs / 1000), intervals);
      for (const state of claimed) {
        const server = servers.find((s) => s.id === state.serverId);
        if (!server) continue;
        const p = this.runCheck(server, state).finally(() => this.checks.delete(server.id));
        this.checks.set(server.id, p);
      }
      if (Date.now() - this.lastPrune > 3600_000) {
        this.lastPrune = Date.now();
        const n = await this.store.pruneBatches(7);
        if (n > 0) this.logger.info('old change-batch track rows removed', { rows: n });
      }
    } catch (err) {
      this.logger.warn('change watch pass failed; retried at the next tick', { err: (err as Error).message });
    }
  }

  private async serverList(fresh: boolean): Promise<ServerInfo[]> {
    if (!fresh && this.servers && Date.now() - this.servers.at < this.serversCacheMs) return this.servers.list;
    const list = await this.registry.listServers();
    this.servers = { at: Date.now(), list };
    return list;
  }

  /** Runs one leased check, renewing the lease meanwhile, and writes its outcome (or the failure and its backoff). */
  private async runCheck(server: ServerInfo, state: WatchState): Promise<void> {
    const interval = server.changeDetection?.intervalSeconds ?? CHANGE_DETECTION_DEFAULT.interval_seconds;
    const leaseSeconds = Math.ceil(this.leaseTtlMs / 1000);
    const renew = setInterval(() => {
      this.store.renew(server.id, this.owner, leaseSeconds).catch(() => undefined);
    }, Math.max(1000, Math.floor(this.leaseTtlMs / 3)));
    renew.unref();
    const started = Date.now();
    try {
      const r = await this.check(server, state.token);
      await this.store.finish(server.id, this.owner, { token: r.token, nextCheckSeconds: interval, failures: 0, lastError: null, change: r.changed ? { added: r.added, removed: r.removed } : undefined });
      if (r.changed) this.logger.info('library change handled', { serverId: server.id, batchId: r.batchId, added: r.added, changedFiles: r.changedFiles, removed: r.removed, removalRefused: r.removalRefused, leftOver: r.leftOver, elapsedMs: Date.now() - started });
      else if (r.baseline) this.logger.info('change detection baseline taken', { serverId: server.id });
    } catch (err) {
      const failures = state.failures + 1;
      const delayMs = Math.min(interval * 1000, jitteredBackoffMs(failures, this.retryBaseMs, 15 * 60_000));
      const message = (err as Error).message ?? String(err);
      this.logger.warn('change check failed; retrying with backoff', { serverId: server.id, failures, retryInMs: delayMs, err: message });
      await this.store.finish(server.id, this.owner, { token: state.token, nextCheckSeconds: Math.max(1, Math.round(delayMs / 1000)), failures, lastError: message }).catch((e: unknown) => {
        this.logger.warn('change check state not written; the lease lapses and the check is retried', { serverId: server.id, err: (e as Error).message });
      });
    } finally {
      clearInterval(renew);
    }
  }

  /** One check of one server (see class doc). Throws on any failure before the token is stored (the check is retried whole). */
  async check(server: ServerInfo, previous: string | null): Promise<CheckResult> {
    const client = this.clientFactory(server.connection);
    const token = await client.libraryChangeToken(previous ?? undefined);
    const result: CheckResult = { token, baseline: previous === null, changed: false, added: 0, changedFiles: 0, removed: 0, removalRefused: false, leftOver: 0 };
    if (previous === null || token === previous) return result;
    result.changed = true;
    const batchId = randomUUID();
    const topNMoods = await this.options.topNMoods?.().catch(() => undefined);
    const seen = new Set<string>();
    /**
     * Enqueues and publishes the new tracks of `tracks` (not mapped, not excluded) and the mapped ones changed in place
     * (listed stamp differs from the stored one: re-analysed with `changedFile`); returns how many.
     */
    const consider = async (tracks: ProviderTrack[]): Promise<number> => {
      const fresh = tracks.filter((t) => !seen.has(t.id));
      for (const t of fresh) seen.add(t.id);
      if (fresh.length === 0) return 0;
      const ids = fresh.map((t) => t.id);
      const [mapped, inFlight] = await Promise.all([this.catalogue.mappedProviderIds(server.id, ids), this.store.inFlight(server.id, ids, IN_FLIGHT_SECONDS)]);
      const stamped = fresh.filter((t) => mapped.has(t.id) && t.fileStamp !== undefined && !inFlight.has(t.id));
      const changed = stamped.length > 0 ? await this.catalogue.changedProviderIds(server.id, stamped) : new Set<string>();
      // A changed file whose new content could not be analysed is excluded like a new one (until its metadata changes),
      // so it is not downloaded again at every check.
      const open = [...fresh.filter((t) => !mapped.has(t.id) && !inFlight.has(t.id)), ...stamped.filter((t) => changed.has(t.id))];
      const hashes = new Map(open.map((t) => [t.id, metadataHash(toMessageTrack(t))]));
      const excluded = await this.runs.isExcluded(server.id, open.map((t) => t.id), hashes);
      let wanted = open.filter((t) => !excluded.has(t.id));
      const room = this.maxTracksPerCheck - result.added - result.changedFiles;
      if (wanted.length > room) {
        result.leftOver += wanted.length - Math.max(0, room);
        wanted = wanted.slice(0, Math.max(0, room));
      }
      if (wanted.length === 0) return 0;
      const queued = new Set(await this.runs.enqueue(batchId, server.id, wanted.map((t) => t.id)));
      const publish = wanted.filter((t) => queued.has(t.id));
      for (let p = 0; p < publish.length; p += 32) {
        const slice = publish.slice(p, p + 32);
        await Promise.all(
          slice.map((t) =>
            this.bus.publish(RoutingKeys.analysisTrackRequested, { taskId: batchId, serverId: server.id, track: toMessageTrack(t), topNMoods, ...(changed.has(t.id) ? { changedFile: true } : {}) } satisfies AnalysisTrackRequested),
          ),
        );
        await this.runs.markPublished(batchId, server.id, slice.map((t) => t.id));
      }
      const reanalysed = publish.filter((t) => changed.has(t.id)).length;
      result.changedFiles += reanalysed;
      result.added += publish.length - reanalysed;
      result.batchId = batchId;
      return publish.length;
    };
    // 1. The newest albums, newest first, until a few albums in a row bring nothing new.
    let known = 0;
    for await (const album of client.iterateRecentAlbumTracks(this.recentAlbums)) {
      if ((await consider(album)) > 0) known = 0;
      else if (++known >= this.knownAlbumsToStop) break;
    }
    // 2. Removals, the unmapped files no newest-album list showed, and the files changed in place (same provider id,
    //    listed stamp different from the stored one: a changed file does not make its album "newest").
    const removal = await this.catalogue.removalCheck(server.id);
    result.removed = removal.pruned;
    result.removalRefused = removal.refused;
    await consider(removal.unmapped);
    await consider(removal.changed);
    if (removal.unmappedTotal > removal.unmapped.length) result.leftOver += removal.unmappedTotal - removal.unmapped.length;
    if (removal.changedTotal > removal.changed.length) result.leftOver += removal.changedTotal - removal.changed.length;
    if (result.leftOver > 0) this.logger.warn('more unmapped files than one change analyses; a full analysis run takes the rest', { serverId: server.id, leftOver: result.leftOver, maxTracksPerCheck: this.maxTracksPerCheck });
    return result;
  }
}

/** Servers whose change detection is on (a registry that sends no setting predates it: not watched). */
function watched(s: ServerInfo): boolean {
  return s.changeDetection !== undefined && s.changeDetection.mode !== 'off';
}

/** Whether sha256(`token`) is `sha256Hex`, compared in constant time. */
function sameSha256(token: string, sha256Hex: string): boolean {
  const got = createHash('sha256').update(token, 'utf8').digest();
  const want = Buffer.from(sha256Hex, 'hex');
  return want.length === got.length && timingSafeEqual(got, want);
}

function toMessageTrack(t: ProviderTrack): AnalysisTrackRequested['track'] {
  return { id: t.id, title: t.title, artist: t.artist, artistId: t.artistId, album: t.album, albumArtist: t.albumArtist, year: t.year, rating: t.rating, durationSeconds: t.durationSeconds, path: t.path, libraryId: t.libraryId, fileStamp: t.fileStamp };
}
