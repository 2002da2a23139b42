import type { SimilarArtistDto } from '@polyphony/contracts';
import { NotFoundError, ValidationError, type Logger } from '@polyphony/platform';
import { mixtureDivergence, type ComponentMatch } from './artist-gmm';
import { normaliseInto } from '@polyphony/vectors';
import type { CataloguePort } from '../core/ports';
import type { RequestScope } from '../core/scope';
import { roundDistance } from '../core/scope';
import { artistKey } from '../core/text';

/** Representative songs shown per matched component. */
export const REPRESENTATIVE_SONGS = 3;

/** Resolves an artist given by name or by provider artist id of the selected server. */
export interface ArtistResolver {
  /** Artist number in the scope's generation, or -1. */
  resolve(scope: RequestScope, value: string): Promise<number>;
}

/**
 * Artist similarity (spec "Interactive features": artist summarised by a distribution of its songs'
 * embeddings, ranked by a distance between distributions). The distributions are the per-generation
 * diagonal Gaussian mixtures of artist-model.ts; the distance is the symmetric matched-component
 * Bhattacharyya divergence of artist-gmm.ts (formula and sources there).
 *
 * Candidate pre-selection (so a query does not compare against every artist): for every component of the
 * target artist, the `candidateSongs(n)` songs nearest to the component mean on the selected server are
 * looked up in the shared index; their artists, in order of first appearance, up to `max(200, 10n)`, are
 * the candidates. Only artists with at least one song available on the server can therefore appear.
 */
export class ArtistService implements ArtistResolver {
  constructor(
    private readonly catalogue: CataloguePort,
    private readonly logger: Logger,
  ) {}

  /**
   * Order: the folded name of an artist of the generation; else a provider artist id of the selected
   * server (the Navidrome plugin sends its artist id in `artist=`), through the catalogue's artist links
   * (`GET /internal/artists/resolve`, current) and then the links recorded in the generation's snapshot.
   */
  async resolve(scope: RequestScope, value: string): Promise<number> {
    const artists = scope.gen.artists;
    const byName = artists.indexOfKey(artistKey(value));
    if (byName >= 0) return byName;
    if (scope.serverId !== undefined) {
      try {
        const r = await this.catalogue.resolveArtist(scope.serverId, value);
        const a = artists.indexOfKey(artistKey(r.artistName));
        if (a >= 0) return a;
      } catch (err) {
        this.logger.warn('catalogue artist resolution failed; using the snapshot links', { err: (err as Error).message });
      }
    }
    const key = scope.gen.links.keyOfProviderId(scope.serverId, value);
    return key === undefined ? -1 : artists.indexOfKey(key);
  }

  /**
   * Provider artist ids on the selected server of the given artists (one catalogue call,
   * `POST /internal/artists/map-output`), falling back to the generation's snapshot links.
   */
  async providerArtistIds(scope: RequestScope, list: number[]): Promise<Map<number, string | null>> {
    const artists = scope.gen.artists;
    const out = new Map<number, string | null>();
    let mapped: Record<string, string> = {};
    if (scope.serverId !== undefined && list.length > 0) {
      try {
        mapped = await this.catalogue.mapArtists(scope.serverId, list.map((a) => artists.names[a]!));
      } catch (err) {
        this.logger.warn('catalogue artist mapping failed; using the snapshot links', { err: (err as Error).message });
      }
    }
    for (const a of list) out.set(a, mapped[artists.names[a]!] ?? scope.gen.links.providerIdOf(scope.serverId, artists.keys[a]!) ?? null);
    return out;
  }

  /**
   * The n artists with the smallest divergence to the given one, excluding it.
   * @param query artist (name or provider artist id) and/or artist_id (provider artist id; tried first)
   * @throws ValidationError when neither is given
   * @throws NotFoundError when the artist is unknown
   */
  async similarArtists(scope: RequestScope, query: { artist?: string; artistId?: string }, n: number, includeMatches: boolean): Promise<SimilarArtistDto[]> {
    const tries = [query.artistId, query.artist].filter((v): v is string => typeof v === 'string' && v.length > 0);
    if (tries.length === 0) throw new ValidationError('Give artist (name or artist id) or artist_id');
    let target = -1;
    for (const t of tries) {
      target = await this.resolve(scope, t);
      if (target >= 0) break;
    }
    if (target < 0) throw new NotFoundError('Artist not found in index');
    const { artists, index } = scope.gen;
    const mask = await scope.mask();
    const candidates: number[] = [];
    const seen = new Set<number>([target]);
    const maxCandidates = Math.max(200, 10 * n);
    if (mask.count > 0) {
      const k = Math.min(candidateSongs(n), mask.count);
      for (let j = 0; j < artists.components(target) && candidates.length < maxCandidates; j++) {
        const mean = artists.componentMean(target, j);
        const q = new Float32Array(mean.length);
        if (!(normaliseInto(mean, 0, q, 0, mean.length) > 0)) continue;
        for (const h of index.search(q, { k, mask })) {
          const a = artists.artistOfRow[h.row]!;
          if (a < 0 || seen.has(a)) continue;
          seen.add(a);
          candidates.push(a);
          if (candidates.length >= maxCandidates) break;
        }
      }
    }
    const targetView = artists.view(target);
    const scored = candidates.map((a) => ({ a, ...mixtureDivergence(targetView, artists.view(a)) }));
    scored.sort((x, y) => x.divergence - y.divergence || x.a - y.a);
    const top = scored.slice(0, n);
    const idsPromise = this.providerArtistIds(scope, top.map((s) => s.a));
    if (!includeMatches) {
      const ids = await idsPromise;
      return top.map((s) => ({ artist: artists.names[s.a]!, artist_id: ids.get(s.a) ?? null, divergence: roundDistance(s.divergence) }));
    }
    // Representative songs: the available songs nearest each matched component's mean, one batched lookup.
    const pick = (a: number, j: number): number[] => {
      const out: number[] = [];
      for (const r of artists.componentRows(a, j)) {
        if (mask.has(r)) out.push(r);
        if (out.length === REPRESENTATIVE_SONGS) break;
      }
      return out;
    };
    const weightOrder = (matches: ComponentMatch[]) => [...matches].sort((x, y) => Number(targetView.weights[y.i]) - Number(targetView.weights[x.i]) || x.i - y.i);
    const plan = top.map((s) => ({ s, matches: weightOrder(s.matches).map((m) => ({ m, left: pick(target, m.i), right: pick(s.a, m.j) })) }));
    const ids = new Set<string>();
    for (const p of plan) for (const { left, right } of p.matches) for (const r of [...left, ...right]) ids.add(scope.idOf(r));
    const [mapped, meta, artistIds] = await Promise.all([scope.mapOutput([...ids]), scope.metadata([...ids]), idsPromise]);
    const songs = (rows: number[]) =>
      rows.flatMap((r) => {
        const id = scope.idOf(r);
        const p = mapped.get(id);
        return p ? [{ item_id: p, title: meta.get(id)?.title ?? null }] : [];
      });
    return plan.map(({ s, matches }) => ({
      artist: artists.names[s.a]!,
      artist_id: artistIds.get(s.a) ?? null,
      divergence: roundDistance(s.divergence),
      component_matches: matches
        .map(({ m, left, right }) => ({ artist1_representative_songs: songs(left), artist2_representative_songs: songs(right), distance: roundDistance(m.distance) }))
        .filter((cm) => cm.artist2_representative_songs.length > 0),
    }));
  }
}

/** Songs looked up around each target component: 50 per wanted artist, between 200 and 2000. */
export function candidateSongs(n: number): number {
  return Math.max(200, Math.min(2000, 50 * n));
}
