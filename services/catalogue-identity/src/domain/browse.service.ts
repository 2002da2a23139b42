import { BROWSE_COUNT_CAP, BROWSE_PAGE_SIZE, type BrowsePageResult, type CatalogueBrowseQuery } from '@polyphony/contracts';
import { ValidationError } from '@polyphony/platform';
import type { BrowseStore } from './ports';

/**
 * GET /internal/browse: one page (BROWSE_PAGE_SIZE rows) of the catalogue's songs, artists or albums for the
 * registry's GET /api/dashboard/browse (contracts browse.ts has the filters and row shapes). The page is read
 * with one row more than it shows (`has_more`); `total` is counted up to BROWSE_COUNT_CAP (`capped` past it).
 * @throws ValidationError (400) for `duplicates` without a server: copies are counted per server.
 */
export class BrowseService {
  constructor(private readonly store: BrowseStore) {}

  async page(query: CatalogueBrowseQuery): Promise<BrowsePageResult> {
    if (query.filter === 'duplicates' && !query.server_id) throw new ValidationError('filter=duplicates needs a server: duplicates are several files of one song on one server');
    const q = query.q?.trim() || undefined;
    const sel = { kind: query.kind, filter: query.filter, q, serverId: query.server_id };
    const [rows, n] = await Promise.all([this.store.rows(sel, BROWSE_PAGE_SIZE + 1, (query.page - 1) * BROWSE_PAGE_SIZE), this.store.count(sel, BROWSE_COUNT_CAP)]);
    return { has_more: rows.length > BROWSE_PAGE_SIZE, capped: n > BROWSE_COUNT_CAP, total: Math.min(n, BROWSE_COUNT_CAP), results: rows.slice(0, BROWSE_PAGE_SIZE) };
  }
}
