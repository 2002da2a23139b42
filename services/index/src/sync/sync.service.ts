import { MSD_TAGS, MTT_TAGS, type ScoreDto, type SyncQuery, type SyncResponse, type TrackDto } from '@polyphony/contracts';
import { NotFoundError, ValidationError } from '@polyphony/platform';
import { typedToBuffer } from '../core/codec';
import type { TrackDetails, TrackReader } from '../core/ports';
import type { IvfIndex } from '@polyphony/vector-engine';
import type { RequestScope } from '../core/scope';
import type { SimilarityService } from '../similarity/similarity.service';

/** Page sizes (reference `/api/sync`: 500 full rows, 1000 with fields=index). */
export const SYNC_MAX_FULL = 500;
export const SYNC_MAX_INDEX = 1000;
/** Largest `ids` list. */
export const SYNC_MAX_IDS = 500;

/**
 * `/api/sync` and the external per-track endpoints: every track under the selected server's real id,
 * tracks absent on the server omitted (spec "Other endpoints named").
 *
 * Paging walks the generation's rows, which are in canonical-id byte order, two ways: by cursor
 * (`next_page` is the base64url of the last canonical id returned, opaque to clients, so pages stay
 * consistent across a rebuild) or by the reference's 1-based `page` with `limit` (page N = the available
 * rows N*limit-limit .. N*limit-1 of that order; `has_more` is false on the last page, and a page past
 * the end is empty, so a client looping on pages ends).
 * `fp` changes whenever the track's analysis (embedding, tempo, key, scale, energy) changes.
 */
export class SyncService {
  constructor(
    private readonly tracks: TrackReader,
    private readonly similarity: SimilarityService,
  ) {}

  /** @throws ValidationError on more than 500 ids or a malformed page token */
  async sync(scope: RequestScope, q: SyncQuery, providerType: string | null): Promise<SyncResponse> {
    const indexOnly = q.fields === 'index';
    const max = indexOnly ? SYNC_MAX_INDEX : SYNC_MAX_FULL;
    const limit = Math.min(q.limit ?? max, max);
    const mask = await scope.mask();
    const index = scope.gen.index;
    let page: Array<{ canonical: string; reportAs?: string }>;
    let total: number;
    let hasMore = false;
    if (q.ids !== undefined) {
      const given = q.ids.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
      if (given.length > SYNC_MAX_IDS) throw new ValidationError(`At most ${SYNC_MAX_IDS} ids per request`);
      const canonical = await scope.resolveInput(given);
      page = [];
      canonical.forEach((c, i) => {
        const row = index.rowOf(c);
        if (row >= 0 && mask.has(row)) page.push({ canonical: c, reportAs: c !== given[i] ? given[i] : undefined });
      });
      total = page.length;
    } else {
      const token = q.next_page ?? q.after;
      if (token !== undefined && q.page !== undefined) throw new ValidationError('Give either page or next_page/after, not both');
      let start = 0;
      if (token !== undefined) start = firstRowAfter(index, decodeToken(token));
      // Page mode skips the available rows of the earlier pages (O(size) bit tests, a few ms at 1M songs).
      let skip = q.page !== undefined ? (q.page - 1) * limit : 0;
      page = [];
      for (let row = start; row < index.size; row++) {
        if (!mask.has(row)) continue;
        if (skip > 0) {
          skip--;
          continue;
        }
        if (page.length === limit) {
          hasMore = true;
          break;
        }
        page.push({ canonical: index.idOf(row) });
      }
      total = mask.count;
    }
    const ids = page.map((p) => p.canonical);
    const [details, mapped, vectors] = await Promise.all([
      indexOnly ? Promise.resolve(new Map<string, TrackDetails>()) : this.tracks.details(ids),
      scope.mapOutput(ids),
      !indexOnly && q.include_embeddings !== false ? this.tracks.rawVectors(ids) : Promise.resolve(new Map<string, Float32Array>()),
    ]);
    const fps = indexOnly ? await this.fingerprints(ids) : undefined;
    const coords = scope.gen.coords;
    const tracks: SyncResponse['tracks'] = [];
    for (const p of page) {
      const provider = mapped.get(p.canonical);
      if (!provider) continue;
      const id = p.reportAs ?? provider;
      if (indexOnly) {
        const fp = fps!.get(p.canonical);
        if (fp) tracks.push({ id, fp });
        continue;
      }
      const d = details.get(p.canonical);
      if (!d) continue;
      const row = index.rowOf(p.canonical);
      const vec = vectors.get(p.canonical);
      tracks.push({
        id,
        fp: d.fp,
        title: d.title,
        artist: d.artist,
        ...analysisFields(d),
        umap_x: row >= 0 && coords.length ? coords[2 * row]! : null,
        umap_y: row >= 0 && coords.length ? coords[2 * row + 1]! : null,
        ...(vec ? { embedding: typedToBuffer(vec).toString('base64') } : {}),
      });
    }
    const last = page[page.length - 1];
    return {
      tracks,
      total_tracks: total,
      provider_type: providerType,
      has_more: hasMore,
      next_page: hasMore && last ? encodeToken(last.canonical) : null,
      ...(q.page !== undefined && q.ids === undefined ? { page: q.page, total_pages: Math.ceil(total / limit) } : {}),
    };
  }

  /** The analysis row of a track by the server's id (item_id echoes the caller's id; /external/get_score). @throws NotFoundError */
  async score(scope: RequestScope, id: string): Promise<ScoreDto> {
    const { reportedId, d } = await this.located(scope, id);
    return { item_id: reportedId, title: d.title, author: d.artist, ...analysisFields(d) };
  }

  /** GET /api/track: the analysis row plus every learned tag (`tags`, see tagsRecord). @throws NotFoundError */
  async track(scope: RequestScope, id: string): Promise<TrackDto> {
    const { reportedId, d } = await this.located(scope, id);
    return { item_id: reportedId, title: d.title, author: d.artist, ...analysisFields(d), tags: tagsRecord(d.tags) };
  }

  /** The stored row of a track by the server's id. @throws NotFoundError */
  private async located(scope: RequestScope, id: string): Promise<{ reportedId: string; d: TrackDetails }> {
    const { canonical, reportedId } = await this.similarity.locate(scope, id);
    const d = (await this.tracks.details([canonical])).get(canonical);
    if (!d) throw new NotFoundError('Track not found');
    return { reportedId, d };
  }

  /** The raw stored embedding of a track by the server's id. @throws NotFoundError */
  async embedding(scope: RequestScope, id: string): Promise<{ item_id: string; embedding: number[] }> {
    const { canonical, reportedId } = await this.similarity.locate(scope, id);
    const v = (await this.tracks.rawVectors([canonical])).get(canonical);
    if (!v) throw new NotFoundError('Track not found');
    return { item_id: reportedId, embedding: Array.from(v) };
  }

  private async fingerprints(ids: string[]): Promise<Map<string, string>> {
    const details = await this.tracks.details(ids);
    return new Map([...details].map(([id, d]) => [id, d.fp]));
  }
}

/**
 * The `tags` of GET /api/track from the stored tag bytes (100: MSD_TAGS then MTT_TAGS, probability x 255): label ->
 * probability rounded to 3 decimals (distinct bytes stay distinct: a byte step is 0.0039). MTT labels only when some
 * MTT byte is non-zero (a song analysed without the MTT model stores 50 zeros); a label both lists carry keeps the
 * higher probability. Null for a song without tags (or bytes of another length).
 */
export function tagsRecord(bytes: Buffer | null): Record<string, number> | null {
  if (!bytes || bytes.length !== MSD_TAGS.length + MTT_TAGS.length) return null;
  const out: Record<string, number> = {};
  const put = (label: string, b: number) => {
    const p = Math.round((b / 255) * 1000) / 1000;
    if (!(label in out) || out[label]! < p) out[label] = p;
  };
  MSD_TAGS.forEach((label, i) => put(label, bytes[i]!));
  const mtt = bytes.subarray(MSD_TAGS.length);
  if (mtt.some((b) => b !== 0)) MTT_TAGS.forEach((label, i) => put(label, mtt[i]!));
  return out;
}

/** Opaque page token: base64url of a canonical id. */
export function encodeToken(canonical: string): string {
  return Buffer.from(canonical, 'utf8').toString('base64url');
}

/** @throws ValidationError on a token that is not base64url text */
export function decodeToken(token: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw new ValidationError('Malformed next_page token');
  return Buffer.from(token, 'base64url').toString('utf8');
}

/** First row whose canonical id is byte-wise greater than `id` (rows are in byte order). O(log size). */
export function firstRowAfter(index: IvfIndex, id: string): number {
  const key = Buffer.from(id, 'utf8');
  let lo = 0;
  let hi = index.size;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (Buffer.compare(Buffer.from(index.idOf(mid), 'utf8'), key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The stored analysis of a track in the reference's field names (shared by the sync rows and the score answer). */
function analysisFields(d: TrackDetails) {
  return {
    album: d.album,
    album_artist: d.albumArtist,
    year: d.year,
    rating: d.rating,
    duration: d.duration,
    tempo: d.tempo,
    key: d.key,
    scale: d.scale,
    energy: d.energy,
    mood_vector: d.moodVector,
    other_features: d.otherFeatures,
  };
}
