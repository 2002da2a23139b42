import { api, type RouteDef } from '@polyphony/contracts';
import type { PeerClient } from '@polyphony/platform';
import { BrowseService } from './browse.service';
import type { MusicServer } from './server';

const server = (id: string, name: string, isDefault = false) => ({ id, name, isDefault }) as MusicServer;
const servers = { list: async () => [server('id-a', 'Living room', true), server('id-b', 'Office')] };

/** A peer that records the calls it gets and answers `answer`. */
function peer(answer: unknown) {
  const calls: Array<{ route: RouteDef; input: unknown }> = [];
  const client = { call: async (route: RouteDef, input: unknown) => (calls.push({ route, input }), answer) } as unknown as PeerClient;
  return { client, calls };
}

describe('registry BrowseService (GET /api/dashboard/browse)', () => {
  const page = { has_more: true, capped: false, total: 250, results: [{ item_id: 'p1', title: 'A' }] };

  it('When songs are asked with a server name (any case), then the catalogue gets its id and the answer names it', async () => {
    const cat = peer(page);
    const ana = peer(page);
    const r = await new BrowseService(servers, cat.client, ana.client).browse({ kind: 'songs', filter: 'duplicates', q: '  rain ', page: 3, server: 'office' });
    expect(cat.calls).toEqual([{ route: api.browse.catalogueBrowse, input: { query: { page: 3, q: 'rain', server_id: 'id-b', kind: 'songs', filter: 'duplicates' } } }]);
    expect(ana.calls).toEqual([]);
    expect(r).toEqual({ kind: 'songs', filter: 'duplicates', page: 3, page_size: 100, has_more: true, capped: false, server: 'Office', total: 250, results: page.results });
  });

  it('When no server is given, then the whole catalogue is asked (no server id, server null), defaults kind songs, filter all, page 1', async () => {
    const cat = peer(page);
    const r = await new BrowseService(servers, cat.client, peer(page).client).browse({});
    expect(cat.calls[0]!.input).toEqual({ query: { page: 1, kind: 'songs', filter: 'all' } });
    expect(r).toMatchObject({ kind: 'songs', filter: 'all', page: 1, server: null });
  });

  it('When unanalyzable files are asked, then the analysis worker answers and each row gets its server name (null for a deleted server)', async () => {
    const ana = peer({ has_more: false, capped: false, total: 2, results: [{ item_id: 'x', server_id: 'id-a' }, { item_id: 'y', server_id: 'gone' }] });
    const r = await new BrowseService(servers, peer(page).client, ana.client).browse({ kind: 'unanalyzable', server: 'id-a' });
    expect(ana.calls).toEqual([{ route: api.browse.unanalyzable, input: { query: { page: 1, server_id: 'id-a' } } }]);
    expect(r.results).toEqual([{ item_id: 'x', server_id: 'id-a', server: 'Living room' }, { item_id: 'y', server_id: 'gone', server: null }]);
  });

  it('When the server is unknown, or duplicates are asked without a server, then it is a 400 and no peer is called', async () => {
    const cat = peer(page);
    const svc = new BrowseService(servers, cat.client, peer(page).client);
    await expect(svc.browse({ server: 'Nope' })).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/Unknown server "Nope"/) });
    await expect(svc.browse({ filter: 'duplicates' })).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/needs server/) });
    expect(cat.calls).toEqual([]);
  });
});
