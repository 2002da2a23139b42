/**
 * The text-search table of a live-library revision (issue 35): carried from the table of the revision it grew from,
 * with only the appended rows read by id, instead of reading every row of `index.tracks` again (~26 s at 1M songs per
 * batch, on every replica). The carried table equals the one built from the pages, column for column; a revision
 * whose first rows are not the base's (not a live append) is read from the pages.
 */
import { createLogger } from '@polyphony/platform';
import { mixturePoints } from '../__tests__/mixture-points';
import { buildIvfIndex } from '@polyphony/vector-engine';
import { ArtistLinks, IndexState, emptyGeneration, type Generation } from '../core/generation';
import { GenerationMaps } from '../maps/generation-maps';
import { TrackMetaStore } from '../maps/track-meta-store';
import { applyDelta } from '../generation/live/delta-apply';
import type { SemanticStore } from './ports';
import { SemanticService, type LyricsPort } from './semantic.service';
import type { SemanticRowSource, SemanticTable } from './semantic-table';

const DIM = 16;

const points = (count: number, streamSeed: number) => mixturePoints(count, streamSeed, { dim: DIM, clusters: 12, intrinsicDim: 5, seed: 4 });

/** A tracks-table row: every fifth song untagged, tags and features from the id's position. */
function rowOf(itemId: string, k: number): SemanticRowSource {
  const tagged = k % 5 !== 0;
  return {
    itemId,
    tags: tagged ? Buffer.from(Array.from({ length: 100 }, (_, c) => (k * 37 + c * 11) % 256)) : null,
    other: tagged ? Array.from({ length: 6 }, (_, c) => ((k * 13 + c * 7) % 100) / 100) : null,
    tempo: k % 7 === 0 ? null : 60 + (k % 120),
    energy: k % 9 === 0 ? null : -30 + (k % 25),
  };
}

/** The fake `index.tracks`: pages and by-id reads, counted. */
class Tracks implements SemanticStore {
  readonly rows = new Map<string, SemanticRowSource>();
  pageReads = 0;
  byId: string[][] = [];
  async *semanticPages(): AsyncGenerator<SemanticRowSource[]> {
    this.pageReads++;
    yield [...this.rows.values()].sort((a, b) => (a.itemId < b.itemId ? -1 : a.itemId > b.itemId ? 1 : 0));
  }
  async semanticRows(itemIds: readonly string[]): Promise<SemanticRowSource[]> {
    this.byId.push([...itemIds]);
    return itemIds.flatMap((id) => (this.rows.has(id) ? [this.rows.get(id)!] : []));
  }
  metadataMatches = async () => [];
  countQuery = async () => undefined;
  topQueries = async () => [];
}

/** What a text search answers from: every column, tagged rows, bounds, moods. */
function describe_(t: SemanticTable, size: number) {
  const raw: number[] = [];
  for (let r = 0; r < size; r++) for (let c = 0; c < t.low.length; c++) raw.push(t.raw(r, c));
  return {
    taggedCount: t.taggedCount,
    tagged: Array.from(t.tagged),
    raw,
    tempo: Array.from(t.tempoColumn()),
    energy: Array.from(t.energyColumn()),
    low: Array.from(t.low),
    high: Array.from(t.high),
    energyRange: t.energyRange,
    moods: [...t.moods.values()].map((m) => ({ mood: m.mood, songs: m.songs, minScore: m.minScore, vector: Array.from(m.vector) })),
  };
}

describe('text-search table of a live-library revision', () => {
  jest.setTimeout(120_000);
  const logger = createLogger({ service: 'semantic-live-test', level: 'error' });
  let gen: Generation;
  let tracks: Tracks;

  beforeAll(async () => {
    const p = points(1500, 1);
    const index = (await buildIvfIndex([{ ids: p.ids, vectors: p.vectors }], { expectedCount: p.ids.length, nlist: 16, dim: DIM })).index;
    const maps = new GenerationMaps(index);
    const meta = new TrackMetaStore(index.size);
    gen = { ...emptyGeneration(DIM), generation: 9, index, links: new ArtistLinks(), coords: new Float32Array(index.size * 2), maps, meta };
    tracks = new Tracks();
    p.ids.forEach((id, k) => tracks.rows.set(id, rowOf(id, k)));
  });

  it('When songs are appended, then the revision\'s table is carried (only the new rows read by id) and equals the one read from the pages', async () => {
    const service = new SemanticService(new IndexState(emptyGeneration(DIM)), tracks, {} as LyricsPort, logger);
    await service.table(gen);
    expect(tracks.pageReads).toBe(1);
    const added = points(40, 2);
    added.ids.forEach((id, k) => tracks.rows.set(id, rowOf(id, 2000 + k)));
    const tracksOf = (ids: string[], vectors: Float32Array) => ids.map((itemId, i) => ({ itemId, vector: vectors.slice(i * DIM, (i + 1) * DIM), meta: undefined, mappings: [] }));
    const rev1 = applyDelta(gen, { seq: 1, tracks: tracksOf(added.ids, added.vectors) }).gen;
    // A second batch on top, one song of it missing from the copy (it stays untagged, as the pages leave it).
    const more = points(25, 3);
    more.ids.slice(1).forEach((id, k) => tracks.rows.set(id, rowOf(id, 3000 + k)));
    const rev2 = applyDelta(rev1, { seq: 2, tracks: tracksOf(more.ids, more.vectors) }).gen;

    const carried1 = await service.table(rev1);
    const carried2 = await service.table(rev2);
    expect(tracks.pageReads).toBe(1);
    expect(tracks.byId.map((ids) => ids.length)).toEqual([40, 25]);
    expect(new Set(tracks.byId[1])).toEqual(new Set(more.ids));

    const fresh = new SemanticService(new IndexState(emptyGeneration(DIM)), tracks, {} as LyricsPort, logger);
    expect(describe_(carried1, rev1.index.size)).toEqual(describe_(await fresh.table(rev1), rev1.index.size));
    expect(describe_(carried2, rev2.index.size)).toEqual(describe_(await fresh.table(rev2), rev2.index.size));
    expect(carried2.taggedCount).toBeGreaterThan(carried1.taggedCount);
    expect(carried2.tagged[rev2.index.rowOf(more.ids[0]!)]).toBe(0);
  });

  it('When a later revision does not start with the base\'s rows, then its table is read from the pages', async () => {
    const service = new SemanticService(new IndexState(emptyGeneration(DIM)), tracks, {} as LyricsPort, logger);
    await service.table(gen);
    const reads = tracks.pageReads;
    const p = points(1500, 5);
    p.ids.forEach((id, k) => tracks.rows.set(id, rowOf(id, 5000 + k)));
    const other = (await buildIvfIndex([{ ids: p.ids, vectors: p.vectors }], { expectedCount: p.ids.length, nlist: 16, dim: DIM })).index;
    const unrelated: Generation = { ...gen, index: other, revision: 1, maps: new GenerationMaps(other), meta: new TrackMetaStore(other.size) };
    const table = await service.table(unrelated);
    expect(tracks.pageReads).toBe(reads + 1);
    const fresh = new SemanticService(new IndexState(emptyGeneration(DIM)), tracks, {} as LyricsPort, logger);
    expect(describe_(table, other.size)).toEqual(describe_(await fresh.table(unrelated), other.size));
  });
});
