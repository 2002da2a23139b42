import type { CatalogueStats, LyricsPendingPage, PutLyricsRequest } from '@polyphony/contracts';
import { NotFoundError } from '@polyphony/platform';
import type { LyricsHit, LyricsStore } from './ports';

/** Lyrics texts: full-text search on a server, lookups stored by the analysis, the backfill's work list, SemGrove neighbours, content counts. */
export class LyricsService {
  constructor(private readonly lyrics: LyricsStore) {}

  /** Lyrics matching `query` among the songs of the server, best first (none without a server). */
  search(serverId: string | undefined, query: string, limit: number): Promise<LyricsHit[]> {
    return serverId ? this.lyrics.search(serverId, query, limit) : Promise.resolve([]);
  }

  /** Stores the outcome of one lookup. @throws NotFoundError (404) for an unknown song */
  async put(itemId: string, outcome: PutLyricsRequest): Promise<void> {
    if (!(await this.lyrics.put(itemId, outcome))) throw new NotFoundError(`Track ${itemId} not found`);
  }

  /** Songs without a lookup yet (the backfill's work list), paged by song id. */
  pending(after: string | undefined, limit: number): Promise<LyricsPendingPage> {
    return this.lyrics.pending(after, limit);
  }

  /** TF-IDF lyrics neighbours of a song among the songs of a server (SemGrove). */
  similar(itemId: string, serverId: string, limit: number) {
    return this.lyrics.similar(itemId, serverId, limit);
  }

  /** Content counts of the dashboard. */
  stats(): Promise<CatalogueStats> {
    return this.lyrics.stats();
  }
}
