import type { SearchIndex, SearchRowDto, SearchTracksQuery } from '@polyphony/contracts';
import { ValidationError } from '@polyphony/platform';
import type { TrackFilter, TrackReader } from '../core/ports';
import type { RequestScope } from '../core/scope';
import type { Generation } from '../core/generation';
import { searchTokens } from '../core/text';

/** Default and largest page size (reference: 20 and 500). */
export const SEARCH_DEFAULT_LIMIT = 20;
export const SEARCH_MAX_LIMIT = 500;
/**
 * Matches ranked in the database per query before the availability filter. A query matching more songs
 * than this (e.g. one letter) is answered from its best-scoring SEARCH_MATCH_CAP matches.
 */
export const SEARCH_MATCH_CAP = 20_000;

/**
 * Track search (reference `search_tracks`): the query (or the legacy `artist`, `title`, `album`
 * parameters joined in that order) is folded (accents, case, punctuation) and split into tokens; a track
 * matches when every token starts a word of its folded "title artist album" text; ranked by title 3 /
 * artist 2 / album 1 per token (full weight for a whole-word match, half for a word-prefix match; see
 * TrackRepository.search), best first. Only tracks available on the selected server, under its ids.
 * Paging (autocomplete contract): `start` (default 0) and either `end` (exclusive, `end - start` at most
 * 500) or `limit` (default 20, max 500); consecutive pages never repeat a song because the order is total
 * (score, folded title, id). `index=` keeps only the songs that index holds (INDEX_FILTER; `neural` = songs with
 * a recording fingerprint, from the recording index of the generation).
 */
/** The catalogue subset each `index=` value names (what that feature's index holds). */
export const INDEX_FILTER: Record<SearchIndex, TrackFilter> = {
  musicnn: 'learned',
  clap: 'learned',
  sem_grove: 'lyrics',
  lyrics: 'lyrics',
  neural: 'neural',
};

export class SearchService {
  /**
   * Rows of a generation holding a recording fingerprint (the recording index's), for `index=neural`; absent
   * (tests, benches) = the index's SQL filter of the catalogue copy.
   */
  fingerprinted?: (gen: Generation) => Promise<(row: number) => boolean>;

  constructor(private readonly tracks: TrackReader) {}

  /** @throws ValidationError when end < start or end - start > 500 */
  async search(scope: RequestScope, q: SearchTracksQuery): Promise<SearchRowDto[]> {
    const text = q.search_query ?? [q.artist, q.title, q.album].filter((v) => v).join(' ');
    const tokens = searchTokens(text);
    const start = q.start ?? 0;
    let limit = q.limit ?? SEARCH_DEFAULT_LIMIT;
    if (q.end !== undefined) {
      if (q.end < start) throw new ValidationError('end must not be smaller than start');
      if (q.end - start > SEARCH_MAX_LIMIT) throw new ValidationError(`end - start must be at most ${SEARCH_MAX_LIMIT}`);
      limit = q.end - start;
    }
    if (tokens.length === 0 || limit === 0) return [];
    // `neural` (songs with a recording fingerprint) is answered from the recording index's rows, not from SQL.
    const printed = q.index === 'neural' && this.fingerprinted ? await this.fingerprinted(scope.gen) : undefined;
    const hits = await this.tracks.search(tokens, SEARCH_MATCH_CAP, q.index === undefined || printed ? undefined : INDEX_FILTER[q.index]);
    const mask = await scope.mask();
    const available = hits.filter((h) => {
      const row = scope.gen.index.rowOf(h.itemId);
      return mask.has(row) && (!printed || printed(row));
    });
    const page = available.slice(start, start + limit).map((h) => h.itemId);
    const [meta, mapped] = await Promise.all([scope.metadata(page), scope.mapOutput(page)]);
    const out: SearchRowDto[] = [];
    for (const id of page) {
      const m = meta.get(id);
      const p = mapped.get(id);
      if (m && p) out.push({ item_id: p, title: m.title, author: m.artist, album: m.album, album_artist: m.albumArtist });
    }
    return out;
  }
}
