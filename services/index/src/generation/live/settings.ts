import { DEFAULT_DRIFT, type DriftSettings } from './drift';

/** Settings of the live library (`INDEX_LIVE_*`, config.ts). */
export interface LiveLibrarySettings {
  /** `INDEX_LIVE_LIBRARY` (default on): off = new songs wait for the next full rebuild, as before. */
  enabled: boolean;
  /** `INDEX_LIVE_DEBOUNCE_MS` (default 3000): songs noted within this window after the first go in one batch. */
  debounceMs: number;
  drift: DriftSettings;
}

export const DEFAULT_LIVE_LIBRARY: LiveLibrarySettings = { enabled: true, debounceMs: 3000, drift: DEFAULT_DRIFT };

