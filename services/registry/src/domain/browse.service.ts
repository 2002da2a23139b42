import { api, BROWSE_PAGE_SIZE, type BrowsePageResult, type BrowseResponse, type BrowseFilter, type BrowseKind } from '@polyphony/contracts';
import { ValidationError, type PeerClient } from '@polyphony/platform';
import type { ServerStore } from './ports';

/** The public browse query once parsed (contracts BrowseQuery). */
export interface BrowseInput {
  kind?: BrowseKind;
  filter?: BrowseFilter;
  q?: string;
  page?: number;
  server?: string;
}

/**
 * GET /api/dashboard/browse (contracts browse.ts): composed like the dashboard summary, from the unit that owns
 * the data. `songs`, `artists` and `albums` come from the catalogue (GET /internal/browse: it holds the songs and
 * their files per server), `unanalyzable` from the analysis worker (GET /internal/analysis/unanalyzable: its
 * exclusions), with the server names filled in here. `server` (display name or id) is resolved against the
 * registry's list; absent = every server (the catalogue-wide view; the gateway does not resolve the registry's routes).
 * @throws ValidationError (400) for an unknown server, and for `filter=duplicates` without a server
 * A peer that fails answers the platform's 502/504 (no partial page).
 */
export class BrowseService {
  constructor(
    private readonly servers: Pick<ServerStore, 'list'>,
    private readonly catalogue: PeerClient,
    private readonly analysis: PeerClient,
  ) {}

  async browse(input: BrowseInput): Promise<BrowseResponse> {
    const kind = input.kind ?? 'songs';
    const filter = input.filter ?? 'all';
    const page = input.page ?? 1;
    const list = await this.servers.list();
    const given = input.server?.trim() || undefined;
    const server = given === undefined ? undefined : list.find((s) => s.id === given) ?? list.find((s) => s.name.toLowerCase() === given.toLowerCase());
    if (given !== undefined && !server) throw new ValidationError(`Unknown server "${given}": give a configured server's display name or id`);
    if (kind !== 'unanalyzable' && filter === 'duplicates' && !server) throw new ValidationError('filter=duplicates needs server: duplicates are several files of one song on one server');
    const q = input.q?.trim() || undefined;
    const query = { page, ...(q ? { q } : {}), ...(server ? { server_id: server.id } : {}) };
    let result: BrowsePageResult;
    if (kind === 'unanalyzable') {
      result = await this.analysis.call(api.browse.unanalyzable, { query });
      const names = new Map(list.map((s) => [s.id, s.name]));
      result = { ...result, results: result.results.map((r) => ({ ...r, server: names.get(String(r.server_id)) ?? null })) };
    } else {
      result = await this.catalogue.call(api.browse.catalogueBrowse, { query: { ...query, kind, filter } });
    }
    return {
      kind,
      filter,
      page,
      page_size: BROWSE_PAGE_SIZE,
      has_more: result.has_more,
      capped: result.capped,
      server: server?.name ?? null,
      total: result.total,
      results: result.results as BrowseResponse['results'],
    };
  }
}
