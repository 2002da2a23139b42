import request from 'supertest';
import { JELLY, NAVI, setupFixture, type Fixture } from './fixtures';

/**
 * The index's served listener (`svc.handler`: the request pipeline first, issue 19 / 29) against its express app
 * (`svc.http`, whose first middleware is the same pipeline): both must answer every GET alike,
 * successes and failures, since both run the same mounted chain from the contracts table.
 */
let f: Fixture;

beforeAll(async () => {
  f = await setupFixture();
}, 120_000);

afterAll(async () => {
  await f?.close();
});

/** Status, body and the error code of one GET through each listener. */
async function both(path: string, headers: Record<string, string>) {
  const lean = await request(f.svc.handler).get(path).set(headers).set('x-request-id', 'lean-path-test');
  const plain = await request(f.svc.http).get(path).set(headers).set('x-request-id', 'lean-path-test');
  return { lean, plain };
}

describe('index lean GET path', () => {
  it('When similar songs, search, artists, map and status are asked, then the served listener answers exactly as the express app', async () => {
    const seed = f.jellyId(3);
    const paths = [
      `/api/similar_tracks?item_id=${seed}&n=10`,
      `/api/similar_tracks?item_id=${seed}&n=25&eliminate_duplicates=false`,
      '/api/search_tracks?search_query=Song',
      '/api/similar_artists?artist=Artist%205&n=3',
      '/api/map?n=5',
      '/api/index/status',
    ];
    for (const path of paths) {
      const { lean, plain } = await both(path, f.as(JELLY));
      expect([path, lean.status]).toEqual([path, plain.status]);
      expect(lean.status).toBe(200);
      expect(lean.body).toEqual(plain.body);
      expect(lean.headers['x-request-id']).toBe('lean-path-test');
      expect(lean.headers['content-type']).toBe(plain.headers['content-type']);
    }
  });

  it('When a request fails (bad parameter, unknown song, song not on the server, no signature, admin route as a user), then the served listener gives the same status and error envelope', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['/api/similar_tracks?item_id=x&n=0', f.as(JELLY)],
      ['/api/similar_tracks?item_id=no-such-song', f.as(JELLY)],
      [`/api/similar_tracks?item_id=${f.jellyId(3)}`, f.as(NAVI)],
      ['/api/similar_tracks?item_id=a&item_id=b', f.as(JELLY)],
      ['/api/similar_tracks?item_id=x', {}],
      ['/api/no_such_route', f.as(JELLY)],
    ];
    for (const [path, headers] of cases) {
      const { lean, plain } = await both(path, headers);
      expect([path, lean.status]).toEqual([path, plain.status]);
      expect(lean.status).toBeGreaterThanOrEqual(400);
      expect(lean.body).toEqual(plain.body);
      expect(lean.body.request_id).toBe('lean-path-test');
    }
  });
});
