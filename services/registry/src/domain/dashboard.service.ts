import { api, type DashboardSummary } from '@polyphony/contracts';
import type { Logger, PeerClient } from '@polyphony/platform';
import type { ServerStore, TaskBoardStore } from './ports';
import { pluginStatus } from './task-board';

/** How long a summary is reused (the Lyrion plugin caches it for 30 s as well). */
export const DASHBOARD_CACHE_MS = 30_000;

/** Tasks listed in `recent_tasks`. */
export const DASHBOARD_RECENT_TASKS = 10;

/**
 * GET /api/dashboard/summary (contracts DashboardSummary): content counts from the catalogue (songs, analysed,
 * tagged, lyrics, distinct albums and artists, orphans, per-server songs and copies, top genre, tempo
 * profile), the index (clap_indexed = songs the text search ranks by tags, gmm_indexed = artists with a
 * fitted mixture, moods_coverage = mean score per mood over tagged songs) and the analysis (unanalyzable
 * files, queued tracks, live worker claims), the servers with their counts, the last task of every kind and
 * the DASHBOARD_RECENT_TASKS newest tasks. `content` holds the reference's block (total_songs = analysed
 * songs, music_servers, orphan_songs, unanalyzable_tracks, top_genre, tempo_profile) beside the UI's fields.
 * A peer that does not answer is named in `unavailable`: its reference fields are left out (a client reads
 * a missing total_songs as "unknown", 0 as "never scanned"), its UI counts are 0; the summary itself never
 * fails for it. Cached DASHBOARD_CACHE_MS (`stats_updated_at` = when the counts were read).
 */
export class DashboardService {
  private cache?: { at: number; value: DashboardSummary };

  constructor(
    private readonly servers: Pick<ServerStore, 'list'>,
    private readonly tasks: Pick<TaskBoardStore, 'lastPerType' | 'history'>,
    private readonly catalogue: PeerClient,
    private readonly index: PeerClient,
    private readonly analysis: PeerClient,
    private readonly logger: Logger,
    private readonly now = () => Date.now(),
  ) {}

  async summary(): Promise<DashboardSummary> {
    if (this.cache && this.now() - this.cache.at < DASHBOARD_CACHE_MS) return { ...this.cache.value, generated_at: new Date(this.now()).toISOString() };
    const unavailable: string[] = [];
    const read = async <T>(name: string, f: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await f();
      } catch (err) {
        this.logger.warn('dashboard part unavailable', { part: name, err: (err as Error).message });
        unavailable.push(name);
        return undefined;
      }
    };
    const [cat, idx, ana, servers, last, recent] = await Promise.all([
      read('catalogue', () => this.catalogue.call(api.internal.catalogueStats)),
      read('index', () => this.index.call(api.internal.indexStats)),
      read('analysis', () => this.analysis.call(api.internal.analysisStats)),
      this.servers.list(),
      this.tasks.lastPerType(),
      this.tasks.history({ limit: DASHBOARD_RECENT_TASKS }),
    ]);
    const perServer = new Map((cat?.per_server ?? []).map((p) => [p.server_id, p]));
    const at = new Date(this.now()).toISOString();
    const value: DashboardSummary = {
      content: {
        ...(cat ? { total_songs: cat.analyzed } : {}),
        distinct_albums: cat?.distinct_albums ?? 0,
        distinct_artists: cat?.distinct_artists ?? 0,
        songs: cat?.songs ?? 0,
        analyzed: cat?.analyzed ?? 0,
        tagged: cat?.tagged ?? 0,
        lyrics: cat?.lyrics ?? 0,
        fingerprinted: cat?.fingerprinted ?? 0,
        clap_indexed: idx?.clap_indexed ?? 0,
        gmm_indexed: idx?.gmm_indexed ?? 0,
        music_servers: servers.map((s) => {
          const p = perServer.get(s.id);
          return { name: s.name, server_type: s.type, is_default: s.isDefault, resolved: (p?.unique_songs ?? 0) > 0, unique_songs: p?.unique_songs ?? 0, duplicate_copies: p?.duplicate_copies ?? 0, fingerprinted: p?.fingerprinted ?? 0 };
        }),
        ...(cat ? { orphan_songs: cat.orphans, top_genre: cat.top_genre, tempo_profile: cat.tempo_profile } : {}),
        ...(ana ? { unanalyzable_tracks: ana.unanalyzable_tracks } : {}),
        moods_coverage: idx?.moods_coverage ?? [],
      },
      servers: servers.map((s) => ({ server_id: s.id, name: s.name, server_type: s.type, is_default: s.isDefault, track_count: s.trackCount, matched_count: s.matchedCount })),
      tasks: Object.fromEntries(
        last.map((t) => [t.type, { task_id: t.taskId, status: pluginStatus(t.state), progress: Math.round(t.progress), updated_at: (t.finishedAt ?? t.startedAt ?? t.createdAt)?.toISOString() ?? null }]),
      ),
      ...(ana ? { workers: { active: ana.active }, queue_backlog: ana.queue_backlog } : {}),
      recent_tasks: recent.map((t) => ({
        task_id: t.taskId,
        task_type: t.type,
        status: pluginStatus(t.state),
        progress: Math.round(t.progress),
        message: t.message,
        created_at: t.createdAt.toISOString(),
        finished_at: t.finishedAt?.toISOString() ?? null,
      })),
      unavailable,
      stats_updated_at: at,
      generated_at: at,
    };
    // A partial summary is not cached, so the next call retries the missing part.
    if (unavailable.length === 0) this.cache = { at: this.now(), value };
    return value;
  }
}
