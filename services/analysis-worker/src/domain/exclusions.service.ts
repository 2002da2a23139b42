import type { Exclusion, ExclusionStore } from './ports';

/** `GET /api/analysis/exclusions`: the files the analysis skipped (undecodable, unreadable) and why. */
export class ExclusionService {
  constructor(private readonly store: ExclusionStore) {}

  /** The newest 1,000 exclusions of `serverId` (the caller's selected server), or of every server when `all` or no server. */
  list(serverId: string | undefined, all: boolean): Promise<Exclusion[]> {
    return this.store.exclusions(all ? undefined : serverId);
  }

  /** `GET /internal/analysis/stats` (the dashboard): files excluded as unanalyzable, tracks waiting, active coordinators. */
  stats(): Promise<{ unanalyzable_tracks: number; queue_backlog: number; active: number }> {
    return this.store.stats();
  }
}
