/**
 * Album creation and Album of the Week (issue 31) over the live generation: draws the pool from the index and
 * the learned tags, calls the pure selection and sequencing (album-builder.ts), answers in the selected
 * server's ids. Rules and figures: docs/architecture.md "Album creation".
 */
import { randomInt } from 'node:crypto';
import {
  ALBUM_DEFAULT_LENGTH,
  ALBUM_MIN_LENGTH,
  ALBUM_OF_THE_WEEK_PLAYLIST,
  MSD_GENRES,
  MSD_TAGS,
  OTHER_FEATURE_LABELS,
  type AlbumGenerateBody,
  type AlbumGenerateResponse,
  type AlbumOfTheWeekRunResponse,
  type SteeringItem,
} from '@polyphony/contracts';
import { NotFoundError, StateUnavailableError, ValidationError, type Logger } from '@polyphony/platform';
import { SeededRandom, dot, normaliseInto } from '@polyphony/vectors';
import type { Generation, IndexState } from '../core/generation';
import type { TrackReader } from '../core/ports';
import { RequestScope, type ScopeDeps } from '../core/scope';
import { foldText } from '../core/text';
import type { SemanticTable } from '../semantic/semantic-table';
import { TopScored } from '../semantic/top-scored';
import { MSD_OFFSET, OTHER_OFFSET, parseQuery } from '../semantic/vocabulary';
import { ALBUM_DEFAULTS, INTRO_GENRES, calibrate, cohesionOf, selectAlbum, seedArtistCap, sequenceAlbum, type AlbumCandidate, type OpenerStyle } from './album-builder';

/** The semantic table of a generation (SemanticService.table); rejects or lacks tags when none are stored. */
export type TableSource = (gen: Generation) => Promise<SemanticTable>;

/** A configured server, as Album of the Week needs it. */
export interface AlbumServer {
  id: string;
  name: string;
}

/** What Album of the Week needs from its peers (registry server list, playlist service's fixed playlist). */
export interface AlbumPeers {
  listServers(): Promise<AlbumServer[]>;
  /** Empties and refills the playlist named exactly `name` on one server (playlist POST /internal/playlists/radio, kind album_of_the_week). */
  replaceFixed(serverId: string, name: string, ids: string[]): Promise<{ written: number }>;
}

/** Random pairs sampled for a generation's baseline cohesion. */
const RANDOM_PAIRS = 2000;
/** How far one steering weight of 1 moves the seed point along a concept's unit direction. */
export const STEER_SCALE = 0.5;
/** Songs averaged into the seed point of a text seed. */
const TEXT_SEED_SONGS = 10;
/** Seeds Album of the Week tries per server before giving up. */
const WEEKLY_TRIES = 5;

/** Column indexes of the other features used for intensity. */
const AGGRESSIVE = OTHER_OFFSET + OTHER_FEATURE_LABELS.indexOf('aggressive');
const DANCEABLE = OTHER_OFFSET + OTHER_FEATURE_LABELS.indexOf('danceable');
const GENRE_COLUMNS = MSD_GENRES.map((g) => ({ label: foldText(g), col: MSD_OFFSET + MSD_TAGS.indexOf(g as (typeof MSD_TAGS)[number]) })).filter((g) => g.col >= MSD_OFFSET);

export class AlbumService {
  private randomCohesion = new Map<number, number>();

  constructor(
    private readonly state: IndexState,
    private readonly scopeDeps: ScopeDeps,
    private readonly tracks: TrackReader,
    private readonly tables: TableSource,
    private readonly logger: Logger,
    private readonly peers?: AlbumPeers,
  ) {
    state.onSwap((g) => {
      for (const k of this.randomCohesion.keys()) if (k !== g.generation) this.randomCohesion.delete(k);
    });
  }

  /**
   * POST /api/album_creation/generate.
   * @throws ValidationError (400) unknown song seed, or a text seed without a genre/instrument/mood word
   * @throws NotFoundError (404) fewer than ALBUM_MIN_LENGTH songs qualify around the seed on the server
   * @throws StateUnavailableError (503) no index generation serves yet; TagsUnavailable (503) for a text seed without tags
   */
  async generate(scope: RequestScope, body: AlbumGenerateBody): Promise<AlbumGenerateResponse> {
    requireIndex(scope.gen);
    const length = body.length ?? ALBUM_DEFAULT_LENGTH;
    if (body.seed_type === 'song') {
      const row = scope.rowOfInput(body.item_id!);
      if (row < 0) throw new ValidationError(`Unknown seed song ${body.item_id}`);
      if (!scope.maskNow().has(row)) throw new ValidationError(`The seed song ${body.item_id} is not on the selected server`);
      return this.fromSong(scope, row, length, body.steering ?? []);
    }
    return this.fromText(scope, body.query!, length, body.steering ?? []);
  }

  /** An album around one song (a row available on the scope's server). */
  async fromSong(scope: RequestScope, seedRow: number, length: number, steering: readonly SteeringItem[]): Promise<AlbumGenerateResponse> {
    const gen = scope.gen;
    const table = await this.tableOrUndefined(gen);
    const seedVec = this.steer(table, gen.index.getVector(seedRow), steering);
    const mask = scope.maskNow();
    const k = Math.min(ALBUM_DEFAULTS.pool, mask.count);
    const near = gen.index.search(seedVec, { k, mask, exclude: [seedRow] }).map((h) => h.row);
    const candidates = await this.candidates(scope, table, [seedRow, ...near]);
    const first = candidates.get(seedRow)!;
    const m = scope.metaAt(seedRow);
    const picks = await this.pick(scope, table, first, candidates, length);
    return this.answer(scope, table, picks, { type: 'song', label: m ? `${m.title} - ${m.artist}` : scope.idOf(seedRow) }, m ? `Around ${m.title}` : 'Album');
  }

  /**
   * An album from words: each recognised concept (tag label or synonym) scores every tagged song on the server
   * (its best normalised column, as text search does); its best `pool / concepts` songs form its turn list. The
   * first track is the best mean score; the seed point is the mean direction of the TEXT_SEED_SONGS best; the
   * pool is the turn lists plus the seed point's nearest neighbours, and the greedy pass takes turns between
   * the concepts.
   */
  async fromText(scope: RequestScope, query: string, length: number, steering: readonly SteeringItem[]): Promise<AlbumGenerateResponse> {
    const gen = scope.gen;
    const table = await this.tables(gen);
    if (table.taggedCount === 0) throw new StateUnavailableError('tags_unavailable', 'A text seed needs MusiCNN tags, and no song in the index has them yet: analyze the library with the model installed');
    const { concepts } = parseQuery(query);
    if (concepts.length === 0) throw new ValidationError(`No genre, instrument or mood word understood in "${query}" (use learned tag words such as ambient, piano, rock, sad)`);
    const mask = scope.maskNow();
    const scorers = concepts.map((c) => c.columns.map((col) => table.normColumn(col)));
    const perConcept = Math.max(ALBUM_MIN_LENGTH, Math.ceil(ALBUM_DEFAULTS.pool / concepts.length));
    // Bounded best-k per concept and overall (ties by canonical id, as text search orders them): O(songs log k).
    const idOf = (row: number) => scope.idOf(row);
    const lists = concepts.map(() => new TopScored(perConcept, idOf));
    const best = new TopScored(TEXT_SEED_SONGS, idOf);
    let matching = 0;
    mask.forEachRow((row) => {
      if (table.tagged[row] !== 1) return;
      let sum = 0;
      scorers.forEach((cols, i) => {
        let top = 0;
        for (const f of cols) top = Math.max(top, f(row));
        sum += top;
        if (top > 0) lists[i]!.offer(row, top);
      });
      if (sum > 0) {
        matching++;
        best.offer(row, sum / scorers.length);
      }
    });
    if (matching < ALBUM_MIN_LENGTH) throw new NotFoundError(`Too few songs on this server match "${query}" (${matching}; an album needs ${ALBUM_MIN_LENGTH})`);
    const combined = best.sorted();
    const turns = lists.map((l) => new Set(l.sorted().map((x) => x.row)));
    const sum = new Float32Array(gen.index.dim);
    for (const { row } of combined) {
      const v = gen.index.getVector(row);
      for (let d = 0; d < sum.length; d++) sum[d]! += v[d]!;
    }
    const seedPoint = new Float32Array(gen.index.dim);
    if (!(normaliseInto(sum, 0, seedPoint, 0, seedPoint.length) > 0)) seedPoint.set(gen.index.getVector(combined[0]!.row));
    const steered = this.steer(table, seedPoint, steering);
    const firstRow = combined[0]!.row;
    const near = gen.index.search(steered, { k: Math.min(ALBUM_DEFAULTS.pool, mask.count), mask }).map((h) => h.row);
    const rows = new Set<number>([firstRow, ...near]);
    for (const t of turns) for (const r of t) rows.add(r);
    const candidates = await this.candidates(scope, table, [...rows]);
    const picks = await this.pick(scope, table, candidates.get(firstRow)!, candidates, length, turns);
    const words = query.trim().replace(/\s+/g, ' ');
    return this.answer(scope, table, picks, { type: 'text', label: words }, words.replace(/\b\p{L}/gu, (c) => c.toUpperCase()));
  }

  /**
   * Calibrates target and floor for the first pick (its `length - 1` nearest neighbours in the pool against the
   * library's random pairs), runs the greedy pass, and widens the pool once around the farthest picks (their
   * ALBUM_DEFAULTS.widenK nearest neighbours each) when the album came out short or needed a relaxed stage.
   * @throws NotFoundError when fewer than ALBUM_MIN_LENGTH tracks qualify
   */
  private async pick(
    scope: RequestScope,
    table: SemanticTable | undefined,
    first: AlbumCandidate,
    candidates: Map<number, AlbumCandidate>,
    length: number,
    turns?: Array<ReadonlySet<number>>,
  ): Promise<{ picks: AlbumCandidate[]; target: number }> {
    const gen = scope.gen;
    const bySim = [...candidates.values()].filter((c) => c.row !== first.row).sort((a, b) => dot(first.vector, 0, b.vector, 0, b.vector.length) - dot(first.vector, 0, a.vector, 0, a.vector.length) || a.row - b.row);
    const nn = [first, ...bySim.slice(0, length - 1)];
    const { target, pairFloor } = calibrate(this.randomCohesionOf(gen), cohesionOf(nn.map((c) => c.vector)));
    const options = { length, target, pairFloor, maxPerArtist: ALBUM_DEFAULTS.maxPerArtist, maxSeedArtist: seedArtistCap(length), eraWindow: ALBUM_DEFAULTS.eraWindow, minDuration: ALBUM_DEFAULTS.minDuration, maxDuration: ALBUM_DEFAULTS.maxDuration, turns, gapTolerance: ALBUM_DEFAULTS.gapTolerance };
    let sel = selectAlbum(first, [...candidates.values()], options);
    if (sel.picks.length < length || sel.stage > 0) {
      const mask = scope.maskNow();
      const far = [...sel.picks.slice(1)].sort((a, b) => dot(first.vector, 0, a.vector, 0, a.vector.length) - dot(first.vector, 0, b.vector, 0, b.vector.length)).slice(0, ALBUM_DEFAULTS.widenPicks);
      const extra: number[] = [];
      for (const p of far) for (const h of gen.index.searchByRow(p.row, { k: Math.min(ALBUM_DEFAULTS.widenK, mask.count), mask })) if (!candidates.has(h.row)) extra.push(h.row);
      if (extra.length) {
        for (const [row, c] of await this.candidates(scope, table, extra)) candidates.set(row, c);
        const wider = selectAlbum(first, [...candidates.values()], options);
        if (wider.stage < sel.stage || (wider.stage === sel.stage && wider.picks.length > sel.picks.length)) sel = wider;
      }
    }
    if (sel.picks.length < ALBUM_MIN_LENGTH) throw new NotFoundError(`The seed has too few neighbours on this server for an album (${sel.picks.length}; at least ${ALBUM_MIN_LENGTH})`);
    if (sel.stage > 0) this.logger.debug('album needed a relaxed stage', { stage: sel.stage, tracks: sel.picks.length });
    return { picks: sel.picks, target };
  }

  /** Candidates of rows (metadata, year, duration and intensity), keyed by row; rows without metadata are left out. */
  private async candidates(scope: RequestScope, table: SemanticTable | undefined, rows: readonly number[]): Promise<Map<number, AlbumCandidate>> {
    const gen = scope.gen;
    const ids = rows.map((r) => scope.idOf(r));
    const details = await this.tracks.details(ids);
    const [e5, e95] = table?.energyRange ?? [0, 1];
    const out = new Map<number, AlbumCandidate>();
    rows.forEach((row, i) => {
      const d = details.get(ids[i]!);
      const parts: number[] = [];
      if (d?.energy !== null && d?.energy !== undefined && e95 > e5) parts.push(Math.max(0, Math.min(1, (d.energy - e5) / (e95 - e5))));
      if (table && table.tagged[row] === 1) parts.push(table.raw(row, AGGRESSIVE), table.raw(row, DANCEABLE));
      const intensity = parts.length ? parts.reduce((s, x) => s + x, 0) / parts.length : 0.5;
      out.set(row, {
        row,
        vector: gen.index.getVector(row),
        artist: gen.artists.artistOfRow[row] ?? -1,
        duration: d?.duration ?? null,
        year: d?.year ?? null,
        intensity,
      });
    });
    return out;
  }

  /** Sequences the picks and builds the answer in the scope's server ids (rows it cannot present are dropped). */
  private async answer(
    scope: RequestScope,
    table: SemanticTable | undefined,
    { picks, target }: { picks: AlbumCandidate[]; target: number },
    seed: AlbumGenerateResponse['seed'],
    name: string,
  ): Promise<AlbumGenerateResponse> {
    const style = openerStyle(table, picks);
    const seq = sequenceAlbum(picks, style);
    const details = await this.tracks.details(picks.map((p) => scope.idOf(p.row)));
    const tracks: AlbumGenerateResponse['tracks'] = [];
    for (const s of seq) {
      const provider = scope.providerOf(scope.idOf(s.candidate.row));
      const m = scope.metaAt(s.candidate.row);
      if (!provider || !m) continue;
      tracks.push({ item_id: provider, title: m.title, author: m.artist, album: m.album, duration: details.get(scope.idOf(s.candidate.row))?.duration ?? null, slot: tracks.length + 1, role: s.role });
    }
    if (tracks.length) tracks[tracks.length - 1]!.role = tracks.length > 1 ? 'closer' : 'opener';
    const seconds = tracks.reduce((t, x) => t + (x.duration ?? 0), 0);
    return {
      seed,
      suggested_name: name.slice(0, 180),
      tracks,
      stats: {
        tracks: tracks.length,
        minutes: Math.round(seconds / 6) / 10,
        artists: new Set(tracks.map((t) => foldText(t.author))).size,
        cohesion: round3(cohesionOf(seq.map((s) => s.candidate.vector))),
        target_cohesion: round3(target),
        opener_style: style,
      },
    };
  }

  /**
   * Album of the Week: for every configured server, an album from a random song available there (up to
   * WEEKLY_TRIES seeds until one yields at least ALBUM_MIN_LENGTH tracks), written to the server's one
   * ALBUM_OF_THE_WEEK_PLAYLIST playlist, emptied and refilled (4-12 unique songs). A server that fails is
   * reported and the others still run. Status: SUCCESS (every server written), PARTIAL, FAILURE (none, or no server).
   * @throws StateUnavailableError (503) while no index generation serves
   */
  async albumOfTheWeek(): Promise<AlbumOfTheWeekRunResponse> {
    if (!this.peers) throw new StateUnavailableError('not_ready', 'Album of the Week is not available in this process');
    const gen = this.state.current();
    requireIndex(gen);
    const servers = await this.peers.listServers();
    const out: AlbumOfTheWeekRunResponse['servers'] = [];
    for (const server of servers) {
      const scope = new RequestScope(gen, server.id, this.scopeDeps);
      const rows: number[] = [];
      scope.maskNow().forEachRow((r) => void rows.push(r));
      let result: AlbumOfTheWeekRunResponse['servers'][number] = { server_id: server.id, server_name: server.name, playlist: null, written: 0, seed: null, error: 'no analysed song on this server' };
      for (let t = 0; t < WEEKLY_TRIES && rows.length > 0; t++) {
        const seedRow = rows.splice(randomInt(rows.length), 1)[0]!;
        try {
          const album = await this.fromSong(scope, seedRow, ALBUM_DEFAULT_LENGTH, []);
          const ids = [...new Set(album.tracks.map((x) => x.item_id))];
          const w = await this.peers.replaceFixed(server.id, ALBUM_OF_THE_WEEK_PLAYLIST, ids);
          result = { server_id: server.id, server_name: server.name, playlist: ALBUM_OF_THE_WEEK_PLAYLIST, written: w.written, seed: album.seed.label, error: null };
          break;
        } catch (err) {
          result = { ...result, error: (err as Error).message };
          if (!(err instanceof NotFoundError)) break;
        }
      }
      if (result.error) this.logger.warn('album of the week not written', { serverId: server.id, err: result.error });
      else this.logger.info('album of the week written', { serverId: server.id, tracks: result.written, seed: result.seed });
      out.push(result);
    }
    const ok = out.filter((s) => s.error === null).length;
    // No server at all is a FAILURE too (the scheduler then records why nothing was written).
    return { status: out.length > 0 && ok === out.length ? 'SUCCESS' : ok > 0 ? 'PARTIAL' : 'FAILURE', servers: out };
  }

  /**
   * The seed point moved along the steering concepts: unit(seed + STEER_SCALE x sum(weight x direction)), where a
   * concept's direction is the one text search steers by (the generation's semantic table, semantic/steering.ts:
   * mean embedding of the songs carrying it minus that of the others). A concept without a direction on this index
   * (too few songs with or without it) is left out.
   */
  private steer(table: SemanticTable | undefined, seed: Float32Array, steering: readonly SteeringItem[]): Float32Array {
    if (!steering.length || !table) return seed;
    const moved = Float32Array.from(seed);
    for (const term of steering) {
      const dir = table.concepts.get(term.concept)?.direction?.vector;
      if (!dir || term.weight === 0) continue;
      for (let d = 0; d < moved.length; d++) moved[d]! += STEER_SCALE * term.weight * dir[d]!;
    }
    const out = new Float32Array(moved.length);
    return normaliseInto(moved, 0, out, 0, out.length) > 0 ? out : seed;
  }

  /** Mean cosine of RANDOM_PAIRS random pairs of the generation's songs (seeded by the generation number; cached). */
  randomCohesionOf(gen: Generation): number {
    const cached = this.randomCohesion.get(gen.generation);
    if (cached !== undefined) return cached;
    const n = gen.index.size;
    const rnd = new SeededRandom(gen.generation * 7919 + 1);
    let sum = 0;
    let pairs = 0;
    for (let i = 0; i < RANDOM_PAIRS && n > 1; i++) {
      const a = rnd.nextUint32() % n;
      const b = rnd.nextUint32() % n;
      if (a === b) continue;
      sum += dot(gen.index.getVector(a), 0, gen.index.getVector(b), 0, gen.index.dim);
      pairs++;
    }
    const value = pairs ? sum / pairs : 0;
    this.randomCohesion.set(gen.generation, value);
    return value;
  }

  private async tableOrUndefined(gen: Generation): Promise<SemanticTable | undefined> {
    try {
      return await this.tables(gen);
    } catch (err) {
      this.logger.warn('album: semantic table unavailable; sequencing without tags', { err: (err as Error).message });
      return undefined;
    }
  }
}

/** 503 while no generation with songs serves. */
function requireIndex(gen: Generation): void {
  if (gen.generation === 0 || gen.index.size === 0) throw new StateUnavailableError('index_unavailable', 'No index generation is serving yet: analyze the library and wait for the index build');
}

/** "intro" when the picks' strongest MSD genre (mean probability) is one of INTRO_GENRES, else "bang" (also without tags). */
export function openerStyle(table: SemanticTable | undefined, picks: readonly AlbumCandidate[]): OpenerStyle {
  if (!table) return 'bang';
  const tagged = picks.filter((p) => table.tagged[p.row] === 1);
  if (!tagged.length) return 'bang';
  let best = '';
  let bestMean = -1;
  for (const g of GENRE_COLUMNS) {
    let s = 0;
    for (const p of tagged) s += table.raw(p.row, g.col);
    if (s / tagged.length > bestMean) [best, bestMean] = [g.label, s / tagged.length];
  }
  return INTRO_GENRES.has(best) ? 'intro' : 'bang';
}


const round3 = (x: number) => Math.round(x * 1000) / 1000;
