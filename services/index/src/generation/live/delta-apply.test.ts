/**
 * The live library's delta apply (issue 35): new songs are appended to the serving generation in place (nearest
 * cell, availability, metadata, map position from neighbours), a removed mapping masks a song, a redelivered batch
 * changes nothing, and drift measures say when a full rebuild is due.
 */
import { mixturePoints } from '../../__tests__/mixture-points';
import { buildIvfIndex, type IvfIndex } from '@polyphony/vector-engine';
import { ArtistLinks, emptyGeneration, type Generation } from '../../core/generation';
import { GenerationMaps } from '../../maps/generation-maps';
import { TrackMetaStore } from '../../maps/track-meta-store';
import { applyDelta, type DeltaTrack } from './delta-apply';
import { DEFAULT_DRIFT, measureDrift } from './drift';

const DIM = 32;
const BASE = 2000;

const points = (count: number, streamSeed: number) => mixturePoints(count, streamSeed, { dim: DIM, clusters: 30, intrinsicDim: 6, seed: 9 }, true);

const meta = (title: string) => ({ title, artist: 'Artist', album: 'Album', albumArtist: null, moodVector: null, otherFeatures: null, tempo: 120, energy: -10 });

describe('live library delta apply', () => {
  jest.setTimeout(300_000);
  let gen: Generation;
  let index: IvfIndex;

  beforeAll(async () => {
    const p = points(BASE, 1);
    index = (await buildIvfIndex([{ ids: p.ids, vectors: p.vectors }], { expectedCount: BASE, nlist: 24, dim: DIM })).index;
    const maps = new GenerationMaps(index);
    const store = new TrackMetaStore(index.size);
    for (let r = 0; r < index.size; r++) {
      maps.apply('srv', `p${r}`, index.idOf(r));
      store.set(r, meta(`Song ${r}`));
    }
    const coords = new Float32Array(index.size * 2);
    for (let r = 0; r < index.size; r++) {
      const v = index.getVector(r);
      coords[r * 2] = v[0]!;
      coords[r * 2 + 1] = v[1]!;
    }
    gen = { ...emptyGeneration(DIM), generation: 7, index, links: new ArtistLinks(), coords, maps, meta: store };
  });

  function batch(seq: number, count: number, streamSeed: number): DeltaTrack[] {
    const p = points(count, streamSeed);
    return p.ids.map((itemId, i) => ({ itemId, vector: p.vectors.slice(i * DIM, (i + 1) * DIM), meta: meta(`New ${seq}.${i}`), mappings: [{ serverId: 'srv', providerId: `new${seq}.${i}` }] }));
  }

  it('When new songs arrive, then they are appended, available on their server, shown with metadata, placed among their neighbours, and the old generation is unchanged', () => {
    const tracks = batch(1, 50, 2);
    const out = applyDelta(gen, { seq: 11, tracks });
    expect(out.added).toBe(50);
    expect(out.present).toBe(0);
    const g = out.gen;
    expect(g.generation).toBe(7);
    expect(g.revision).toBe(1);
    expect(g.deltaSeq).toBe(11);
    expect(g.index.size).toBe(BASE + 50);
    const mask = g.maps.mask('srv');
    expect(mask.count).toBe(BASE + 50);
    for (let i = 0; i < 50; i += 7) {
      const row = g.index.rowOf(tracks[i]!.itemId);
      expect(row).toBe(BASE + i);
      expect(mask.has(row)).toBe(true);
      expect(g.maps.rowOfProvider('srv', `new1.${i}`)).toBe(row);
      expect(g.meta.get(row, tracks[i]!.itemId)?.title).toBe(`New 1.${i}`);
      // Found by similar-songs search on its server, as its own nearest neighbour.
      expect(g.index.search(tracks[i]!.vector, { k: 1, mask })[0]!.row).toBe(row);
      // Map position: the weighted mean of its neighbours' positions, so near the nearest one's.
      const nearest = gen.index.search(tracks[i]!.vector, { k: 1 })[0]!.row;
      const dx = g.coords[row * 2]! - gen.coords[nearest * 2]!;
      const dy = g.coords[row * 2 + 1]! - gen.coords[nearest * 2 + 1]!;
      expect(Math.hypot(dx, dy)).toBeLessThan(0.5);
    }
    // Old rows keep their numbers, positions and metadata.
    expect(g.index.idOf(5)).toBe(gen.index.idOf(5));
    expect(g.coords[10]).toBe(gen.coords[10]);
    expect(g.meta.get(5, g.index.idOf(5))?.title).toBe('Song 5');
    // The generation requests already hold is untouched.
    expect(gen.index.size).toBe(BASE);
    expect(gen.maps.mask('srv').count).toBe(BASE);
    expect(gen.meta.has(BASE)).toBe(false);
  });

  it('When the same batch is delivered again, then no row is added and the answer stays the same', () => {
    const tracks = batch(1, 20, 3);
    const once = applyDelta(gen, { seq: 12, tracks }).gen;
    const twice = applyDelta(once, { seq: 12, tracks });
    expect(twice.added).toBe(0);
    expect(twice.present).toBe(20);
    expect(twice.gen.index.size).toBe(once.index.size);
    const q = tracks[4]!.vector;
    expect(twice.gen.index.search(q, { k: 10, mask: twice.gen.maps.mask('srv') })).toEqual(once.index.search(q, { k: 10, mask: once.maps.mask('srv') }));
  });

  it("When a batch carries its mapping-log position, then the new maps' position is lowered to it (a new maps object even when nothing is appended), so the log after the batch's read is replayed over its mappings", () => {
    gen.maps.seq = 500;
    const tracks = batch(3, 5, 5);
    const out = applyDelta(gen, { seq: 18, tracks, mappingSeq: 420 }).gen;
    expect(out.maps.seq).toBe(420);
    expect(gen.maps.seq).toBe(500);
    // Redelivered: nothing appended, yet the serving maps object is neither changed nor reused.
    out.maps.seq = 510;
    const again = applyDelta(out, { seq: 18, tracks, mappingSeq: 430 }).gen;
    expect(again.index).toBe(out.index);
    expect(again.maps).not.toBe(out.maps);
    expect([again.maps.seq, out.maps.seq]).toEqual([430, 510]);
    // Unknown position (a batch stored before it was kept): the whole log; none given: the position stays.
    expect(applyDelta(out, { seq: 19, tracks, mappingSeq: null }).gen.maps.seq).toBe(0);
    expect(applyDelta(out, { seq: 19, tracks }).gen.maps).toBe(out.maps);
  });

  it('When a song loses its mapping, then it is masked out of its server and no longer returned', () => {
    const tracks = batch(2, 10, 4);
    const g = applyDelta(gen, { seq: 13, tracks }).gen;
    const row = g.index.rowOf(tracks[3]!.itemId);
    expect(g.index.search(tracks[3]!.vector, { k: 1, mask: g.maps.mask('srv') })[0]!.row).toBe(row);
    g.maps.apply('srv', 'new2.3', null); // the catalogue's mapping log: removed from the server
    const mask = g.maps.mask('srv');
    expect(mask.has(row)).toBe(false);
    expect(g.index.search(tracks[3]!.vector, { k: 20, mask }).some((h) => h.row === row)).toBe(false);
  });

  it('When a song has a vector of another dimension or repeats in the batch, then it is refused and the rest are added', () => {
    const tracks = batch(3, 5, 5);
    const bad = { ...tracks[0]!, itemId: 'bad', vector: new Float32Array(DIM + 1).fill(1) };
    const out = applyDelta(gen, { seq: 14, tracks: [...tracks, bad, tracks[1]!] });
    expect(out.added).toBe(5);
    expect(out.refused.map((r) => r.itemId).sort()).toEqual(['bad', tracks[1]!.itemId].sort());
    expect(out.gen.index.rowOf('bad')).toBe(-1);
  });

  it('When appended songs crowd one cell or the library doubles, then drift asks for a rebuild; a small spread batch does not', async () => {
    const small = applyDelta(gen, { seq: 15, tracks: batch(4, 40, 6) }).gen;
    const calm = await measureDrift(small.index, BASE);
    expect(calm.reasons).toEqual([]);
    expect(calm.probeRecall).toBeGreaterThanOrEqual(DEFAULT_DRIFT.minProbeRecall);
    expect(calm.growth).toBeCloseTo(40 / BASE, 6);
    // 1500 near-copies of one song: they all land in one cell.
    const seed = gen.index.getVector(0);
    const crowd: DeltaTrack[] = Array.from({ length: 1500 }, (_, i) => ({ itemId: `crowd${i}`, vector: Float32Array.from(seed, (x, d) => x + (d === i % DIM ? 1e-3 : 0)), meta: undefined, mappings: [] }));
    const crowded = await measureDrift(applyDelta(gen, { seq: 16, tracks: crowd }).gen.index, BASE);
    expect(crowded.cellImbalance).toBeGreaterThan(DEFAULT_DRIFT.maxCellImbalance);
    expect(crowded.reasons.some((r) => r.startsWith('cell imbalance'))).toBe(true);
    const doubled = await measureDrift(applyDelta(gen, { seq: 17, tracks: batch(5, BASE + 10, 7) }).gen.index, BASE);
    expect(doubled.reasons.some((r) => r.startsWith('grown by'))).toBe(true);
    // An earlier probe recall passed in: reported as it is (not measured), and it still decides.
    const known = await measureDrift(small.index, BASE, DEFAULT_DRIFT, undefined, { probeRecall: 0.5, probes: 100 });
    expect([known.probed, known.probeRecall, known.probes, calm.probed]).toEqual([false, 0.5, 100, true]);
    expect(known.reasons.some((r) => r.startsWith('probe recall'))).toBe(true);
  });

  it('When the probes are measured with a scheduler, then the scan yields and the recall is the one measured without it', async () => {
    const grown = applyDelta(gen, { seq: 18, tracks: batch(6, 300, 8) }).gen.index;
    let yields = 0;
    const report = await measureDrift(grown, BASE, DEFAULT_DRIFT, { maybeYield: async () => void yields++ });
    expect(yields).toBeGreaterThan(100);
    expect(report).toEqual(await measureDrift(grown, BASE));
    expect(report.probes).toBe(100);
  });
});
