/**
 * The mapping change log the index replicas follow (issue 19): every write path of track_server_map is
 * logged by triggers in commit order, the full mapping set pages with the log position, and retention
 * answers `reset` to a reader that fell behind it.
 */
import { MappingChangesPage, MappingRowsPage, MappingsLoggedEvent, RoutingKeys, type MappingsLoggedEvent as Logged } from '@polyphony/contracts';
import { resolveRequest, songEmbedding, startCatalogue, type StartedCatalogue } from './helpers';

describe('mapping log (PostgreSQL, internal HTTP API)', () => {
  let c: StartedCatalogue;
  const nudges: Logged[] = [];

  beforeAll(async () => {
    c = await startCatalogue();
    await c.bus.consume({ queue: 'test.mappings-logged', bindings: [RoutingKeys.mappingsLogged], schema: MappingsLoggedEvent, handler: async (e) => void nudges.push(e) });
  });
  afterAll(async () => {
    await c?.stop();
    await c?.db.drop();
  });

  const changes = async (after: number, limit?: number) => MappingChangesPage.parse((await c.get(`/internal/mappings/changes?after=${after}${limit ? `&limit=${limit}` : ''}`).expect(200)).body);

  it('When mappings are added, re-pointed, removed and a server is deleted, then the log lists each key change in order and a nudge is published', async () => {
    const start = (await changes(0)).seq;
    const a = (await c.post('/internal/identity/resolve', resolveRequest('srv-a', 'a-1', songEmbedding(101))).expect(200)).body.itemId as string;
    const b = (await c.post('/internal/identity/resolve', resolveRequest('srv-b', 'b-1', songEmbedding(102))).expect(200)).body.itemId as string;
    // A metadata-only update is not a key change: not logged.
    await c.sql(`UPDATE catalogue.track_server_map SET file_path = '/x' WHERE provider_id = 'a-1'`);
    await c.sql(`UPDATE catalogue.track_server_map SET item_id = $1 WHERE server_id = 'srv-b' AND provider_id = 'b-1'`, [a]);
    await c.sql(`DELETE FROM catalogue.track_server_map WHERE server_id = 'srv-a' AND provider_id = 'a-1'`);
    const page = await changes(start);
    expect(page.reset).toBe(false);
    expect(page.more).toBe(false);
    expect(page.changes.map(([, s, p, i]) => [s, p, i])).toEqual([
      ['srv-a', 'a-1', a],
      ['srv-b', 'b-1', b],
      ['srv-b', 'b-1', a],
      ['srv-a', 'a-1', null],
    ]);
    const seqs = page.changes.map(([s]) => s);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(page.seq).toBe(seqs[seqs.length - 1]);
    // Paging: limit 1 walks the same entries.
    const first = await changes(start, 1);
    expect(first.more).toBe(true);
    expect(first.changes).toEqual([page.changes[0]]);
    // Server deletion (cascade through the server-deleted consumer) is logged too.
    await c.bus.publish(RoutingKeys.serverDeleted, { serverId: 'srv-b' });
    await waitFor(async () => (await changes(page.seq)).changes.length === 1);
    expect((await changes(page.seq)).changes.map(([, s, p, i]) => [s, p, i])).toEqual([['srv-b', 'b-1', null]]);
    await waitFor(async () => nudges.some((n) => n.serverId === 'srv-a'));
  });

  it('When the full mapping set is paged, then every row comes once, in key order, with the log position read first', async () => {
    for (let i = 0; i < 5; i++) await c.post('/internal/identity/resolve', resolveRequest('srv-c', `c-${i}`, songEmbedding(200 + i))).expect(200);
    const head = (await changes(0, 20_000)).seq;
    const rows: Array<[string, string, string]> = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: MappingRowsPage = MappingRowsPage.parse((await c.get(`/internal/mappings/rows?limit=2${after ? `&after=${after}` : ''}`).expect(200)).body);
      expect(page.seq).toBe(head);
      rows.push(...page.rows);
      after = page.next;
      pages++;
    } while (after);
    const expected = await c.sql<{ server_id: string; provider_id: string; item_id: string }>(`SELECT server_id, provider_id, item_id FROM catalogue.track_server_map ORDER BY server_id, provider_id`);
    expect(rows).toEqual(expected.map((r) => [r.server_id, r.provider_id, r.item_id]));
    expect(pages).toBeGreaterThanOrEqual(3);
    await c.get('/internal/mappings/rows?after=not-a-cursor').expect(400);
    await c.get('/internal/mappings/changes?after=-1').expect(400);
  });

  it('When retention pruned entries a reader still needs, then the reader is told to reset', async () => {
    const head = (await changes(0, 20_000)).seq;
    await c.sql(`UPDATE catalogue.mapping_log SET at = now() - interval '2 days'`);
    const pruned = await c.svc.mappingLog.prune();
    expect(pruned).toBeGreaterThan(0);
    expect(await changes(0)).toEqual({ reset: true, seq: 0, more: false, changes: [] });
    expect((await changes(head)).reset).toBe(false);
  });

  it('When retention pruned every entry, then the full set pages at the pruning mark and a reader that loaded it is not told to reset', async () => {
    await c.post('/internal/identity/resolve', resolveRequest('srv-d', 'd-0', songEmbedding(300))).expect(200);
    await c.sql(`UPDATE catalogue.mapping_log SET at = now() - interval '2 days'`);
    await c.svc.mappingLog.prune();
    expect(await c.sql(`SELECT seq FROM catalogue.mapping_log`)).toEqual([]);
    const mark = (await c.sql<{ pruned_through: string }>(`SELECT pruned_through FROM catalogue.mapping_log_state`))[0]!.pruned_through;
    expect(Number(mark)).toBeGreaterThan(0);
    const page = MappingRowsPage.parse((await c.get('/internal/mappings/rows?limit=100').expect(200)).body);
    expect(page.seq).toBe(Number(mark));
    expect(await changes(page.seq)).toEqual({ reset: false, seq: page.seq, more: false, changes: [] });
    // The next change is logged after the mark and read from it.
    await c.post('/internal/identity/resolve', resolveRequest('srv-d', 'd-1', songEmbedding(301))).expect(200);
    expect((await changes(page.seq)).changes.map(([, s, p]) => [s, p])).toEqual([['srv-d', 'd-1']]);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
