import { matchAnyTopic, matchTopic } from './topic';

describe('topic pattern matching (AMQP topic exchange semantics)', () => {
  it.each([
    ['catalogue.track.identified.v1', 'catalogue.track.identified.v1', true],
    ['catalogue.track.identified.v1', 'catalogue.track.identified.v2', false],
    ['catalogue.*.identified.v1', 'catalogue.track.identified.v1', true],
    ['catalogue.*.identified.v1', 'catalogue.identified.v1', false],
    ['catalogue.*.identified.v1', 'catalogue.a.b.identified.v1', false],
    ['*', 'a', true],
    ['*', 'a.b', false],
    ['*.*', 'a.b', true],
    ['#', '', true],
    ['#', 'a', true],
    ['#', 'a.b.c', true],
    ['a.#', 'a', true],
    ['a.#', 'a.b', true],
    ['a.#', 'a.b.c', true],
    ['a.#', 'b.a', false],
    ['#.z', 'z', true],
    ['#.z', 'a.b.z', true],
    ['#.z', 'a.b.z.q', false],
    ['a.#.z', 'a.z', true],
    ['a.#.z', 'a.b.c.z', true],
    ['a.#.z', 'a.b.c', false],
    ['a.#.#.z', 'a.z', true],
    ['a.*.#', 'a', false],
    ['a.*.#', 'a.b', true],
    ['a.*.#', 'a.b.c.d', true],
    ['#.*', '', false], // '' has no words
    ['*', '', false],
    ['', '', true],
    ['', 'a', false],
    ['#.*.#', 'x', true],
    ['a.#.b.#.c', 'a.x.b.y.b.c', true],
    ['a.#.b.#.c', 'a.x.c.b', false],
    // Only whole words are wildcards.
    ['a*.b', 'ax.b', false],
    ['a*.b', 'a*.b', true],
    ['a.#b', 'a.xb', false],
    // Empty words count.
    ['a.*.b', 'a..b', true],
    ['a.b', 'a..b', false],
  ])('%s ~ %s -> %s', (pattern, key, expected) => {
    expect(matchTopic(pattern, key)).toBe(expected);
  });

  it('matchAnyTopic is true when any pattern matches', () => {
    expect(matchAnyTopic(['x.*', 'y.#'], 'y.a.b')).toBe(true);
    expect(matchAnyTopic(['x.*', 'y.#'], 'z.a')).toBe(false);
    expect(matchAnyTopic([], 'a')).toBe(false);
  });

  it('handles long keys against many-# patterns quickly (no exponential backtracking)', () => {
    const key = Array.from({ length: 200 }, (_, i) => `w${i % 7}`).join('.');
    const pattern = Array.from({ length: 30 }, () => '#.w3').join('.') + '.nomatch';
    const t0 = Date.now();
    expect(matchTopic(pattern, key)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(200);
  });
});
