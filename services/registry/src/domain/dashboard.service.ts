import { api, type DashboardSummary } from '@polyphony/contracts';
import type { Logger, PeerClient } from '@polyphony/platform';
import type { ServerStore, TaskBoardStore } from './ports';
import { pluginStatus } from './task-board';

/** How long a summary is reused (the Lyrion plugin caches it for 30 s as well). */
export const DASHBOARD_CACHE_MS = 30_000;

/**
 * GET /api/dashboard/summary: content counts from the catalogue (songs, analyzed, tagged, lyrics, distinct
 * albums and artists) and the index (clap_indexed = songs the text search ranks by tags, gmm_indexed =
 * artists with a fitted mixture, moods_coverage = mean score per mood over tagged songs), the servers with
 * their last known counts, and the last task of every kind. A peer that does not answer leaves its numbers
 * at 0 and is named in `unavailable` (the summary itself never fails for it). Cached DASHBOARD_CACHE_MS.
 */
export class DashboardService {
  private cache?: { at: number; value: DashboardSummary };

  constructor(
    private readonly servers: Pick<ServerStore, 'list'>,
    private readonly tasks: Pick<TaskBoardStore, 'lastPerType'>,
    private readonly catalogue: PeerClient,
    private readonly index: PeerClient,
    private readonly logger: Logger,
    private readonly now = () => Date.now(),
  ) {}

  async summary(): Promise<DashboardSummary> {
    if (this.cache && this.now() - this.cache.at < DASHBOARD_CACHE_MS) return this.cache.value;
    const unavailable: string[] = [];
    const read = async <T>(name: string, f: () => Promise<T>, fallback: T): Promise<T> => {
      try {
        return await f();
      } catch (err) {
        this.logger.warn('dashboard part unavailable', { part: name, err: (err as Error).message });
        unavailable.push(name);
        return fallback;
      }
    };
    const [cat, idx, servers, last] = await Promise.all([
      read('catalogue', () => this.catalogue.call(api.internal.catalogueStats), { songs: 0, analyzed: 0, tagged: 0, lyrics: 0, distinct_albums: 0, distinct_artists: 0 }),
      read('index', () => this.index.call(api.internal.indexStats), { generation: 0, items: 0, clap_indexed: 0, gmm_indexed: 0, moods_coverage: [] }),
      this.servers.list(),
      this.tasks.lastPerType(),
    ]);
    const value: DashboardSummary = {
      content: {
        distinct_albums: cat.distinct_albums,
        distinct_artists: cat.distinct_artists,
        songs: cat.songs,
        analyzed: cat.analyzed,
        tagged: cat.tagged,
        lyrics: cat.lyrics,
        clap_indexed: idx.clap_indexed,
        gmm_indexed: idx.gmm_indexed,
        moods_coverage: idx.moods_coverage,
      },
      servers: servers.map((s) => ({ server_id: s.id, name: s.name, server_type: s.type, is_default: s.isDefault, track_count: s.trackCount, matched_count: s.matchedCount })),
      tasks: Object.fromEntries(
        last.map((t) => [t.type, { task_id: t.taskId, status: pluginStatus(t.state), progress: Math.round(t.progress), updated_at: (t.finishedAt ?? t.startedAt ?? t.createdAt)?.toISOString() ?? null }]),
      ),
      unavailable,
      generated_at: new Date(this.now()).toISOString(),
    };
    // A partial summary is not cached, so the next call retries the missing part.
    if (unavailable.length === 0) this.cache = { at: this.now(), value };
    return value;
  }
}
