import { REMOVAL_CHECK_UNMAPPED_MAX, type RemovalCheckResponse } from '@polyphony/contracts';
import { isMediaServerError, type MediaServerClient, type ProviderTrack } from '@polyphony/media-servers';
import { NotFoundError, UpstreamUnavailableError, type Logger } from '@polyphony/platform';
import { pruneAllowed } from './sweep/matcher';
import { planRefresh } from './sweep/refresh';
import type { RemoteDetails } from './sweep/remote-index';
import type { MappingChangedPublisher } from './mapping-events';
import type { MediaClientFactory, RegistryPort, ServerInfo, SweepStore } from './ports';

/** Hooks of {@link pruneStaleMappings}: progress after each listing page and each mapping chunk; true = stop (cancelled). */
export interface PruneHooks {
  /** Every listed track, as the listing gives it. */
  track?(t: ProviderTrack): void;
  listed?(fetched: number, pages: number): Promise<boolean | void>;
  checked?(seen: number, stored: number, pruned: number): Promise<boolean | void>;
}

/** What one prune of a server did (`cancelled`: a hook asked to stop; rows removed so far stay removed). */
export interface PruneResult {
  fetched: number;
  storedMappings: number;
  pruned: number;
  /** Mapping rows absent from the listing (pruned or not). */
  unbound: number;
  refused: boolean;
  cancelled: boolean;
}

/**
 * The cleaning's removal rule for one server (spec: Cleaning 1, Setup-time alignment 4): reads the server's whole
 * metadata listing (library filter applied, ids only kept), then removes that server's mapping rows whose provider
 * file is not listed, chunk by chunk. Nothing is removed when the listing looks partial (fewer tracks than half the
 * stored mappings), rows written after the listing started are kept, only mapping rows are removed (never a song;
 * a song left without mappings becomes an orphan). A failed listing throws before anything is removed.
 * Shared by the cleaning task and the change detection's removal check.
 */
export async function pruneStaleMappings(store: SweepStore, events: MappingChangedPublisher, client: MediaServerClient, server: ServerInfo, reason: string, chunkSize: number, hooks: PruneHooks = {}): Promise<PruneResult> {
  const listingStartedAt = await store.now();
  const listing = new Set<string>();
  let pages = 0;
  const result: PruneResult = { fetched: 0, storedMappings: 0, pruned: 0, unbound: 0, refused: false, cancelled: false };
  for await (const page of client.iterateTracks()) {
    for (const t of page) {
      listing.add(t.id);
      hooks.track?.(t);
    }
    pages++;
    result.fetched = listing.size;
    if (await hooks.listed?.(listing.size, pages)) return { ...result, cancelled: true };
  }
  result.fetched = listing.size;
  result.storedMappings = await store.mappingCount(server.id);
  const prune = pruneAllowed(listing.size, result.storedMappings);
  result.refused = !prune;
  const listed = (providerId: string): RemoteDetails | undefined => (listing.has(providerId) ? { providerId, artist: '' } : undefined);
  let cursor: string | null = null;
  let seen = 0;
  do {
    const chunk = await store.mappedChunk(server.id, cursor, chunkSize, listingStartedAt);
    const plan = planRefresh(chunk.rows, listed, { refreshMetadata: false, isDefault: server.isDefault, prune, toleranceSeconds: 0 });
    // Nothing to write in a chunk without a stale row (this pass refreshes no metadata).
    const res = plan.stale.length > 0 ? await store.applyRefresh(server.id, plan, listingStartedAt) : { pruned: 0 };
    result.pruned += res.pruned;
    result.unbound += plan.absent;
    if (res.pruned > 0) events.changed(server.id, reason);
    seen += chunk.rows.length;
    cursor = chunk.next;
    if (await hooks.checked?.(seen, result.storedMappings, result.pruned)) return { ...result, cancelled: true };
  } while (cursor !== null);
  return result;
}

/**
 * The removal check of change detection (POST /internal/removals/:serverId, issue 35): the analysis worker's change
 * watcher asks it when a server's library changed; the cleaning's rule applies ({@link pruneStaleMappings}). The same
 * listing names the unmapped files (added) and the mapped files whose listed stamp differs from the stored one
 * (changed in place; `changed`), and writes the listed stamp of mappings stored without one (`stampsFilled`). One
 * check per server at a time in this process (a second caller waits for the running one's answer).
 */
export class RemovalService {
  private readonly running = new Map<string, Promise<RemovalCheckResponse>>();

  constructor(
    private readonly store: SweepStore,
    private readonly registry: RegistryPort,
    private readonly clients: MediaClientFactory,
    private readonly events: MappingChangedPublisher,
    private readonly logger: Logger,
    private readonly chunkSize: number,
  ) {}

  /**
   * @throws NotFoundError (404) for an unknown server; UpstreamUnavailableError (502) when the listing fails (nothing removed).
   */
  check(serverId: string): Promise<RemovalCheckResponse> {
    const live = this.running.get(serverId);
    if (live) return live;
    const p = this.run(serverId).finally(() => this.running.delete(serverId));
    this.running.set(serverId, p);
    return p;
  }

  private async run(serverId: string): Promise<RemovalCheckResponse> {
    const servers = await this.registry.listServers();
    const server = servers.find((s) => s.id === serverId);
    if (!server) throw new NotFoundError(`Server ${serverId} not found`);
    const started = Date.now();
    // The server's mapped provider ids (with their stored file stamps) before the listing, so the listing keeps only
    // the unmapped and the changed tracks (bounded memory).
    const mapped = new Map<string, string | null>();
    const startedAt = await this.store.now();
    let cursor: string | null = null;
    do {
      const chunk = await this.store.mappedChunk(server.id, cursor, this.chunkSize, startedAt);
      for (const row of chunk.rows) mapped.set(row.providerId, row.fileStamp ?? null);
      cursor = chunk.next;
    } while (cursor !== null);
    const unmapped: RemovalCheckResponse['unmapped'] = [];
    let unmappedTotal = 0;
    const changed: RemovalCheckResponse['changed'] = [];
    let changedTotal = 0;
    const unstamped: Array<[string, string]> = [];
    const track = (t: ProviderTrack) => {
      const stored = mapped.get(t.id);
      if (stored === undefined) {
        if (mapped.has(t.id)) return;
        unmappedTotal++;
        if (unmapped.length < REMOVAL_CHECK_UNMAPPED_MAX) unmapped.push(listedTrack(t));
        return;
      }
      if (t.fileStamp === undefined) return;
      if (stored === null) unstamped.push([t.id, t.fileStamp]);
      else if (stored !== t.fileStamp) {
        // Changed in place under the same provider id (issue 35): the caller re-analyses it.
        changedTotal++;
        if (changed.length < REMOVAL_CHECK_UNMAPPED_MAX) changed.push(listedTrack(t));
      }
    };
    let r: PruneResult;
    try {
      r = await pruneStaleMappings(this.store, this.events, this.clients(server.connection), server, 'change_detection', this.chunkSize, { track });
    } catch (err) {
      // The media server's failure is the caller's 502 (its text is a fixed sentence per kind, never the server's body).
      if (isMediaServerError(err)) throw new UpstreamUnavailableError(`The media server could not be listed (${err.kind}); nothing was removed`, 502);
      throw err;
    }
    // Mappings stored without a stamp get the listed one, so the next change of those files is seen.
    let stampsFilled = 0;
    for (let i = 0; i < unstamped.length; i += this.chunkSize) {
      const slice = unstamped.slice(i, i + this.chunkSize);
      stampsFilled += await this.store.fillMissingStamps(server.id, slice.map((x) => x[0]), slice.map((x) => x[1]));
    }
    this.logger.info('removal check done', { serverId, fetched: r.fetched, storedMappings: r.storedMappings, pruned: r.pruned, refused: r.refused, unmapped: unmappedTotal, changed: changedTotal, stampsFilled, elapsedMs: Date.now() - started });
    return { fetched: r.fetched, storedMappings: r.storedMappings, pruned: r.pruned, refused: r.refused, unmapped, unmappedTotal, changed, changedTotal, stampsFilled };
  }
}

/** The fields of a listed track an analysis request carries (playCount and lastPlayed left out). */
function listedTrack(t: ProviderTrack): RemovalCheckResponse['unmapped'][number] {
  const { id, title, artist, artistId, album, albumArtist, year, rating, durationSeconds, path, libraryId, fileStamp } = t;
  return { id, title, artist, artistId, album, albumArtist, year, rating, durationSeconds, path, libraryId, fileStamp };
}
