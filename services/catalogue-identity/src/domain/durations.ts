/**
 * Duration back-fill (spec "Content identity" 6, issue 4 "Mapping and translation"): durations come
 * from ONE whole-catalogue metadata listing per server, never from per-id fetches or downloads.
 *
 * Songs analysed before the duration gate existed (scheme fp_2) have no stored duration, so the
 * duration gate keeps them apart from everything (unknown = different) and the fp_4 re-verification
 * cannot check their merges. The caller (a sweep or the cleaning task, which fetch the full listing
 * anyway) hands the listing over; this module decides what to write:
 *
 * - every mapping row of a listed file gets the listed duration (track_server_map.duration_seconds);
 * - a song whose own duration is unknown gets one, when the listed durations of all its files on this
 *   server agree within the tolerance; the value written is the one of the file with the smallest
 *   provider id (deterministic). Files that disagree leave the song unknown: in doubt, split.
 */
import { isKnownDuration } from './identity/gates';

/** One entry of a server's listing: provider id and metadata duration in seconds. */
export interface ListedDuration {
  readonly providerId: string;
  readonly durationSeconds: number;
}

/** A mapping row of the server as the store holds it. */
export interface MappedFileDuration {
  readonly providerId: string;
  readonly itemId: string;
  /** The song's stored duration, seconds, or null when unknown. */
  readonly itemDurationSeconds: number | null;
}

/** What to write. */
export interface DurationBackfillPlan {
  /** Listed durations of files that have a mapping row (provider id -> seconds). */
  readonly mappingDurations: ReadonlyArray<{ providerId: string; durationSeconds: number }>;
  /** Songs without a known duration that get one. */
  readonly scoreDurations: ReadonlyArray<{ itemId: string; durationSeconds: number }>;
  /** Listing entries ignored: non-finite or non-positive duration, or one provider id listed with two different durations. */
  readonly rejectedEntries: number;
  /** Songs left unknown because their files' listed durations disagree by more than the tolerance. */
  readonly conflictingItems: readonly string[];
}

/**
 * Plans the back-fill of one server.
 *
 * @param listing the server's whole-catalogue listing (any order; duplicates allowed).
 * @param mapped the server's mapping rows (at least those of songs without a duration, plus any row
 *   whose mapping duration should be refreshed).
 * @param toleranceSeconds DURATION_TOLERANCE_SECONDS: files of one song must agree within it.
 * @returns the plan; pure, O(listing + mapped).
 */
export function planDurationBackfill(listing: readonly ListedDuration[], mapped: readonly MappedFileDuration[], toleranceSeconds: number): DurationBackfillPlan {
  const listed = new Map<string, number>();
  const bad = new Set<string>();
  let rejected = 0;
  for (const e of listing) {
    if (!isKnownDuration(e.durationSeconds)) {
      rejected++;
      continue;
    }
    if (bad.has(e.providerId)) {
      rejected++;
      continue;
    }
    const prior = listed.get(e.providerId);
    if (prior === undefined) listed.set(e.providerId, e.durationSeconds);
    else if (prior !== e.durationSeconds) {
      listed.delete(e.providerId);
      bad.add(e.providerId);
      rejected += 2;
    }
  }
  const mappingDurations: { providerId: string; durationSeconds: number }[] = [];
  const perItem = new Map<string, { providerId: string; d: number }[]>();
  for (const m of mapped) {
    const d = listed.get(m.providerId);
    if (d === undefined) continue;
    mappingDurations.push({ providerId: m.providerId, durationSeconds: d });
    if (isKnownDuration(m.itemDurationSeconds)) continue;
    let files = perItem.get(m.itemId);
    if (!files) perItem.set(m.itemId, (files = []));
    files.push({ providerId: m.providerId, d });
  }
  const scoreDurations: { itemId: string; durationSeconds: number }[] = [];
  const conflictingItems: string[] = [];
  for (const [itemId, files] of perItem) {
    let min = Infinity;
    let max = -Infinity;
    for (const f of files) {
      if (f.d < min) min = f.d;
      if (f.d > max) max = f.d;
    }
    if (max - min > toleranceSeconds) {
      conflictingItems.push(itemId);
      continue;
    }
    files.sort((a, b) => (a.providerId < b.providerId ? -1 : a.providerId > b.providerId ? 1 : 0));
    scoreDurations.push({ itemId, durationSeconds: (files[0] as { d: number }).d });
  }
  return { mappingDurations, scoreDurations, rejectedEntries: rejected, conflictingItems };
}
