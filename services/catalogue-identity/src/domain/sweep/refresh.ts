/**
 * What a sweep or cleaning writes for the mapping rows a server already has, one chunk at a time
 * (spec "Setup-time alignment" 3-4, "Cleaning" 1, "Content identity" 6). Pure: the store reads a chunk
 * of the server's mapping rows, this plans, the store writes.
 *
 * - metadata refresh (sweeps): album, album artist, year and rating of every song mapped on the server
 *   from the server's listing, when the server speaks for the song (`metadataAuthority`: a song on several
 *   servers takes the default server's metadata, else its source server's; store/sweep.store.ts
 *   metadataAuthoritySql); the song's file path too, but only when the server is the default one.
 *   A value the server does not report keeps the stored one. When a song has several files on the
 *   server, the listed file with the smallest provider id (byte order) speaks for it (deterministic).
 * - mapping refresh (sweeps): each listed file's path (and its folder), provider artist id, listed
 *   duration and library (issue 34) on its own mapping row; rows written after the listing started (by this sweep, from this
 *   very listing) are left out.
 * - duration back-fill (sweeps): domain/durations.ts over the listed files of the chunk. The cleaning
 *   does not back-fill: its pass touches nothing but the server's stale mapping rows (spec "Cleaning" 1).
 * - stale rows (full refresh and cleaning, when pruning is allowed): rows whose provider id is absent from
 *   the listing and which are older than the listing (a row written meanwhile, e.g. by analysis of a file
 *   added after the fetch, is never pruned on the strength of a listing that could not contain it).
 */
import { type ListedDuration, planDurationBackfill } from '../durations';
import { normalisePath, parentFolder } from '../identity/gates';
import type { RemoteDetails } from './remote-index';

/** A mapping row of the server, as the store streams it (grouped by song, provider ids in byte order). */
export interface MappedRow {
  readonly itemId: string;
  readonly providerId: string;
  /** True when the row is older than the listing (may be pruned). */
  readonly olderThanListing: boolean;
  /** The song's stored duration, seconds, or null. */
  readonly itemDurationSeconds: number | null;
  /** This server speaks for the song's metadata (default server, else source server); absent = true. */
  readonly metadataAuthority?: boolean;
  /** The mapping's stored file stamp (issue 35), when read. */
  readonly fileStamp?: string | null;
}

/** New metadata of one song (undefined fields keep the stored value). */
export interface ScoreRefresh {
  readonly itemId: string;
  readonly album?: string;
  readonly albumArtist?: string;
  readonly year?: number;
  readonly rating?: number;
  /** Only from the default server. */
  readonly filePath?: string;
}

/** New values of one mapping row (undefined fields keep the stored value). */
export interface MappingRefresh {
  readonly providerId: string;
  readonly filePath?: string;
  readonly folder?: string | null;
  readonly artistId?: string;
  readonly durationSeconds?: number;
  /** The library the listing found the file in (issue 34); undefined keeps the stored one. */
  readonly libraryId?: string;
  /** The listed file stamp (issue 35); written only where none is stored (a different one is kept for re-analysis). */
  readonly fileStamp?: string;
}

/** What to write for one chunk. */
export interface RefreshPlan {
  readonly scores: ScoreRefresh[];
  readonly mappings: MappingRefresh[];
  /** Songs without a known duration that get one (duration back-fill). */
  readonly scoreDurations: ReadonlyArray<{ itemId: string; durationSeconds: number }>;
  /** Provider ids of stale rows to delete (empty unless `prune`). */
  readonly stale: string[];
  /** Rows whose provider id is in the listing. */
  readonly present: number;
  /** Rows absent from the listing (stale or not yet prunable). */
  readonly absent: number;
}

/** Options of {@link planRefresh}. */
export interface RefreshOptions {
  /** Refresh song metadata, mapping rows and durations (sweeps); false: only plan the prune (cleaning). */
  readonly refreshMetadata: boolean;
  /** The server is the default one: its paths become the songs' file paths. */
  readonly isDefault: boolean;
  /** Delete rows absent from the listing (full refresh or cleaning, with the partial-fetch guard passed). */
  readonly prune: boolean;
  /** DURATION_TOLERANCE_SECONDS for the duration back-fill. */
  readonly toleranceSeconds: number;
}

function finiteOrUndefined(v: number | undefined, integer = false): number | undefined {
  if (v === undefined || !Number.isFinite(v)) return undefined;
  return integer ? Math.round(v) : v;
}

/**
 * Plans one chunk of the server's mapping rows against its listing.
 *
 * @param rows the chunk, grouped by song (all rows of a song in the chunk), provider ids ascending in
 *   byte order within a song.
 * @param listed provider id -> the listing's details, or undefined when the id is not in the listing.
 * @returns the writes; O(rows).
 */
export function planRefresh(rows: readonly MappedRow[], listed: (providerId: string) => RemoteDetails | undefined, options: RefreshOptions): RefreshPlan {
  const scores: ScoreRefresh[] = [];
  const mappings: MappingRefresh[] = [];
  const stale: string[] = [];
  const listing: ListedDuration[] = [];
  const mappedForDurations: Array<{ providerId: string; itemId: string; itemDurationSeconds: number | null }> = [];
  const refreshedItems = new Set<string>();
  let present = 0;
  let absent = 0;
  for (const row of rows) {
    const d = listed(row.providerId);
    if (!d) {
      absent++;
      if (options.prune && row.olderThanListing) stale.push(row.providerId);
      continue;
    }
    present++;
    if (!options.refreshMetadata) continue;
    if (d.durationSeconds !== undefined) listing.push({ providerId: row.providerId, durationSeconds: d.durationSeconds });
    mappedForDurations.push({ providerId: row.providerId, itemId: row.itemId, itemDurationSeconds: row.itemDurationSeconds });
    if (row.olderThanListing) {
      const norm = normalisePath(d.path);
      mappings.push({ providerId: row.providerId, filePath: d.path, folder: d.path === undefined ? undefined : norm === null ? null : parentFolder(norm), artistId: d.artistId, libraryId: d.libraryId, fileStamp: d.fileStamp });
    }
    if (!refreshedItems.has(row.itemId) && row.metadataAuthority !== false) {
      refreshedItems.add(row.itemId);
      scores.push({
        itemId: row.itemId,
        album: d.album,
        albumArtist: d.albumArtist,
        year: finiteOrUndefined(d.year, true),
        rating: finiteOrUndefined(d.rating),
        filePath: options.isDefault ? d.path : undefined,
      });
    }
  }
  if (!options.refreshMetadata) return { scores, mappings, scoreDurations: [], stale, present, absent };
  const durations = planDurationBackfill(listing, mappedForDurations, options.toleranceSeconds);
  const byProvider = new Map(durations.mappingDurations.map((x) => [x.providerId, x.durationSeconds]));
  for (let i = 0; i < mappings.length; i++) {
    const m = mappings[i]!;
    const dur = byProvider.get(m.providerId);
    if (dur !== undefined) mappings[i] = { ...m, durationSeconds: dur };
  }
  return { scores, mappings, scoreDurations: durations.scoreDurations, stale, present, absent };
}
