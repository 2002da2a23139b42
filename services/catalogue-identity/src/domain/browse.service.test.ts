import { BROWSE_COUNT_CAP } from '@polyphony/contracts';
import { BrowseService } from './browse.service';
import type { BrowseSelection, BrowseStore } from './ports';

/** A store that answers `n` rows and `counted` for the count, recording what it was asked. */
function store(n: number, counted: number) {
  const asked: Array<{ sel: BrowseSelection; limit: number; offset: number }> = [];
  const s: BrowseStore = {
    rows: async (sel, limit, offset) => (asked.push({ sel, limit, offset }), Array.from({ length: n }, (_, i) => ({ item_id: `s${i}` }))),
    count: async () => counted,
  };
  return { s, asked };
}

describe('catalogue BrowseService (GET /internal/browse)', () => {
  it('When page 3 is asked, then 101 rows from offset 200 are read, 100 shown, has_more set, and q is trimmed', async () => {
    const { s, asked } = store(101, 420);
    const r = await new BrowseService(s).page({ kind: 'songs', filter: 'all', page: 3, q: '  rain  ', server_id: 'a' });
    expect(asked).toEqual([{ sel: { kind: 'songs', filter: 'all', q: 'rain', serverId: 'a' }, limit: 101, offset: 200 }]);
    expect(r).toMatchObject({ has_more: true, capped: false, total: 420 });
    expect(r.results).toHaveLength(100);
  });

  it('When the count passes the cap, then total is the cap and capped is set; a blank q is no filter', async () => {
    const { s, asked } = store(3, BROWSE_COUNT_CAP + 1);
    const r = await new BrowseService(s).page({ kind: 'artists', filter: 'unique', page: 1, q: '   ' });
    expect(asked[0]!.sel.q).toBeUndefined();
    expect(r).toEqual({ has_more: false, capped: true, total: BROWSE_COUNT_CAP, results: [{ item_id: 's0' }, { item_id: 's1' }, { item_id: 's2' }] });
  });

  it('When duplicates are asked without a server, then it is a 400 and the store is not read', async () => {
    const { s, asked } = store(0, 0);
    await expect(new BrowseService(s).page({ kind: 'songs', filter: 'duplicates', page: 1 })).rejects.toMatchObject({ httpStatus: 400 });
    expect(asked).toEqual([]);
  });
});
