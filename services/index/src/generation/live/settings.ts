import { DEFAULT_DRIFT, type DriftSettings } from './drift';

/** Settings of the live library (`INDEX_LIVE_*`, config.ts). */
export interface LiveLibrarySettings {
  /** `INDEX_LIVE_LIBRARY` (default on): off = new songs wait for the next full rebuild, as before. */
  enabled: boolean;
  /** `INDEX_LIVE_DEBOUNCE_MS` (default 3000): songs noted within this window after the first go in one batch. */
  debounceMs: number;
  /**
   * `INDEX_LIVE_RECHECK_MS` (default 10000): how often songs still pending are looked at again (an empty index waiting
   * for its first build or for a live analysis run's end-of-run rebuild; a batch that failed).
   */
  recheckMs: number;
  drift: DriftSettings;
}

export const DEFAULT_LIVE_LIBRARY: LiveLibrarySettings = { enabled: true, debounceMs: 3000, recheckMs: 10_000, drift: DEFAULT_DRIFT };

