/**
 * Text search (/api/clap/*), mood seeds and centroids, SemGrove and the index's dashboard numbers, over
 * the live generation's SemanticTable. Scoring rules: docs/architecture.md "Text search" and "SemGrove".
 */
import {
  CLAP_DEFAULT_LIMIT,
  CONCEPT_KINDS,
  type ClapConceptsResponse,
  type SteeringItem,
  SEM_GROVE_DEFAULT_LIMIT,
  type ClapSearchResponse,
  type IndexStats,
  type LyricsSimilarResponse,
  MOOD_NAMES,
  type MoodName,
  type MoodCentroidsResponse,
  type SemGroveResponse,
} from '@polyphony/contracts';
import { NotFoundError, StateUnavailableError, ValidationError, type Logger } from '@polyphony/platform';
import type { SemanticStore } from './ports';
import { earlierRowsOf, generationKey, grewFrom, type Generation, type IndexState } from '../core/generation';
import { dot } from '@polyphony/vectors';
import { projectPoint } from '../maps/projection';
import type { RankedRow, RequestScope } from '../core/scope';
import { SemanticTable, type SemanticStorage } from './semantic-table';
import { carriedFill, takeSemanticDeltaSeed, type SemanticDeltaSeed } from './column-fill';
import { TopScored, type ScoredRow } from './top-scored';
import { descriptorScore } from './descriptors';
import { thresholdTopK, type Channel, type Posting, type Source } from './postings';
import { conceptPosition, steeredScore, steerPool, type ConceptDirection } from './steering';
import { popcount32 } from '@polyphony/vectors';
import { FEATURE_COLUMNS, parseQuery, type Concept, type Descriptor } from './vocabulary';

/** 503 when no song of the live generation has MusiCNN tags (model missing or songs not re-analysed). */
export class TagsUnavailableError extends StateUnavailableError {
  constructor(what: string) {
    super(
      'tags_unavailable',
      `${what} needs MusiCNN tags, and no song in the index has them yet: install the MusiCNN model (MODELS_DIR) and analyze the library, then wait for the index rebuild`,
    );
  }
}

/** What SemGrove needs from the catalogue (owner of the lyrics). */
export interface LyricsPort {
  similar(itemId: string, serverId: string, limit: number): Promise<LyricsSimilarResponse>;
}

/** SemGrove merge weights (reference SEM_GROVE_WEIGHT_LYRICS 0.75, SEM_GROVE_WEIGHT_AUDIO 0.25). */
export const SEM_GROVE_WEIGHT_LYRICS = 0.75;
export const SEM_GROVE_WEIGHT_AUDIO = 0.25;
/** Queries listed by /api/clap/top_queries. */
export const TOP_QUERIES = 20;


export class SemanticService {
  private tables = new Map<string, Promise<SemanticTable>>();
  /**
   * Per generation number, the newest revision whose table was asked for and that table: the base a live-library
   * revision's table is carried from (its revisions only append rows). Entries of other generations are dropped at
   * the swap.
   */
  private readonly newest = new Map<number, { gen: Generation; table: Promise<SemanticTable> }>();
  /**
   * How text search finds its best rows: 'postings' (default; the threshold algorithm over the table's pre-sorted
   * postings, the full scan only when they cannot decide) or 'scan' (score every row: benchmarks and tests compare).
   */
  scoring: 'postings' | 'scan' = 'postings';

  constructor(
    private readonly state: IndexState,
    private readonly repo: SemanticStore,
    private readonly lyrics: LyricsPort,
    private readonly logger: Logger,
    private readonly storage: SemanticStorage = {},
  ) {
    // Built for every generation before it is served (part of the load, so a replica that turns ready does not
    // spend its first seconds building it: ~10 s of CPU at 1M songs); drop older tables after the swap.
    state.onPrepare(async (g) => {
      await this.table(g).then(
        () => undefined,
        (err: unknown) => this.logger.warn('semantic table not built; built on first use', { generation: g.generation, err: (err as Error).message }),
      );
    }, 'semantic');
    state.onSwap((g) => {
      for (const k of this.tables.keys()) if (k !== generationKey(g)) this.tables.delete(k);
      for (const n of this.newest.keys()) if (n !== g.generation) this.newest.delete(n);
      // A generation swapped in without prepare() (tests, benches) still gets its table in the background.
      if (!this.tables.has(generationKey(g))) void this.table(g).catch((err: unknown) => this.logger.warn('semantic table not built', { generation: g.generation, err: (err as Error).message }));
    });
  }

  /** Bytes held in memory by the semantic tables built so far (`SemanticTable.byteLength`; for benchmarks' accounting). */
  async memoryBytes(): Promise<number> {
    let b = 0;
    for (const t of this.tables.values()) b += await t.then((x) => x.byteLength(), () => 0);
    return b;
  }

  /** The semantic table of a generation (built once per generation and live-library revision: `generationKey`). */
  table(gen: Generation): Promise<SemanticTable> {
    const key = generationKey(gen);
    let t = this.tables.get(key);
    if (!t) {
      // A delta build's generation: the serving table's columns carried over when that table is at hand, else the pages.
      const delta = takeSemanticDeltaSeed(gen);
      const base = delta ? this.tables.get(generationKey(delta.base)) : undefined;
      // A live-library revision: the columns of the revision it grew from, the appended rows read by id.
      const live = delta ? undefined : this.liveBase(gen);
      const fromPages = () => SemanticTable.buildFromPages(gen, this.repo.semanticPages(), this.storage);
      t = (async () => {
        if (base && delta) {
          try {
            return await SemanticTable.of(gen, carriedFill(await base, delta, gen.index.size), this.storage);
          } catch (err) {
            this.logger.warn('semantic table not carried from the serving generation; reading the pages', { generation: gen.generation, err: (err as Error).message });
          }
        }
        if (live) {
          try {
            return await SemanticTable.of(gen, carriedFill(await live.table, await this.appendedSeed(live.gen, gen), gen.index.size), this.storage);
          } catch (err) {
            this.logger.warn('semantic table not carried from the previous revision; reading the pages', { generation: gen.generation, revision: gen.revision, err: (err as Error).message });
          }
        }
        return fromPages();
      })();
      t.catch(() => {
        this.tables.delete(key);
        if (this.newest.get(gen.generation)?.table === t) this.newest.delete(gen.generation);
      });
      this.tables.set(key, t);
      const newest = this.newest.get(gen.generation);
      if (!newest || (newest.gen.revision ?? 0) < (gen.revision ?? 0)) this.newest.set(gen.generation, { gen, table: t });
    }
    return t;
  }

  /**
   * The earlier revision of `gen`'s generation whose table a live-library revision is carried from: the newest one
   * asked for, with fewer or as many rows, whose rows are `gen`'s first rows (the live library only appends: checked
   * on up to 65 rows spread over them). Undefined when there is none, or the store cannot read rows by id.
   */
  private liveBase(gen: Generation): { gen: Generation; table: Promise<SemanticTable> } | undefined {
    const b = this.newest.get(gen.generation);
    return b && this.repo.semanticRows && grewFrom(gen, b.gen) ? b : undefined;
  }

  /**
   * The carry seed of a live revision: rows below the base's size come from the same rows of the base table, the
   * appended rows' columns are read from `index.tracks` by id (`semanticRows`; a row the copy lacks stays untagged,
   * as the pages would leave it).
   */
  private async appendedSeed(base: Generation, gen: Generation): Promise<SemanticDeltaSeed> {
    const size = base.index.size;
    const ids: string[] = [];
    for (let r = size; r < gen.index.size; r++) ids.push(gen.index.idOf(r));
    const changed: SemanticDeltaSeed['changed'] = [];
    for (const row of ids.length ? await this.repo.semanticRows!(ids) : []) {
      const r = gen.index.rowOf(row.itemId);
      if (r >= size) changed.push([r, row.tags, row.other, row.tempo, row.energy]);
    }
    return { base, sourceRow: earlierRowsOf(gen, base), changed };
  }

  /**
   * Text search. Each query term becomes one channel scoring every song in [0, 1]:
   *  - a tag concept (label or synonym): the best normalised probability among its columns, where a
   *    column's value is clamp((p - p5) / (p99 - p5)) with the column's 5th/99th percentiles over the tagged
   *    catalogue (so "rock" means "more rock than most of this library");
   *  - with a tempo/energy descriptor as well, the best of that and the descriptor ramp;
   *  - 1 instead when the term is also a whole word (or phrase) of the song's title, artist, album or year;
   *  - a remaining word: 1 when it is a whole word of the song's title, artist, album or year, else 0.
   * similarity = mean of the channels. Songs scoring 0 are left out; ties by canonical id. A query that
   * found something is counted for top_queries (normalised text, count only).
   * With `steering` (steering.ts, docs "Steering"): the query's best steerPool(limit) songs are re-ranked by
   * steeredScore (each concept one more channel of weight |weight|: the song's position on the concept's
   * direction, or 1 - position for a negative weight), and similarity is that steered score; the answer
   * echoes the steering. Songs outside that pool, or that the query did not match, never enter.
   * @param steering concepts already validated by the route's schema (known names, weights in [-1, 1], no repeats)
   * @throws TagsUnavailableError when no song has tags; ValidationError (400) when a steering concept has no
   *   direction on this index (too few songs carry or lack it: GET /api/clap/concepts says `steerable: false`)
   */
  async textSearch(scope: RequestScope, query: string, limit = CLAP_DEFAULT_LIMIT, steering: readonly SteeringItem[] = []): Promise<ClapSearchResponse> {
    const table = await this.table(scope.gen);
    if (table.taggedCount === 0) throw new TagsUnavailableError('Text search');
    const steer = steering.filter((st) => st.weight !== 0).map((st) => ({ weight: st.weight, direction: this.direction(table, st.concept) }));
    const echo = steering.length ? { steering: steering.map((st) => ({ concept: st.concept, weight: st.weight })) } : {};
    const { concepts, words } = parseQuery(query);
    const size = scope.gen.index.size;
    const mask = await scope.mask();
    const channels: Channel[] = [];
    const understood: string[] = [];
    const ignored: string[] = [];
    const metaRows = async (text: string): Promise<Set<number>> => {
      const rows = new Set<number>();
      for (const id of await this.repo.metadataMatches(text)) {
        const r = scope.gen.index.rowOf(id);
        if (r >= 0) rows.add(r);
      }
      return rows;
    };
    // The rows of a metadata match as a sorted source of value 1 (complete: every other row is 0 on it).
    const metaSource = (rows: Set<number>): Source => ({ rows: Int32Array.from(rows).sort(), complete: true, tiesById: table.rowsInIdOrder, value: () => 1 });
    for (const c of concepts) {
      // A tag word may also be part of a name ("Daft Punk", "Massive Attack"): metadata counts too.
      const concept = conceptChannel(table, c);
      const rows = await metaRows(c.term);
      channels.push(rows.size ? { score: (row) => (rows.has(row) ? 1 : concept.score(row)), sources: [metaSource(rows), ...concept.sources] } : concept);
      understood.push(c.term);
    }
    for (const w of words) {
      const rows = await metaRows(w);
      if (rows.size === 0) {
        ignored.push(w);
        continue;
      }
      understood.push(w);
      channels.push({ score: (row) => (rows.has(row) ? 1 : 0), sources: [metaSource(rows)] });
    }
    if (channels.length === 0 || mask.count === 0) return { query, count: 0, results: [], understood, ignored, ...echo };
    // The best 2 x limit by score (steered: the pool to re-rank), ties by canonical id (as a full sort of every scoring row would order them):
    // from the postings (threshold algorithm), or by scoring every row when they cannot decide (or `scoring` = 'scan').
    const idOf = (row: number) => scope.idOf(row);
    const k = steer.length ? Math.max(limit * 2, steerPool(limit)) : limit * 2;
    const decided = this.scoring === 'postings' ? thresholdTopK(channels, size, k, (row) => mask.has(row), idOf).top : undefined;
    let top = decided ?? scanTopK(channels, size, k, (row) => mask.has(row), idOf);
    if (steer.length) {
      const steered = new TopScored(limit * 2, idOf);
      for (const t of top) {
        const v = scope.gen.index.getVector(t.row);
        steered.offer(t.row, steeredScore(t.s, channels.length, steer.map((st) => ({ weight: st.weight, position: conceptPosition(st.direction, v) }))));
      }
      top = steered.sorted();
    }
    const presented = await scope.presentRanked(top.map((t) => ({ row: t.row, distance: 1 - t.s })));
    const results = presented.slice(0, limit).map(({ dto }) => ({
      item_id: dto.item_id,
      title: dto.title,
      author: dto.author,
      album: dto.album,
      album_artist: dto.album_artist,
      similarity: Math.round((1 - dto.distance) * 1e6) / 1e6,
    }));
    // Only queries that found something are counted (top_queries offers them to be asked again).
    if (results.length > 0) await this.repo.countQuery(normaliseQuery(query)).catch((err: unknown) => this.logger.warn('query count not stored', { err: (err as Error).message }));
    return { query, count: results.length, results, understood, ignored, ...echo };
  }

  /** The direction of a steering concept. @throws ValidationError when the concept has none on this index */
  private direction(table: SemanticTable, concept: string): ConceptDirection {
    const c = table.concepts.get(concept);
    if (!c?.direction) {
      throw new ValidationError(
        `concept '${concept}' cannot steer on this index: ${c?.songs ?? 0} of ${table.taggedCount} tagged songs carry it, and a direction needs at least a few songs with and without it (GET /api/clap/concepts: steerable)`,
      );
    }
    return c.direction;
  }

  /**
   * The steering concepts (GET /api/clap/concepts): every concept in CONCEPT_KINDS order, then most songs first,
   * then by name; `songs` counts the songs carrying it among those available on the selected server (bitset AND
   * mask, O(size / 32) per concept), `steerable` says whether the index has a direction for it (generation-wide).
   * @throws TagsUnavailableError (503) when no song of the generation is tagged
   */
  async concepts(scope: RequestScope): Promise<ClapConceptsResponse> {
    const table = await this.table(scope.gen);
    if (table.taggedCount === 0) throw new TagsUnavailableError('Steering');
    const mask = await scope.mask();
    let tagged = 0;
    mask.forEachRow((row) => {
      tagged += table.tagged[row]!;
    });
    const concepts = [...table.concepts.values()].map((c) => {
      let songs = 0;
      for (let w = 0; w < c.carriers.length; w++) if (c.carriers[w]) songs += popcount32((c.carriers[w]! & mask.wordAt(w)) >>> 0);
      return { name: c.name, kind: c.kind, songs, steerable: c.direction !== null };
    });
    const kindOrder = (k: string) => (CONCEPT_KINDS as readonly string[]).indexOf(k);
    concepts.sort((a, b) => kindOrder(a.kind) - kindOrder(b.kind) || b.songs - a.songs || (a.name < b.name ? -1 : 1));
    return { concepts, tagged_songs: tagged };
  }

  /** The most frequent past queries. */
  topQueries(): Promise<string[]> {
    return this.repo.topQueries(TOP_QUERIES);
  }

  /** Builds the live generation's table now (warmup) and says whether text search can answer. */
  async warmup(): Promise<{ status: 'ready' | 'no_tags'; scorer: string; tagged_songs: number; message: string }> {
    const table = await this.table(this.state.current());
    return table.taggedCount > 0
      ? { status: 'ready', scorer: 'tags+synonyms+descriptors+metadata', tagged_songs: table.taggedCount, message: `Text search ready over ${table.taggedCount} tagged songs` }
      : { status: 'no_tags', scorer: 'tags+synonyms+descriptors+metadata', tagged_songs: 0, message: new TagsUnavailableError('Text search').message };
  }

  /**
   * A mood named by a request as a seed (similar_tracks `mood`, find_path's mood ends, an alchemy or anchor item):
   * the name, trimmed and case-folded, must be one of the six moods; an alchemy item may name one of its
   * centroids as the reference does, `"<mood>:<centroid index>"` (the index then overrides `centroidIndex`).
   * @returns the centroid's unit vector ({@link moodVector})
   * @throws ValidationError (400) for another word or an index the mood does not have; TagsUnavailableError (503) without tags
   */
  moodSeed(gen: Generation, text: string, centroidIndex?: number): Promise<Float32Array> {
    const m = /^\s*([^:]+):\s*(\d{1,4})\s*$/.exec(text);
    const name = (m ? m[1]! : text).trim().toLowerCase();
    if (!(MOOD_NAMES as readonly string[]).includes(name)) throw new ValidationError(`Invalid mood: mood must be one of ${MOOD_NAMES.join(', ')}`);
    return this.moodVector(gen, name as MoodName, m ? Number(m[2]) : centroidIndex);
  }

  /**
   * A mood centroid of the scope's generation: `centroidIndex` 0 (default) = the whole mood, i > 0 = its
   * i-th cluster (GET /api/mood_centroids lists them).
   * @throws TagsUnavailableError without tags; ValidationError (400) for an index the mood does not have
   */
  async moodVector(gen: Generation, mood: MoodName, centroidIndex = 0): Promise<Float32Array> {
    const table = await this.table(gen);
    const c = table.moods.get(mood);
    if (!c) throw new TagsUnavailableError(`The mood "${mood}"`);
    const cluster = c.clusters[centroidIndex];
    if (!cluster) throw new ValidationError(`Invalid centroid_index ${centroidIndex} for mood '${mood}' (0-${c.clusters.length - 1})`);
    return cluster.vector;
  }

  /**
   * Every mood centroid of the live generation keyed by mood (GET /api/mood_centroids, contracts
   * MoodCentroidsResponse): per mood its centroids `{index, top_tags, n_songs, embedding_2d}` (index 0 = the
   * whole mood, carrying `min_score` too). Positions are the generation's PCA projection, rounded to 1e-4.
   * @throws TagsUnavailableError (503) when no song of the generation is tagged
   */
  async moodCentroids(gen: Generation): Promise<MoodCentroidsResponse> {
    const table = await this.table(gen);
    if (table.taggedCount === 0) throw new TagsUnavailableError('Mood centroids');
    const at = (v: Float32Array) => (gen.pca ? (projectPoint(gen.pca, v).map((x) => Math.round(x * 1e4) / 1e4) as [number, number]) : null);
    const out: MoodCentroidsResponse = {};
    for (const m of table.moods.values()) {
      out[m.mood] = m.clusters.map((c) => ({
        index: c.index,
        top_tags: c.topTags,
        n_songs: c.songs,
        embedding_2d: at(c.vector),
        ...(c.index === 0 ? { min_score: Math.round(m.minScore * 1000) / 1000 } : {}),
      }));
    }
    return out;
  }

  /**
   * SemGrove: songs close to the seed in lyrics and audio. Lyrics similarity = TF-IDF cosine computed by the
   * catalogue (LyricsPort); audio similarity = max(0, cosine of the unit embeddings). Candidates: the
   * 3 * limit nearest in audio and the 3 * limit nearest in lyrics, on the selected server. When the seed
   * has lyrics, similarity = 0.75 * lyrics + 0.25 * audio (a candidate without matching lyrics counts 0 for
   * lyrics); otherwise audio alone. The seed comes first with is_seed true.
   * @throws NotFoundError when the seed is unknown or not on the selected server
   */
  async semGrove(scope: RequestScope, inputId: string, limit = SEM_GROVE_DEFAULT_LIMIT): Promise<SemGroveResponse> {
    const [canonical] = await scope.resolveInput([inputId]);
    const seedRow = canonical ? scope.gen.index.rowOf(canonical) : -1;
    if (!canonical || seedRow < 0) throw new NotFoundError('Seed track not found in index');
    const mask = await scope.mask();
    if (!mask.has(seedRow) || scope.serverId === undefined) throw new NotFoundError('Seed track not found on the selected server');
    const pool = Math.min(1500, limit * 3);
    const index = scope.gen.index;
    const audio = index.searchByRow(seedRow, { k: Math.max(1, Math.min(pool, mask.count)), mask, exclude: [seedRow] });
    const lyr = await this.lyrics.similar(canonical, scope.serverId, pool);
    const lyricsSim = new Map<number, number>();
    for (const m of lyr.matches) {
      const r = index.rowOf(m.itemId);
      if (r >= 0 && r !== seedRow && mask.has(r)) lyricsSim.set(r, m.similarity);
    }
    const seedVec = index.getVector(seedRow);
    const candidates = new Set<number>([...audio.map((h) => h.row), ...lyricsSim.keys()]);
    const scored = [...candidates].map((row) => {
      const a = Math.max(0, Math.min(1, dot(seedVec, 0, index.getVector(row), 0, seedVec.length)));
      const l = lyricsSim.get(row) ?? 0;
      const s = lyr.seedHasLyrics ? SEM_GROVE_WEIGHT_LYRICS * l + SEM_GROVE_WEIGHT_AUDIO * a : a;
      return { row, a, l: lyr.seedHasLyrics ? l : null, s };
    });
    scored.sort((x, y) => y.s - x.s || x.row - y.row);
    const ranked: RankedRow[] = [{ row: seedRow, distance: 0 }, ...scored.slice(0, limit + 10).map((x) => ({ row: x.row, distance: 1 - x.s }))];
    const byRow = new Map(scored.map((x) => [x.row, x]));
    const presented = await scope.presentRanked(ranked);
    const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
    const results = presented.slice(0, limit + 1).map(({ row, dto }) => {
      const x = byRow.get(row);
      const isSeed = row === seedRow;
      return {
        item_id: dto.item_id,
        title: dto.title,
        author: dto.author,
        album: dto.album,
        album_artist: dto.album_artist,
        distance: isSeed ? 0 : r6(1 - x!.s),
        similarity: isSeed ? 1 : r6(x!.s),
        lyrics_similarity: isSeed ? (lyr.seedHasLyrics ? 1 : null) : x!.l === null ? null : r6(x!.l),
        audio_similarity: isSeed ? 1 : r6(x!.a),
        is_seed: isSeed,
      };
    });
    return { results, count: results.length, mode: lyr.seedHasLyrics ? 'lyrics+audio' : 'audio' };
  }

  /** The index part of the dashboard. */
  async stats(): Promise<IndexStats> {
    const gen = this.state.current();
    const table = await this.table(gen);
    return { generation: gen.generation, items: gen.index.size, clap_indexed: table.taggedCount, gmm_indexed: gen.artists.count, moods_coverage: table.moodsCoverage() };
  }
}

/**
 * One concept's channel: its score (the best normalised column, or the descriptor's ramp) and its sorted sources
 * (each column's posting, the descriptor's tempo or energy posting); reads the concept's columns (and a descriptor's
 * column) once for the query.
 */
export function conceptChannel(table: SemanticTable, c: Concept): Channel {
  const desc = c.descriptor ? descriptorChannel(table, c.descriptor) : undefined;
  const scores = c.columns.map((col) => table.normColumn(col));
  const tagged = table.tagged;
  const sources: Source[] = c.columns.map((col, i) => ({ ...table.posting(col), value: scores[i]! }));
  if (desc) sources.push({ ...desc.posting, value: desc.score });
  return {
    score: (row) => {
      let best = 0;
      if (tagged[row]) for (const score of scores) best = Math.max(best, score(row));
      if (desc) best = Math.max(best, desc.score(row));
      return best;
    },
    sources,
  };
}

/** A tempo or energy word's score of a row (descriptors.ts) and the posting listing rows by it. */
function descriptorChannel(table: SemanticTable, d: Descriptor): { score: (row: number) => number; posting: Posting } {
  const tempo = d === 'slow' || d === 'fast' ? table.tempoColumn() : new Float32Array(0);
  const energy = d === 'loud' || d === 'quiet' ? table.energyColumn() : new Float32Array(0);
  return { score: descriptorScore(d, tempo, energy, table.energyRange), posting: table.descriptorPosting(d) };
}

/**
 * The `k` best rows by mean channel score (score descending, then canonical id), scoring every allowed row: the
 * reference answer `thresholdTopK` reproduces, and its fallback. O(size x channels).
 */
export function scanTopK(channels: readonly Channel[], size: number, k: number, allowed: (row: number) => boolean, idOf: (row: number) => string): ScoredRow[] {
  const best = new TopScored(k, idOf);
  const n = channels.length;
  for (let row = 0; row < size; row++) {
    if (!allowed(row)) continue;
    let s = 0;
    for (const ch of channels) s += ch.score(row);
    s /= n;
    if (s > 0) best.offer(row, s);
  }
  return best.sorted();
}

/** Stored form of a query for top_queries: trimmed, lower case, inner whitespace collapsed, at most 200 characters. */
export function normaliseQuery(q: string): string {
  return q.trim().toLowerCase().replace(/\s+/g, ' ').slice(0, 200);
}

/** Exposed for tests: number of feature columns. */
export const SEMANTIC_FEATURE_COLUMNS = FEATURE_COLUMNS;
