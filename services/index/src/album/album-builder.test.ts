import { ALBUM_DEFAULTS, calibrate, cohesionOf, selectAlbum, seedArtistCap, sequenceAlbum, type AlbumCandidate, type AlbumSelectOptions } from './album-builder';

/** Unit vector at angle `deg` (degrees) in the plane of the first two axes of a 4-d space. */
function at(deg: number): Float32Array {
  const r = (deg * Math.PI) / 180;
  return Float32Array.from([Math.cos(r), Math.sin(r), 0, 0]);
}

function cand(row: number, deg: number, over: Partial<AlbumCandidate> = {}): AlbumCandidate {
  return { row, vector: at(deg), artist: row, duration: 200, year: null, intensity: 0.5, ...over };
}

const options = (over: Partial<AlbumSelectOptions> = {}): AlbumSelectOptions => ({
  length: 4,
  target: 0.99,
  pairFloor: -1,
  maxPerArtist: 2,
  maxSeedArtist: 4,
  eraWindow: 15,
  minDuration: 100,
  maxDuration: 600,
  ...over,
});

describe('album selection (greedy towards a cohesion target)', () => {
  const pool = [cand(1, 2), cand(2, 4), cand(3, 6), cand(4, 20), cand(5, 30), cand(6, 40), cand(7, 60)];

  it('When the target is high, then the nearest songs are picked, and when it is lower, then farther ones that land the album on it', () => {
    const near = selectAlbum(cand(0, 0), pool, options({ target: 1 }));
    expect(near.picks.map((c) => c.row)).toEqual([0, 1, 2, 3]);
    expect(near.stage).toBe(0);
    const target = Math.cos((25 * Math.PI) / 180);
    const spread = selectAlbum(cand(0, 0), pool, options({ target }));
    expect(spread.picks.map((c) => c.row)).not.toEqual([0, 1, 2, 3]);
    // The farther album lands closer to its target than the nearest-neighbour one does.
    const c = cohesionOf(spread.picks.map((p) => p.vector));
    expect(Math.abs(c - target)).toBeLessThan(Math.abs(cohesionOf(near.picks.map((p) => p.vector)) - target));
  });

  it('When another artist already has two tracks, then a third is skipped; the seed artist may have up to its own cap', () => {
    const sameArtist = [cand(1, 1, { artist: 9 }), cand(2, 2, { artist: 9 }), cand(3, 3, { artist: 9 }), cand(4, 30), cand(5, 31)];
    const album = selectAlbum(cand(0, 0), sameArtist, options({ target: 1 }));
    expect(album.picks.map((c) => c.row)).toEqual([0, 1, 2, 4]);
    const seedArtist = [cand(1, 1, { artist: 0 }), cand(2, 2, { artist: 0 }), cand(3, 3, { artist: 0 }), cand(4, 30)];
    expect(selectAlbum(cand(0, 0), seedArtist, options({ target: 1, maxSeedArtist: 3 })).picks.map((c) => c.row)).toEqual([0, 1, 2, 4]);
  });

  it('When tracks are too short or too long, or outside the 15-year era window, then they are not picked', () => {
    const p = [cand(1, 1, { duration: 60 }), cand(2, 2, { duration: 900 }), cand(3, 3, { year: 1960 }), cand(4, 4, { year: 1990 }), cand(5, 5, { duration: null }), cand(6, 6, { year: 2001 }), cand(7, 7)];
    const album = selectAlbum(cand(0, 0, { year: 1995 }), p, options({ target: 1 }));
    expect(album.picks.map((c) => c.row)).toEqual([0, 4, 5, 6]);
    expect(album.stage).toBe(0);
  });

  it('When only short tracks are left, then the last stage (3) takes them rather than leave the album short', () => {
    const album = selectAlbum(cand(0, 0, { duration: 50 }), [cand(1, 1, { duration: 40 }), cand(2, 2, { duration: 30 }), cand(3, 3)], options({ target: 1 }));
    expect(album.picks.map((c) => c.row)).toEqual([0, 3, 1, 2]);
    expect(album.stage).toBe(3);
  });

  it('When the pair floor cannot be met, then the floor is relaxed (stage 1) and the album is still filled', () => {
    const album = selectAlbum(cand(0, 0), [cand(1, 5), cand(2, 80), cand(3, 85)], options({ target: 1, pairFloor: 0.9 }));
    expect(album.picks).toHaveLength(4);
    expect(album.stage).toBe(1);
  });

  it('When the caps leave too few songs, then stage 2 drops them; when the pool is exhausted, then the album is shorter', () => {
    const album = selectAlbum(cand(0, 0), [cand(1, 1, { artist: 9 }), cand(2, 2, { artist: 9 }), cand(3, 3, { artist: 9 })], options({ target: 1 }));
    expect(album.picks).toHaveLength(4);
    expect(album.stage).toBe(2);
    expect(selectAlbum(cand(0, 0), [cand(1, 1)], options()).picks).toHaveLength(2);
  });

  it('When a gap tolerance is given, then among candidates about as good for the target the one nearest the first pick wins', () => {
    // Target cos 30 degrees: row 2 (31 degrees) is nearer the target than row 1 (25 degrees), which is nearer the seed.
    const target = Math.cos((30 * Math.PI) / 180);
    const p = [cand(1, 25), cand(2, 31)];
    expect(selectAlbum(cand(0, 0), p, options({ target, length: 2 })).picks[1]!.row).toBe(2);
    expect(selectAlbum(cand(0, 0), p, options({ target, length: 2, gapTolerance: 0.05 })).picks[1]!.row).toBe(1);
  });

  it('When a text seed gives turn lists, then the picks alternate between the concepts', () => {
    const p = [cand(1, 1), cand(2, 2), cand(3, 3), cand(11, 20), cand(12, 21), cand(13, 22)];
    const turns = [new Set([11, 12, 13]), new Set([1, 2, 3])];
    const album = selectAlbum(cand(0, 0), p, options({ target: 1, length: 5, turns }));
    // Steps alternate between the two lists (each step's best for cohesion within its list).
    const rows = album.picks.map((c) => c.row);
    expect(rows.map((r) => (r === 0 ? 'seed' : turns[0]!.has(r) ? 'a' : 'b'))).toEqual(['seed', 'a', 'b', 'a', 'b']);
    // Within the second list the pick nearest the album so far (row 3, 3 degrees, beside 0 and 20 degrees) wins.
    expect(rows[2]).toBe(3);
  });
});

describe('calibration of target and floor', () => {
  it('When random pairs score 0 and the nearest neighbours 0.6, then the target and floor sit at 85% and 40% of the way', () => {
    const c = calibrate(0, 0.6);
    expect(c.target).toBeCloseTo(0.51, 6);
    expect(c.pairFloor).toBeCloseTo(0.24, 6);
  });

  it("When the embedding's cosines sit high, then the reference's absolute values (0.86, 0.75) cap them", () => {
    expect(calibrate(0.7, 0.99)).toEqual({ target: ALBUM_DEFAULTS.referenceTarget, pairFloor: ALBUM_DEFAULTS.referencePairFloor });
  });

  it('When the album is 12 tracks, then the seed artist may have 4', () => {
    expect(seedArtistCap(12)).toBe(4);
    expect(seedArtistCap(4)).toBe(2);
  });
});

describe('album sequencing', () => {
  const picks = [
    cand(0, 0, { intensity: 0.5, artist: 1 }),
    cand(1, 5, { intensity: 0.9, artist: 2 }),
    cand(2, 10, { intensity: 0.8, artist: 3 }),
    cand(3, 15, { intensity: 0.7, artist: 4 }),
    cand(4, 20, { intensity: 0.4, artist: 5 }),
    cand(5, 25, { intensity: 0.3, artist: 6 }),
    cand(6, 70, { intensity: 0.05, artist: 7 }),
  ];

  it('When the opener is a bang, then the three most intense open the album and the calmest least typical track closes it', () => {
    const seq = sequenceAlbum(picks, 'bang');
    expect(seq.map((s) => s.candidate.row)).toEqual([1, 2, 3, expect.any(Number), expect.any(Number), expect.any(Number), 6]);
    expect(seq.map((s) => s.role)).toEqual(['opener', 'single', 'single', 'track', 'track', 'track', 'closer']);
    expect(seq.map((s) => s.slot)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(seq.map((s) => s.candidate.row)).size).toBe(7);
  });

  it('When the opener is an intro, then a calm typical track opens and the two most intense are singles in slots 2-3', () => {
    const seq = sequenceAlbum(picks, 'intro');
    expect(seq[0]!.candidate.intensity).toBeLessThan(0.5);
    expect(seq.slice(1, 3).map((s) => s.candidate.row)).toEqual([1, 2]);
    expect(seq[6]!.candidate.row).toBe(6);
  });

  it('When the middle is ordered, then each next track is the most similar remaining one', () => {
    const seq = sequenceAlbum(picks, 'bang');
    // From slot 3 (row 3, 15 degrees): the nearest remaining is row 4 (20), then 5 (25), then 0 (0).
    expect(seq.slice(3, 6).map((s) => s.candidate.row)).toEqual([4, 5, 0]);
  });

  it('When there are fewer than 4 tracks, then they keep their pick order with an opener and a closer', () => {
    expect(sequenceAlbum(picks.slice(0, 3), 'bang').map((s) => s.role)).toEqual(['opener', 'track', 'closer']);
  });
});
