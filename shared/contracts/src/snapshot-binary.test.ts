import { SnapshotPage } from './catalogue';
import { MSD_TAGS } from './learned';
import { SnapshotBinaryError, SnapshotStreamReader, decodeSnapshotPageBinary, encodeSnapshotPage, encodeSnapshotPageParts, snapshotFramePrefix, type SnapshotTrackBytes } from './snapshot-binary';

/** A track with every field kind the snapshot carries (nulls, learned features, several mappings). */
function track(i: number, vector: Uint8Array): SnapshotTrackBytes {
  return {
    itemId: `id-${i}-é`,
    vector,
    embedderVersion: 'v1',
    title: `Song ${i} "quoted" \u{1F3B5}`,
    artist: 'Beyoncé',
    album: i % 2 ? null : 'Album',
    albumArtist: null,
    year: 2001,
    rating: null,
    durationSeconds: 180.5,
    tempo: 121.25,
    key: 'C',
    scale: 'minor',
    energy: -11.5,
    learned: i % 2 ? null : { tagsModel: 'm', tags: { msd: MSD_TAGS.map((_, t) => (t % 7) / 8) }, moodVector: 'rock:0.5', otherFeatures: 'danceable:0.1' },
    hasLyrics: i % 3 === 0,
    mappings: [
      { serverId: 's1', providerId: `p${i}`, artistId: null },
      { serverId: 's2', providerId: `q${i}`, artistId: 'a1' },
    ],
  };
}

function floatBytes(values: number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

describe('binary snapshot page (SNAPSHOT_PAGE_BINARY_TYPE)', () => {
  test('round trip: same fields, same next and total, the exact vector bytes, 4-byte aligned vectors', () => {
    const tracks = [track(0, floatBytes([1, -2.5, Number.MIN_VALUE, 3e38])), track(1, floatBytes(Array.from({ length: 200 }, (_, d) => Math.sin(d)))), track(2, new Uint8Array(0))];
    const body = encodeSnapshotPage({ tracks, next: 'id-2-é', total: 1234 });
    const decoded = decodeSnapshotPageBinary(body);
    expect(decoded.next).toBe('id-2-é');
    expect(decoded.total).toBe(1234);
    const withoutVectors = tracks.map(({ vector: _v, ...t }) => t);
    expect(decoded.tracks).toEqual(withoutVectors);
    decoded.vectors.forEach((v, i) => {
      expect(Array.from(v)).toEqual(Array.from(tracks[i]!.vector));
      expect(v.byteOffset % 4).toBe(0);
    });
    // The JSON representation of the same page parses with the contract schema into the same fields.
    const json = SnapshotPage.parse({ next: decoded.next, total: decoded.total, tracks: tracks.map(({ vector, ...t }) => ({ ...t, embedding: Buffer.from(vector).toString('base64') })) });
    expect(json.tracks.map(({ embedding: _e, ...t }) => t)).toEqual(withoutVectors);
    json.tracks.forEach((t, i) => expect(Array.from(Buffer.from(t.embedding, 'base64'))).toEqual(Array.from(tracks[i]!.vector)));
  });

  test('last page: next null, no total; an empty page', () => {
    const one = decodeSnapshotPageBinary(encodeSnapshotPage({ tracks: [track(5, floatBytes([1]))], next: null }));
    expect(one.next).toBeNull();
    expect(one.total).toBeUndefined();
    const empty = decodeSnapshotPageBinary(encodeSnapshotPage({ tracks: [], next: null, total: 0 }));
    expect(empty.tracks).toEqual([]);
    expect(empty.vectors).toEqual([]);
    expect(empty.total).toBe(0);
  });

  test('vectors whose length is not a multiple of 4 are padded and still read back exactly', () => {
    const odd = [new Uint8Array([1, 2, 3]), new Uint8Array([4, 5, 6, 7, 8])];
    const body = encodeSnapshotPageParts(JSON.stringify({ next: null, tracks: [{}, {}] }), odd);
    const decoded = decodeSnapshotPageBinary(body);
    expect(decoded.vectors.map((v) => Array.from(v))).toEqual([[1, 2, 3], [4, 5, 6, 7, 8]]);
  });

  test('malformed bodies are refused with SnapshotBinaryError', () => {
    const good = encodeSnapshotPage({ tracks: [track(0, floatBytes([1, 2]))], next: null });
    const badMagic = good.slice();
    badMagic[0] = 0x51;
    expect(() => decodeSnapshotPageBinary(badMagic)).toThrow(SnapshotBinaryError);
    expect(() => decodeSnapshotPageBinary(good.subarray(0, good.length - 1))).toThrow(SnapshotBinaryError);
    expect(() => decodeSnapshotPageBinary(new Uint8Array([...good, 0, 0, 0, 0]))).toThrow(/trailing/);
    expect(() => decodeSnapshotPageBinary(new Uint8Array(5))).toThrow(SnapshotBinaryError);
    // Header count and n disagree.
    const mismatch = encodeSnapshotPageParts(JSON.stringify({ next: null, tracks: [{}] }), [new Uint8Array(4), new Uint8Array(4)]);
    expect(() => decodeSnapshotPageBinary(mismatch)).toThrow(/2 tracks/);
    // Header is not JSON.
    const notJson = encodeSnapshotPageParts('{"next": nul', []);
    expect(() => decodeSnapshotPageBinary(notJson)).toThrow(/JSON/);
  });
});

describe('snapshot stream (SNAPSHOT_STREAM_TYPE): length-prefixed binary pages', () => {
  const pages = [0, 1, 2].map((p) => encodeSnapshotPage({ tracks: [track(2 * p, floatBytes([p, 1])), track(2 * p + 1, floatBytes([p, 2]))], next: p < 2 ? `id-${2 * p + 1}-é` : null, ...(p === 0 ? { total: 6 } : {}) }));
  const stream = (() => {
    const parts = pages.flatMap((b) => [snapshotFramePrefix(b), b]);
    const out = new Uint8Array(parts.reduce((s, b) => s + b.length, 0));
    let at = 0;
    for (const b of parts) {
      out.set(b, at);
      at += b.length;
    }
    return out;
  })();

  test('cut into chunks of any size (1 byte, 7 bytes, one page and a bit, the whole stream), the reader gives the same pages in order', () => {
    for (const size of [1, 7, pages[0]!.length + 5, stream.length]) {
      const reader = new SnapshotStreamReader();
      const got: Uint8Array[] = [];
      for (let at = 0; at < stream.length; at += size) got.push(...reader.push(stream.subarray(at, at + size)));
      expect(got.map((b) => Buffer.from(b).toString('hex'))).toEqual(pages.map((b) => Buffer.from(b).toString('hex')));
      expect(reader.pendingBytes).toBe(0);
      expect(got.map((b) => decodeSnapshotPageBinary(b).next)).toEqual(['id-1-é', 'id-3-é', null]);
    }
  });

  test('a stream cut inside a frame leaves its bytes pending (truncated, not a page); a cut between frames leaves none', () => {
    const reader = new SnapshotStreamReader();
    const cut = 4 + pages[0]!.length + 4 + 10;
    expect(reader.push(stream.subarray(0, cut))).toHaveLength(1);
    expect(reader.pendingBytes).toBe(14);
    const clean = new SnapshotStreamReader();
    expect(clean.push(stream.subarray(0, 4 + pages[0]!.length))).toHaveLength(1);
    expect(clean.pendingBytes).toBe(0);
    const headOnly = new SnapshotStreamReader();
    expect(headOnly.push(stream.subarray(0, 2))).toHaveLength(0);
    expect(headOnly.pendingBytes).toBe(2);
  });

  test('a frame announcing more than SNAPSHOT_FRAME_MAX_BYTES is refused', () => {
    const reader = new SnapshotStreamReader();
    expect(() => reader.push(new Uint8Array([0xff, 0xff, 0xff, 0xff]))).toThrow(SnapshotBinaryError);
  });
});
