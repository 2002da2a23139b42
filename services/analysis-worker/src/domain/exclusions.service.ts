import { BROWSE_COUNT_CAP, BROWSE_PAGE_SIZE, UNANALYZABLE_REASONS, type BrowsePageResult, type UnanalyzableQuery } from '@polyphony/contracts';
import type { Exclusion, ExclusionStore } from './ports';

/** `GET /api/analysis/exclusions`: the files the analysis skipped (undecodable, unreadable) and why. */
export class ExclusionService {
  constructor(private readonly store: ExclusionStore) {}

  /** The newest 1,000 exclusions of `serverId` (the caller's selected server), or of every server when `all` or no server. */
  list(serverId: string | undefined, all: boolean): Promise<Exclusion[]> {
    return this.store.exclusions(all ? undefined : serverId);
  }

  /**
   * `GET /internal/analysis/unanalyzable` (the registry's browse `kind=unanalyzable`): one page (BROWSE_PAGE_SIZE) of the
   * excluded files, newest first, each with its reason code, the readable reason (contracts UNANALYZABLE_REASONS) and the
   * worker's own message (`detail`); `total` counted up to BROWSE_COUNT_CAP. A file stays excluded (never downloaded
   * again by a run) until the title, artist, album, duration or path the server reports for it changes (metadataHash).
   */
  async page(query: UnanalyzableQuery): Promise<BrowsePageResult> {
    const q = query.q?.trim() || undefined;
    const [rows, n] = await Promise.all([
      this.store.unanalyzable(query.server_id, q, BROWSE_PAGE_SIZE + 1, (query.page - 1) * BROWSE_PAGE_SIZE),
      this.store.countUnanalyzable(query.server_id, q, BROWSE_COUNT_CAP),
    ]);
    return {
      has_more: rows.length > BROWSE_PAGE_SIZE,
      capped: n > BROWSE_COUNT_CAP,
      total: Math.min(n, BROWSE_COUNT_CAP),
      results: rows.slice(0, BROWSE_PAGE_SIZE).map((r) => ({ ...r, reason: UNANALYZABLE_REASONS[r.reason_code] ?? UNANALYZABLE_REASONS.undecodable })),
    };
  }

  /** `GET /internal/analysis/stats` (the dashboard): files excluded as unanalyzable, tracks waiting, active coordinators. */
  stats(): Promise<{ unanalyzable_tracks: number; queue_backlog: number; active: number }> {
    return this.store.stats();
  }
}
