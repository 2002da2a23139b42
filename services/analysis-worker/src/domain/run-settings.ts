import type { LearnedTarget } from './ports';

/**
 * Consecutive failed attempts to read a server's catalogue after which the server is marked failed
 * for the run (every successfully read page resets the count). With the default backoff the attempts
 * are about 2, 4, 8 and 16 s apart (jittered down to half), so a media server has to be unreadable
 * for roughly 15-30 s in a row; a shorter outage only delays the run.
 * A track's own error (download, decode) never counts here: it is that track's outcome.
 */
export const SERVER_FAILURE_THRESHOLD = 5;

export interface AnalysisRunOptions {
  /** How often the coordinator refreshes counts and publishes progress, ms (default 1000). */
  pollMs?: number;
  /** Provider ids looked up per catalogue call (default 500). */
  lookupBatch?: number;
  /** Coordinator lease TTL, ms (default 60000, platform DEFAULT_LEASE_TTL_MS). */
  leaseTtlMs?: number;
  /** How often a replica looks for runs whose lease expired, ms (default 5000). */
  takeoverScanMs?: number;
  /** First delay between attempts to read a failing server, ms (default 2000; doubles, jittered). */
  serverRetryDelayMs?: number;
  /** Bound on waiting for the index generation holding the run's songs, ms (default 30 min). */
  indexWaitMs?: number;
  /** The rebuild request is repeated when no newer generation went live for this long, ms (default 5 min). */
  indexRerequestMs?: number;
  /**
   * The learned model this process would tag with (model id) and the embedder version it stores, or undefined
   * without a model. When set, mapped tracks whose song has no tags from this model or no vector of this version
   * are enqueued again (re-analysis: tags and the learned embedding; the embedder switch).
   */
  learnedModel?: () => LearnedTarget | undefined;
  /** Consecutive failures before a server is marked failed (default {@link SERVER_FAILURE_THRESHOLD}). */
  serverFailureThreshold?: number;
  /** The live NUM_RECENT_ALBUMS / TOP_N_MOODS settings a run applies unless its start overrides them (default: 0 / 5). */
  settings?: () => Promise<RunSettings>;
}

/** What an analysis run applies; fixed when the run starts and kept in its details (`details.options`). */
export interface RunSettings {
  /** Only the tracks of the N most recently added albums of each server; 0 = the whole catalogue. */
  numRecentAlbums: number;
  /** MSD tags kept in the mood_vector of the songs this run analyzes. */
  topNMoods: number;
}

/** Per-run overrides of POST /api/analysis/start (reference num_recent_albums, top_n_moods). */
export type RunOverrides = Partial<RunSettings>;

export const DEFAULT_RUN_SETTINGS: RunSettings = { numRecentAlbums: 0, topNMoods: 5 };

/** `base` with every override that is set. */
export function withOverrides(base: RunSettings, o: RunOverrides): RunSettings {
  return { numRecentAlbums: o.numRecentAlbums ?? base.numRecentAlbums, topNMoods: o.topNMoods ?? base.topNMoods };
}

/** The options a run stored in its details, if any (a run resumed by another replica reads them back). */
export function storedOptions(details: Record<string, unknown>): RunSettings | undefined {
  const o = details.options as Partial<RunSettings> | undefined;
  if (!o || typeof o.numRecentAlbums !== 'number' || typeof o.topNMoods !== 'number') return undefined;
  return { numRecentAlbums: o.numRecentAlbums, topNMoods: o.topNMoods };
}
