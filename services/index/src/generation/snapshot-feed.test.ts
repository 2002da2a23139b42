import { mulberry32 } from '@polyphony/vectors';
import { SnapshotFeed, byteOrderLess } from './snapshot-feed';

describe('byteOrderLess (UTF-8 byte order, as COLLATE "C")', () => {
  test('agrees with Buffer.compare of the UTF-8 bytes on random strings mixing ASCII, BMP, U+E000-U+FFFF and astral characters', () => {
    const rnd = mulberry32(42);
    const alphabet = ['a', 'b', 'z', '0', '-', 'é', 'Ω', '\uE000', '\uFFFD', '\u{10000}', '\u{1F3B5}', '中'];
    const word = () => Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
    let disagreementsWithJs = 0;
    for (let i = 0; i < 5000; i++) {
      const a = word();
      const b = word();
      const expected = Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) < 0;
      expect(byteOrderLess(a, b)).toBe(expected);
      if ((a < b) !== expected) disagreementsWithJs++;
    }
    // The case the function exists for does occur in this sample.
    expect(disagreementsWithJs).toBeGreaterThan(0);
  });

  test('equal strings and prefixes', () => {
    expect(byteOrderLess('abc', 'abc')).toBe(false);
    expect(byteOrderLess('ab', 'abc')).toBe(true);
    expect(byteOrderLess('abc', 'ab')).toBe(false);
  });
});

describe('SnapshotFeed', () => {
  test('yields pushed batches in order, waits for more, ends after end()', async () => {
    const feed = new SnapshotFeed();
    const seen: string[] = [];
    const consumer = (async () => {
      for await (const b of feed) seen.push(...b.ids);
    })();
    feed.push({ ids: ['a'], vectors: new Float32Array(2) });
    await new Promise((r) => setImmediate(r));
    feed.push({ ids: ['b', 'c'], vectors: new Float32Array(4) });
    feed.end();
    feed.push({ ids: ['late'], vectors: new Float32Array(2) });
    await consumer;
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  test('fail() ends the consumer with the error', async () => {
    const feed = new SnapshotFeed();
    feed.push({ ids: ['a'], vectors: new Float32Array(2) });
    const consumer = (async () => {
      const seen: string[] = [];
      for await (const b of feed) seen.push(...b.ids);
      return seen;
    })();
    await new Promise((r) => setImmediate(r));
    feed.fail(new Error('stopped'));
    await expect(consumer).rejects.toThrow('stopped');
  });
});
