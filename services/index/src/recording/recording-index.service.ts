import type { FingerprintPage, RecordingResultRow, RecordingStatus, StoredFingerprint } from '@polyphony/contracts';
import { LANDMARK_CODEC_VERSION, LandmarkIndex, LandmarkMatcher, MATCH_DEFAULTS, decodeLandmarks, type Landmarks, type MatchReport, type MatchResult } from '@polyphony/landmarks';
import { AppError, NotFoundError, type Logger } from '@polyphony/platform';
import { DEFAULT_INDEX_FILE_DIR } from '@polyphony/vector-engine';
import type { Generation, IndexState } from '../core/generation';
import { RequestScope, type ScopeDeps } from '../core/scope';
import type { ClipLimits } from './clip';
import { MatchThread, MatchThreadError } from './match-thread';

/** What the fingerprint index needs from the catalogue (its internal API, contracts recording.ts). */
export interface FingerprintSource {
  /** GET /internal/fingerprints: a keyset page of stored fingerprints (`after` = last item id, null first). */
  fingerprintPage(after: string | null, limit: number): Promise<FingerprintPage>;
  /** GET /internal/tracks/:itemId/fingerprint; undefined when the song has none. */
  fingerprint(itemId: string): Promise<StoredFingerprint | undefined>;
}

/** Songs per page read from the catalogue while loading (~6 KB of fingerprint each: ~3 MB of JSON a page). */
export const FINGERPRINT_LOAD_PAGE = 500;
/** Where loaded postings live (config `recordingPostings`): in memory up to `residentMiB`, else in a file in `dir`. */
export interface PostingsStorage {
  residentMiB: number;
  dir?: string;
  /** Run the matching in a worker thread ({@link MatchThread}) instead of on the event loop. */
  matchThread?: boolean;
}

/** Postings of at most 64 MiB stay in memory (config DEFAULT_RECORDING_POSTINGS_RESIDENT_MIB). */
const DEFAULT_POSTINGS_STORAGE: PostingsStorage = { residentMiB: 64 };

/** Loads retried when a fingerprint changed between the two passes of a load (a backfill writing meanwhile). */
const LOAD_ATTEMPTS = 3;

/** The fingerprint index of one generation. */
interface LoadedPrints {
  gen: Generation;
  index: LandmarkIndex;
  matcher: LandmarkMatcher;
  /** 1 for rows with a fingerprint in the index. */
  printed: Uint8Array;
  /** The index's handle in the match thread, when matching runs there. */
  handle?: number;
  /** The index being sent again to a match thread that restarted (shared by concurrent queries). */
  reloading?: Promise<number>;
  songs: number;
  loadMs: number;
  loadedAt: Date;
}

/**
 * Search by recording in the index service (issue 33; docs/architecture.md "Search by recording"): one
 * `LandmarkIndex` (Wang 2003 landmarks, `@polyphony/landmarks`) per index generation, built from the
 * catalogue's stored fingerprints in two streamed passes over GET /internal/fingerprints (counting, then filling,
 * so the songs' fingerprints are never all held at once), rows = the generation's rows. Loaded in the background
 * after each generation swap (the previous generation's prints keep answering until then), or on demand by
 * warmup. Queries respect the selected server's availability mask (hidden songs neither vote nor appear) and
 * answer in that server's provider ids.
 */
export class RecordingIndexService {
  private readonly loads = new Map<number, Promise<LoadedPrints>>();
  private latest?: LoadedPrints;
  /** Set when matching runs in a worker thread (`PostingsStorage.matchThread`). */
  private readonly thread?: MatchThread;

  constructor(
    private readonly state: IndexState,
    private readonly source: FingerprintSource,
    private readonly scopeDeps: ScopeDeps,
    readonly limits: ClipLimits,
    private readonly logger: Logger,
    private readonly pageSize = FINGERPRINT_LOAD_PAGE,
    private readonly storage: PostingsStorage = DEFAULT_POSTINGS_STORAGE,
  ) {
    if (storage.matchThread) this.thread = new MatchThread();
    state.onSwap((g) => {
      for (const k of this.loads.keys()) if (k !== g.generation && k !== this.latest?.gen.generation) this.loads.delete(k);
      if (g.generation > 0) void this.load(g).catch((err: unknown) => this.logger.warn('fingerprint index not loaded; loaded on warmup or first search', { generation: g.generation, err: (err as Error).message }));
    });
  }

  /** Loads (once) the fingerprint index of `gen`; the promise is shared by concurrent callers. */
  load(gen: Generation): Promise<LoadedPrints> {
    let p = this.loads.get(gen.generation);
    if (!p) {
      p = this.build(gen).then((loaded) => {
        if (gen.generation >= (this.latest?.gen.generation ?? -1)) this.latest = loaded;
        for (const k of this.loads.keys()) if (k < gen.generation) this.loads.delete(k);
        return loaded;
      });
      p.catch(() => this.loads.delete(gen.generation));
      this.loads.set(gen.generation, p);
    }
    return p;
  }

  /** Drops the loaded index of the live generation and loads it again (after a backfill added fingerprints). */
  reload(): Promise<LoadedPrints> {
    const gen = this.state.current();
    this.loads.delete(gen.generation);
    return this.load(gen);
  }

  private async build(gen: Generation): Promise<LoadedPrints> {
    const t0 = performance.now();
    const size = gen.index.size;
    for (let attempt = 1; ; attempt++) {
      const printed = new Uint8Array(size);
      let songs = 0;
      let pass = 0;
      const source = this.source;
      const pageSize = this.pageSize;
      const rows = async function* (): AsyncGenerator<readonly [number, Landmarks]> {
        pass++;
        let after: string | null = null;
        do {
          const page: FingerprintPage = await source.fingerprintPage(after, pageSize);
          for (const it of page.items) {
            const row = gen.index.rowOf(it.itemId);
            if (row < 0 || it.codec !== LANDMARK_CODEC_VERSION) continue;
            const bytes = Buffer.from(it.blob, 'base64');
            const lm = decodeLandmarks(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
            if (pass === 1) {
              printed[row] = 1;
              songs++;
            }
            yield [row, lm] as const;
          }
          after = page.next;
        } while (after !== null);
      };
      try {
        // A large library's postings are built straight into a local file (read per query hash), never all in memory.
        const index = await LandmarkIndex.buildAsync(rows, { file: { dir: this.storage.dir ?? DEFAULT_INDEX_FILE_DIR, aboveBytes: this.storage.residentMiB * 2 ** 20 } });
        const loadMs = performance.now() - t0;
        this.logger.info('fingerprint index loaded', { generation: gen.generation, songs, landmarks: index.size, bytes: index.bytes, fileBytes: index.fileBytes, loadMs: Math.round(loadMs) });
        const loaded: LoadedPrints = { gen, index, matcher: new LandmarkMatcher(index), printed, songs, loadMs, loadedAt: new Date() };
        // The worker copies the offsets and reads the postings file through `index`, which `loaded` keeps alive.
        if (this.thread) loaded.handle = await this.thread.load(index, loaded);
        return loaded;
      } catch (err) {
        if (attempt >= LOAD_ATTEMPTS || !/second pass/.test((err as Error).message)) throw err;
        this.logger.info('fingerprints changed while loading; loading again', { generation: gen.generation, attempt });
      }
    }
  }

  /**
   * The loaded prints a query of `scope` uses: the scope's generation's once loaded, else the newest loaded one
   * (a previous generation keeps answering while the new one loads; its rows and maps stay consistent with it).
   * @throws AppError 503 `index_not_ready` when nothing is loaded yet (a load is started)
   */
  private ready(scope: RequestScope): LoadedPrints {
    const latest = this.latest;
    if (latest && latest.gen.generation === scope.gen.generation) return latest;
    if (scope.gen.generation > 0) void this.load(scope.gen).catch(() => undefined);
    if (latest) return latest;
    throw new AppError('index_not_ready', 'The recording fingerprint index is loading; try again in a moment (POST /api/recording_search/warmup waits for it)', 503);
  }

  /** @throws AppError 503 `index_not_ready` when no fingerprint index is loaded yet (and starts loading one). */
  assertReady(scope: RequestScope): void {
    this.ready(scope);
  }

  /** The scope to answer in: the selected server over the loaded prints' generation. */
  private scopeOf(loaded: LoadedPrints, scope: RequestScope): RequestScope {
    return loaded.gen === scope.gen ? scope : new RequestScope(loaded.gen, scope.serverId, this.scopeDeps, scope.viewer, scope.libraryFilter);
  }

  /**
   * Identifies the song a clip (normalised 16 kHz mono PCM) was recorded from, among the songs available on the
   * scope's server: at most `n` rows (the matcher ranks at most MATCH_DEFAULTS.candidates), best first;
   * `identified` on the first says it is a match, otherwise the answer is "no match".
   * @throws AppError 503 `index_not_ready`; 503 `match_unavailable` when the match thread stopped during the query
   */
  async search(scope: RequestScope, pcm: Float32Array, n: number): Promise<RecordingResultRow[]> {
    const loaded = this.ready(scope);
    if (loaded.songs === 0) return [];
    const s = this.scopeOf(loaded, scope);
    const mask = s.maskNow();
    const maxResults = Math.min(n, MATCH_DEFAULTS.candidates);
    if (this.thread && loaded.handle !== undefined) {
      const report = await this.inThread(loaded, (thread, handle) => thread.match(handle, pcm, this.maskBytes(loaded, (row) => mask.has(row)), { maxResults }));
      // `loaded` (and with it the postings file the worker reads) stays referenced until the answer is back.
      return this.present(this.scopeOf(loaded, scope), report.results);
    }
    const report = loaded.matcher.match(pcm, { allow: (row) => mask.has(row), maxResults });
    return this.present(s, report.results);
  }

  /**
   * Runs `query` in the match thread on `loaded`'s index. A worker that exited (crash, out of memory) is replaced by
   * a new, empty one on the next query, so the index is sent to it again first (one load shared by concurrent
   * queries). A worker that stops while the query is in flight answers nothing: AppError 503 `match_unavailable`
   * (retryable; the next query starts a new worker), never a 500.
   */
  private async inThread(loaded: LoadedPrints, query: (thread: MatchThread, handle: number) => Promise<MatchReport>): Promise<MatchReport> {
    const thread = this.thread!;
    try {
      if (!thread.holds(loaded.handle!)) {
        loaded.reloading ??= thread.load(loaded.index, loaded).finally(() => (loaded.reloading = undefined));
        const handle = await loaded.reloading;
        this.logger.warn('recording match thread restarted; fingerprint index sent to it again', { generation: loaded.gen.generation });
        loaded.handle = handle;
      }
      return await query(thread, loaded.handle!);
    } catch (err) {
      if (!(err instanceof MatchThreadError)) throw err;
      this.logger.warn('recording match thread stopped during a query', { generation: loaded.gen.generation, err: err.message });
      throw new AppError('match_unavailable', 'The recording match thread stopped while matching this clip; it restarts on the next request, try again', 503);
    }
  }

  /** The availability filter as one byte per row of `loaded`'s index (1 = visible), for the match thread. */
  private maskBytes(loaded: LoadedPrints, allow: (row: number) => boolean): Uint8Array {
    const out = new Uint8Array(Math.max(1, loaded.index.rowCount));
    for (let r = 0; r < out.length; r++) out[r] = allow(r) ? 1 : 0;
    return out;
  }

  /**
   * Songs that share recorded material with a stored song (its own fingerprint as the query, at its own speed),
   * the song itself left out: only songs with at least MATCH_DEFAULTS.minVotes aligned landmarks, best first.
   * @throws NotFoundError (404 `not_found`) for an unknown song, AppError 404 `no_fingerprint` when it has none,
   *   503 `index_not_ready`, 503 `match_unavailable` (the match thread stopped during the query)
   */
  async byTrack(scope: RequestScope, itemId: string, n: number): Promise<RecordingResultRow[]> {
    const loaded = this.ready(scope);
    const s = this.scopeOf(loaded, scope);
    const row = s.rowOfInput(itemId);
    if (row < 0) throw new NotFoundError(`Track ${itemId} not found`);
    const stored = await this.source.fingerprint(s.idOf(row));
    if (!stored || stored.codec !== LANDMARK_CODEC_VERSION) throw new AppError('no_fingerprint', `Track ${itemId} has no recording fingerprint yet (the next analysis run adds it)`, 404);
    const bytes = Buffer.from(stored.blob, 'base64');
    const lm = decodeLandmarks(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    const mask = s.maskNow();
    const allow = (r: number) => r !== row && mask.has(r);
    const maxResults = Math.min(n, MATCH_DEFAULTS.candidates);
    const report =
      this.thread && loaded.handle !== undefined
        ? await this.inThread(loaded, (thread, handle) => thread.matchLandmarks(handle, lm, this.maskBytes(loaded, allow), { maxResults }))
        : loaded.matcher.matchLandmarks(lm, { allow, maxResults });
    // A fresh scope of `loaded`: it stays referenced (with the postings file a match thread reads) until the answer is back.
    return this.present(
      this.scopeOf(loaded, scope),
      report.results.filter((r) => r.votes >= MATCH_DEFAULTS.minVotes),
    );
  }

  /** Result rows under the server's provider ids (rows without one or without metadata are dropped). */
  private present(s: RequestScope, results: readonly MatchResult[]): RecordingResultRow[] {
    const out: RecordingResultRow[] = [];
    for (const r of results) {
      const provider = s.gen.maps.providerOf(s.serverId, r.row);
      const m = provider === undefined ? undefined : s.metaAt(r.row);
      if (!provider || !m) continue;
      out.push({
        item_id: provider,
        title: m.title,
        author: m.artist,
        album: m.album,
        score: Math.round(r.score * 1e4) / 1e4,
        votes: r.votes,
        offset_seconds: Math.round(r.offsetSeconds * 100) / 100,
        identified: r.identified,
        lead: r.lead,
      });
    }
    return out;
  }

  /** Whether a row of `gen` has a fingerprint (search_tracks?index=neural); loads the generation's prints when needed. */
  async printedRows(gen: Generation): Promise<(row: number) => boolean> {
    let loaded = this.latest?.gen === gen ? this.latest : undefined;
    if (!loaded) {
      try {
        loaded = await this.load(gen);
      } catch (err) {
        throw new AppError('index_not_ready', `The recording fingerprint index could not be loaded: ${(err as Error).message}`, 503);
      }
    }
    const printed = loaded.printed;
    return (row) => row >= 0 && printed[row] === 1;
  }

  /** Readiness for GET /api/recording_search/status (and the answer of warmup). */
  status(scope: RequestScope): RecordingStatus {
    const limits = { max_upload_bytes: this.limits.maxUploadBytes, max_clip_seconds: this.limits.maxClipSeconds, min_clip_seconds: this.limits.minClipSeconds };
    const latest = this.latest;
    const loading = this.loads.has(scope.gen.generation) && latest?.gen.generation !== scope.gen.generation;
    if (!latest) {
      return { status: loading ? 'loading' : 'not_loaded', generation: scope.gen.generation, fingerprinted_songs: 0, available_songs: 0, total_songs: scope.gen.index.size, landmarks: 0, memory_bytes: 0, load_ms: null, loaded_at: null, limits };
    }
    const s = this.scopeOf(latest, scope);
    const mask = s.maskNow();
    let available = 0;
    for (let r = 0; r < latest.printed.length; r++) if (latest.printed[r] === 1 && mask.has(r)) available++;
    return {
      status: loading ? 'loading' : latest.songs === 0 ? 'empty' : 'ready',
      generation: latest.gen.generation,
      fingerprinted_songs: latest.songs,
      available_songs: available,
      total_songs: latest.gen.index.size,
      landmarks: latest.index.size,
      memory_bytes: latest.index.bytes + latest.matcher.bytes + latest.printed.byteLength,
      load_ms: Math.round(latest.loadMs),
      loaded_at: latest.loadedAt.toISOString(),
      limits,
    };
  }

  /** Stops the match thread, if any (queries after this fail); the service's loaded indexes are left to GC. */
  async close(): Promise<void> {
    await this.thread?.close();
  }

  /** Loads the live generation's prints (if not yet) and answers the status. */
  async warmup(scope: RequestScope): Promise<RecordingStatus> {
    await this.load(scope.gen);
    return this.status(scope);
  }
}
