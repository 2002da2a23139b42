import { compareGolden, formatDifferences, GOLDEN_TOLERANCE, numbersAgree } from './compare';
import { Normaliser } from './normalise';

const row = (item_id: string, distance: number, title = item_id) => ({ item_id, title, author: 'Wesnoth', distance });
const recorded = { status: 200, body: [row('a', 0.1), row('b', 0.2), row('c', 0.3), row('d', 0.4)] };
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('golden comparator', () => {
  it('When the answer is the recorded one, then it passes', () => {
    expect(compareGolden(recorded, clone(recorded))).toEqual([]);
  });

  it('When numbers differ by float noise within the tolerance, then it passes', () => {
    const fresh = clone(recorded);
    fresh.body[1]!.distance += 4e-7;
    fresh.body[3]!.distance *= 1 + 5e-7;
    expect(compareGolden(recorded, fresh)).toEqual([]);
    expect(numbersAgree(1000, 1000 + 1e-3 * 0.9)).toBe(true);
  });

  it('When a number is out of tolerance, then it fails naming the field', () => {
    const fresh = clone(recorded);
    fresh.body[2]!.distance += 1e-5;
    const diffs = compareGolden(recorded, fresh);
    expect(diffs).toHaveLength(1);
    expect(diffs[0]!.path).toBe('$.body[2].distance');
    expect(numbersAgree(0.5, 0.5 + 3 * GOLDEN_TOLERANCE.abs)).toBe(false);
  });

  it('When a field changes, then it fails naming the field', () => {
    const fresh = clone(recorded);
    fresh.body[0]!.title = 'Another';
    expect(compareGolden(recorded, fresh)).toEqual([{ path: '$.body[0].title', message: 'expected "a", got "Another"' }]);
    const status = clone(recorded);
    status.status = 404;
    expect(compareGolden(recorded, status).map((d) => d.path)).toEqual(['$.status']);
  });

  it('When an item is missing or a field is added or removed, then it fails', () => {
    const fewer = clone(recorded);
    fewer.body.pop();
    const diffs = compareGolden(recorded, fewer);
    expect(diffs[0]).toEqual({ path: '$.body', message: 'expected 4 items, got 3' });
    expect(diffs[1]!.path).toBe('$.body[3]');
    const extra = clone(recorded) as { status: number; body: Array<Record<string, unknown>> };
    extra.body[0]!.extra = 1;
    expect(compareGolden(recorded, extra).map((d) => d.path)).toEqual(['$.body[0].extra']);
    const removed = clone(recorded) as { status: number; body: Array<Record<string, unknown>> };
    delete removed.body[0]!.author;
    expect(compareGolden(recorded, removed).map((d) => d.path)).toEqual(['$.body[0].author']);
    expect(compareGolden({ a: null }, { a: 0 })).toHaveLength(1);
  });

  it('When two rows that are not tied swap places, then it fails', () => {
    const fresh = clone(recorded);
    [fresh.body[0], fresh.body[1]] = [fresh.body[1]!, fresh.body[0]!];
    expect(compareGolden(recorded, fresh).length).toBeGreaterThan(0);
    const plain = { list: ['x', 'y'] };
    expect(compareGolden(plain, { list: ['y', 'x'] })).toHaveLength(2);
  });

  it('When rows tied within the tolerance swap places, then it passes; a tied row with a changed field still fails', () => {
    const tied = { body: [row('a', 0.1), row('b', 0.2), row('c', 0.2 + 5e-7), row('d', 0.4)] };
    const swapped = { body: [row('a', 0.1), row('c', 0.2 + 5e-7), row('b', 0.2), row('d', 0.4)] };
    expect(compareGolden(tied, swapped)).toEqual([]);
    const changed = clone(swapped);
    changed.body[1]!.title = 'changed';
    expect(compareGolden(tied, changed).length).toBeGreaterThan(0);
  });

  it('When the last row is cut off among ties, then another song of the same score passes but a changed recorded song fails', () => {
    const cut = { body: [row('a', 0.1), row('b', 0.3)] };
    expect(compareGolden(cut, { body: [row('a', 0.1), row('z', 0.3)] })).toEqual([]);
    expect(compareGolden(cut, { body: [row('a', 0.1), row('z', 0.31)] }).length).toBeGreaterThan(0);
    expect(compareGolden(cut, { body: [row('a', 0.1), row('b', 0.3, 'renamed')] }).length).toBeGreaterThan(0);
    expect(compareGolden(cut, { body: [row('a', 0.1), row('a', 0.3)] }).length).toBeGreaterThan(0);
  });

  it('When differences are formatted, then each is one line and long lists are cut', () => {
    const text = formatDifferences('x', Array.from({ length: 5 }, (_, i) => ({ path: `$[${i}]`, message: 'm' })), 3);
    expect(text.split('\n')).toEqual(['x: 5 difference(s)', '  $[0]: m', '  $[1]: m', '  $[2]: m', '  ... and 2 more']);
  });
});

describe('golden normaliser', () => {
  it('When answers hold run-specific ids, times and volatile keys, then they become labels and masks with the key kept', () => {
    const n = new Normaliser();
    n.register('3f1c9a7e-1111-4222-8333-444455556666', 'Supysonic:sad');
    n.register('fp_1abc', 'song:sad');
    const out = n.normalise({
      z: 1,
      item_id: '3f1c9a7e-1111-4222-8333-444455556666',
      fp: 'fp_1abc',
      message: 'seed fp_1abc done at 2026-12-03T20:50:07.123Z by task 0a1b2c3d-0000-4000-8000-000000000000',
      running_time_seconds: 12.5,
      task_id: null,
    }) as Record<string, unknown>;
    expect(out).toEqual({
      fp: '<song:sad>',
      item_id: '<Supysonic:sad>',
      message: 'seed <song:sad> done at <time> by task <uuid>',
      running_time_seconds: '<volatile:number>',
      task_id: null,
      z: 1,
    });
    expect(Object.keys(out)).toEqual(['fp', 'item_id', 'message', 'running_time_seconds', 'task_id', 'z']);
  });

  it('When an answer holds a base64 float32 embedding or a paging cursor, then they are decoded (numbers compared with the tolerance)', () => {
    const n = new Normaliser();
    n.register('fp_4eb1145798', 'song:sad');
    const floats = Buffer.alloc(8);
    floats.writeFloatLE(0.25, 0);
    floats.writeFloatLE(-1.5, 4);
    const cursor = Buffer.from('fp_4eb1145798').toString('base64url');
    expect(n.normalise({ embedding: floats.toString('base64'), next_page: cursor })).toEqual({ embedding: { float32_base64: [0.25, -1.5] }, next_page: '<cursor:<song:sad>>' });
    expect(n.normaliseRequest('GET', `/api/sync?limit=20&next_page=${cursor}&ids=a%2Cfp_4eb1145798`)).toBe('GET /api/sync?limit=20&next_page=<cursor:<song:sad>>&ids=a,<song:sad>');
    const noisy = Buffer.from(floats);
    noisy.writeFloatLE(0.25 + 1e-7, 0);
    expect(compareGolden(n.normalise({ embedding: floats.toString('base64') }), n.normalise({ embedding: noisy.toString('base64') }))).toEqual([]);
  });

  it('When an id is labelled twice differently, a label is given to two ids or an id is too short, then registering throws', () => {
    const n = new Normaliser();
    n.register('abc-1', 'x');
    expect(() => n.register('abc-1', 'y')).toThrow(/labelled twice/);
    expect(() => n.register('ab', 'z')).toThrow(/too short/);
    expect(() => n.register('abc-2', 'x')).toThrow(/two ids/);
    n.register('abc-1', 'x');
  });
});
