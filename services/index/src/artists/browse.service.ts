import type { AutocompleteQuery } from '@polyphony/contracts';
import { AppError, NotFoundError, UpstreamUnavailableError, ValidationError, type Logger } from '@polyphony/platform';
import type { ArtistService } from './artist.service';
import type { Generation } from '../core/generation';
import type { MediaClientFactory, RegistryPort } from '../core/ports';
import { normaliseInto } from '@polyphony/vectors';
import { mapPosition, placeAmong } from '../maps/umap-projection';
import type { RequestScope } from '../core/scope';
import { foldText } from '../core/text';

/** Autocomplete page size when `end` is absent, and the largest page (reference: 20 and 500). */
export const AUTOCOMPLETE_DEFAULT = 20;
export const AUTOCOMPLETE_MAX = 500;
/** How long a server's playlist list is reused (reference `_PLAYLIST_CACHE_TTL`, 30 s). */
export const PLAYLIST_CACHE_MS = 30_000;

/** `[start, end)` of an autocomplete request. @throws ValidationError when end < start or the page exceeds 500 rows */
export function pageRange(q: Pick<AutocompleteQuery, 'start' | 'end'>): { start: number; end: number } {
  const start = q.start ?? 0;
  const end = q.end ?? start + AUTOCOMPLETE_DEFAULT;
  if (end < start) throw new ValidationError('end must not be smaller than start');
  if (end - start > AUTOCOMPLETE_MAX) throw new ValidationError(`end - start must be at most ${AUTOCOMPLETE_MAX}`);
  return { start, end };
}

/** One projected mixture component of an artist. */
interface ComponentPoint {
  artist: number;
  componentIdx: number;
  weight: number;
  projection: [number, number];
}

/**
 * Catalogue browsing for API clients (reference `search_artists`, `search_playlists`, `artist_tracks`,
 * `artist_projections`): always restricted to what the selected server holds, under its ids.
 *
 * - Artists: the generation's artists (one per folded name, artist-model.ts) whose folded name contains
 *   the folded query, each counted by its songs available on the server; most songs first, then name.
 * - Playlists: the server's own playlists (media-server client `listPlaylists`, cached 30 s per server)
 *   whose lower-case name contains the query, by name.
 * - Artist projections: every mixture component mean of every artist, projected with the generation's
 *   PCA basis (the map's frame), computed once per generation (or on `build`), filtered per server.
 */
export class BrowseService {
  private readonly playlists = new Map<string, { at: number; value: Promise<Array<{ id: string; name: string; count: number | null }>> }>();
  private projections?: { gen: Generation; points: ComponentPoint[] };

  constructor(
    private readonly artists: ArtistService,
    private readonly registry: RegistryPort,
    private readonly clients: MediaClientFactory,
    private readonly logger: Logger,
  ) {}

  /** Artists matching the query with songs on the server: `[{artist, artist_id, track_count}]`. @throws ValidationError on a bad range */
  async searchArtists(scope: RequestScope, q: AutocompleteQuery): Promise<Array<{ artist: string; artist_id: string | null; track_count: number }>> {
    const { start, end } = pageRange(q);
    const needle = foldText(q.query ?? q.search_query);
    if (!needle || end === start) return [];
    const model = scope.gen.artists;
    const mask = await scope.mask();
    const counts = new Int32Array(model.count);
    mask.forEachRow((row) => {
      const a = model.artistOfRow[row]!;
      if (a >= 0) counts[a]!++;
    });
    const matches: number[] = [];
    for (let a = 0; a < model.count; a++) if (counts[a]! > 0 && model.keys[a]!.includes(needle)) matches.push(a);
    matches.sort((x, y) => counts[y]! - counts[x]! || (model.keys[x]! < model.keys[y]! ? -1 : model.keys[x]! > model.keys[y]! ? 1 : 0));
    const page = matches.slice(start, end);
    const ids = await this.artists.providerArtistIds(scope, page);
    return page.map((a) => ({ artist: model.names[a]!, artist_id: ids.get(a) ?? null, track_count: counts[a]! }));
  }

  /**
   * Songs of one artist (by name or provider artist id) available on the server, in album then title order.
   * @throws ValidationError when no artist is given; NotFoundError when the artist is unknown
   */
  async artistTracks(scope: RequestScope, query: { artist?: string; artist_id?: string }): Promise<Array<{ item_id: string; title: string | null; author: string | null }>> {
    const tries = [query.artist_id, query.artist].filter((v): v is string => typeof v === 'string' && v.length > 0);
    if (tries.length === 0) throw new ValidationError('Give artist (name or artist id) or artist_id');
    let a = -1;
    for (const t of tries) {
      a = await this.artists.resolve(scope, t);
      if (a >= 0) break;
    }
    if (a < 0) throw new NotFoundError(`Artist "${tries[0]}" not found in the index`);
    const mask = await scope.mask();
    const rows = [...scope.gen.artists.rows(a)].filter((r) => mask.has(r));
    const ids = rows.map((r) => scope.idOf(r));
    const [meta, mapped] = await Promise.all([scope.metadata(ids), scope.mapOutput(ids)]);
    const out: Array<{ item_id: string; title: string | null; author: string | null; album: string }> = [];
    for (const id of ids) {
      const m = meta.get(id);
      const p = mapped.get(id);
      if (m && p) out.push({ item_id: p, title: m.title, author: m.artist, album: foldText(m.album) });
    }
    out.sort((x, y) => (x.album < y.album ? -1 : x.album > y.album ? 1 : 0) || foldText(x.title).localeCompare(foldText(y.title)) || (x.item_id < y.item_id ? -1 : 1));
    return out.map(({ item_id, title, author }) => ({ item_id, title, author }));
  }

  /**
   * The server's playlists whose name contains the query (case-insensitive), by name: `[{id, name, count}]`.
   * @throws ValidationError on a bad range; UpstreamUnavailableError (502) when the server cannot be read
   */
  async searchPlaylists(scope: RequestScope, q: AutocompleteQuery): Promise<Array<{ id: string; name: string; count: number | null }>> {
    const { start, end } = pageRange(q);
    if (scope.serverId === undefined || end === start) return [];
    const needle = (q.query ?? q.search_query ?? '').trim().toLowerCase();
    const all = await this.serverPlaylists(scope.serverId);
    return all.filter((p) => !needle || p.name.toLowerCase().includes(needle)).slice(start, end);
  }

  /** Component projections of the artists with songs on the server (computed once per generation). */
  async artistProjections(scope: RequestScope): Promise<{ components: Array<{ artist_id: string; artist_name: string; component_idx: number; weight: number; projection: [number, number] }>; count: number }> {
    const points = this.pointsOf(scope.gen);
    const mask = await scope.mask();
    const model = scope.gen.artists;
    const onServer = new Uint8Array(model.count);
    mask.forEachRow((row) => {
      const a = model.artistOfRow[row]!;
      if (a >= 0) onServer[a] = 1;
    });
    const kept = points.filter((p) => onServer[p.artist] === 1);
    const ids = await this.artists.providerArtistIds(scope, [...new Set(kept.map((p) => p.artist))]);
    const components = kept.map((p) => ({
      artist_id: ids.get(p.artist) ?? model.names[p.artist]!,
      artist_name: model.names[p.artist]!,
      component_idx: p.componentIdx,
      weight: p.weight,
      projection: p.projection,
    }));
    return { components, count: components.length };
  }

  /** Recomputes the projections of a generation. @throws ValidationError when it has no artists or no map basis */
  buildProjections(gen: Generation): number {
    if (gen.artists.count === 0 || !gen.pca) throw new ValidationError('No artist models in the index yet: analyze music and let the index build first');
    this.projections = { gen, points: computePoints(gen) };
    return this.projections.points.length;
  }

  private pointsOf(gen: Generation): ComponentPoint[] {
    if (this.projections?.gen !== gen) this.projections = { gen, points: gen.pca ? computePoints(gen) : [] };
    return this.projections.points;
  }

  private serverPlaylists(serverId: string): Promise<Array<{ id: string; name: string; count: number | null }>> {
    const hit = this.playlists.get(serverId);
    if (hit && Date.now() - hit.at < PLAYLIST_CACHE_MS) return hit.value;
    const value = (async () => {
      const server = await this.registry.getServer(serverId);
      try {
        const list = await this.clients(server.connection).listPlaylists();
        return list
          .map((p) => ({ id: String(p.id), name: p.name ?? '', count: typeof p.trackCount === 'number' ? p.trackCount : null }))
          .sort((x, y) => x.name.toLowerCase().localeCompare(y.name.toLowerCase()) || (x.id < y.id ? -1 : 1));
      } catch (err) {
        if (err instanceof AppError) throw err;
        this.logger.warn('playlist listing failed', { serverId, err: (err as Error).message });
        throw new UpstreamUnavailableError(`Could not list the playlists of ${server.name}: ${(err as Error).message}`, 502, { cause: err });
      }
    })();
    value.catch(() => this.playlists.delete(serverId));
    if (this.playlists.size > 100) this.playlists.clear();
    this.playlists.set(serverId, { at: Date.now(), value });
    return value;
  }
}

function computePoints(gen: Generation): ComponentPoint[] {
  const model = gen.artists;
  const out: ComponentPoint[] = [];
  for (let a = 0; a < model.count; a++) {
    const view = model.view(a);
    for (let j = 0; j < model.components(a); j++) {
      const mean = model.componentMean(a, j);
      const unit = new Float32Array(mean.length);
      // The map projects unit vectors: project the mean's direction.
      if (!(normaliseInto(mean, 0, unit, 0, mean.length) > 0)) continue;
      // On a UMAP map a component lies among its own songs (placeAmong: one pass over them, no index search).
      const [x, y] = gen.mapMethod === 'umap' ? placeAmong(gen.index, gen.coords, unit, model.componentRows(a, j)) : (mapPosition(gen, unit) ?? [0, 0]);
      out.push({ artist: a, componentIdx: j, weight: round4(Number(view.weights[j])), projection: [round4(x), round4(y)] });
    }
  }
  return out;
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
