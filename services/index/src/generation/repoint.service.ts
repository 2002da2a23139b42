import type { Logger } from '@polyphony/platform';
import type { RebuildService } from './rebuild.service';

/** One page of the catalogue's old -> new id map (GET /internal/ids/relabel-map). */
export interface RelabelPage {
  entries: Array<{ oldId: string; newId: string; kind: 'relabel' | 'merge' | 'unsignable' }>;
  next: string | null;
}

export type RelabelMapSource = (toVersion: number, after: string | null) => Promise<RelabelPage>;

/** Renames ids in the index's tables in one transaction (store: `ItemIdRenameStore`). */
export interface ItemIdRenamer {
  /** @throws when a new id is already taken (nothing changes then). */
  renameItemIds(olds: readonly string[], news: readonly string[]): Promise<void>;
}

/**
 * Repoints the index at relabelled canonical ids (spec: Content identity 4, Versioning 2): the ids in
 * the index's own tables (`tracks.item_id`, `cells.item_ids` of every stored generation) are rewritten
 * from the catalogue's relabel map in ONE transaction of the index schema, then the live generation is
 * reloaded from the database. No vector moves and nothing is re-clustered. Only one-to-one renames can
 * be repointed: when the map merges several old ids into one (or anything fails) the caller rebuilds
 * instead, as the spec allows ("an index that cannot be repointed is rebuilt").
 */
export class RepointService {
  constructor(
    private readonly ids: ItemIdRenamer,
    private readonly rebuild: RebuildService,
    private readonly relabelMap: RelabelMapSource,
    private readonly logger: Logger,
  ) {}

  /** @returns 'repointed' with the number of renamed ids, or 'rebuild' when repointing is impossible. */
  async repoint(toVersion: number): Promise<{ outcome: 'repointed' | 'rebuild'; renamed: number; reason?: string }> {
    const olds: string[] = [];
    const news: string[] = [];
    const seenNew = new Set<string>();
    let after: string | null = null;
    try {
      do {
        const page = await this.relabelMap(toVersion, after);
        for (const e of page.entries) {
          if (e.oldId === e.newId) continue;
          if (e.kind === 'merge' || seenNew.has(e.newId)) return { outcome: 'rebuild', renamed: 0, reason: 'the relabel merges songs' };
          seenNew.add(e.newId);
          olds.push(e.oldId);
          news.push(e.newId);
        }
        after = page.next;
      } while (after);
    } catch (err) {
      return { outcome: 'rebuild', renamed: 0, reason: `relabel map unavailable: ${(err as Error).message}` };
    }
    if (olds.length === 0) return { outcome: 'repointed', renamed: 0 };
    try {
      await this.ids.renameItemIds(olds, news);
    } catch (err) {
      this.logger.warn('index repoint failed; rebuilding instead', { toVersion, err: (err as Error).message });
      return { outcome: 'rebuild', renamed: 0, reason: (err as Error).message };
    }
    const { loaded } = await this.rebuild.loadLive();
    this.logger.info('index repointed at relabelled ids', { toVersion, renamed: olds.length, reloaded: loaded });
    return { outcome: 'repointed', renamed: olds.length };
  }
}
