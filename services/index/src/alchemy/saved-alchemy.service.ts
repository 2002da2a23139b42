/**
 * Saved alchemy (issue 14 "Alchemy anchors and radios"): anchors (named points of the embedding space
 * with exclusions); radios, which run an anchor into one playlist per server, are in radio.service.ts.
 * Rules: shared/contracts/src/anchors.ts; operations: docs/architecture.md "Anchors and radios".
 */
import { ALCHEMY_MAX_ANCHOR_POINTS, ANCHOR_MAX_EXCLUSION_VECTORS, SERVICE_DEFAULTS, type AnchorCreateBody, type AnchorDto } from '@polyphony/contracts';
import { ConflictError, NotFoundError, ValidationError } from '@polyphony/platform';
import type { SavedAlchemyStore, StoredAnchor, StoredExclusion } from './ports';
import { AlchemyService } from './alchemy.service';
import type { Generation } from '../core/generation';
import { normaliseInto } from '@polyphony/vectors';
import type { NamedAnchor } from '../core/ports';
import type { RequestScope } from '../core/scope';

/** Default radius of an anchor's SUBTRACT items (reference ALCHEMY_SUBTRACT_DISTANCE_ANGULAR). */
export const ANCHOR_DEFAULT_SUBTRACT_DISTANCE = SERVICE_DEFAULTS.alchemySubtractDistanceAngular;

function unit(v: ArrayLike<number>): Float32Array | undefined {
  const src = Float32Array.from(v);
  const out = new Float32Array(src.length);
  return normaliseInto(src, 0, out, 0, src.length) > 0 ? out : undefined;
}

function toAnchorDto(a: StoredAnchor): AnchorDto {
  return {
    id: a.id,
    name: a.name,
    points: a.items ? a.items.filter((i) => i.op === 'ADD').length : 0,
    exclusions: a.exclusions.length,
    items: a.items,
    dim: a.dim,
    created_by: a.createdBy,
    created_at: a.createdAt.toISOString(),
    embedder_version: a.embedderVersion,
  };
}

/** Saved anchors: CRUD, and the anchor seed of alchemy, find_path and similar_tracks. */
export class AnchorService {
  constructor(
    private readonly repo: SavedAlchemyStore,
    private readonly alchemy: AlchemyService,
  ) {}

  async list(): Promise<AnchorDto[]> {
    return (await this.repo.listAnchors()).map(toAnchorDto);
  }

  /** @throws NotFoundError */
  async get(id: number): Promise<AnchorDto> {
    const a = await this.repo.findAnchor(id);
    if (!a) throw new NotFoundError(`Anchor ${id} not found`);
    return toAnchorDto(a);
  }

  /**
   * Saves an anchor. From `items` (resolved on the selected server): the centroid is the normalised mean of
   * the ADD points (songs, artists' centroids, moods, playlists, anchors; at most 16), the exclusions are
   * every SUBTRACT song (an artist or playlist counts as each of its songs, a mood or anchor as its point)
   * with radius `subtract_distance` (default 0.2), plus the exclusions of ADD anchors; at most 500 vectors
   * are kept. From `centroid`: it must have the index's dimension and is normalised, as are exclusion vectors.
   * @throws ValidationError (400) for a vector of the wrong dimension or a zero vector; NotFoundError (404)
   *   when none of the ADD items is in the index; ConflictError (409) for a taken name
   */
  async create(scope: RequestScope, body: AnchorCreateBody, createdBy: string | null): Promise<AnchorDto & { unresolved: string[] }> {
    const dim = scope.gen.index.dim;
    if (body.centroid) {
      if (scope.gen.index.size === 0) throw new ConflictError('No index generation is built yet: analyze the library first');
      if (body.centroid.length !== dim) throw new ValidationError(`centroid must have ${dim} numbers (the index's embedding dimension), not ${body.centroid.length}`);
      const centroid = unit(body.centroid);
      if (!centroid) throw new ValidationError('centroid must not be the zero vector');
      const exclusions: StoredExclusion[] = [];
      for (const e of body.exclusions ?? []) {
        if (e.vector.length !== dim) throw new ValidationError(`Each exclusion vector must have ${dim} numbers, not ${e.vector.length}`);
        const v = unit(e.vector);
        if (!v) throw new ValidationError('An exclusion vector must not be the zero vector');
        exclusions.push({ vector: Array.from(v), distance: e.distance ?? null });
      }
      const saved = await this.repo.insertAnchor({ name: body.name, centroid, exclusions, items: null, createdBy, embedderVersion: scope.gen.embedderVersion });
      return { ...toAnchorDto(saved), unresolved: [] };
    }
    const items = body.items!;
    const { add, sub, unresolved, exclusions: carried } = await this.alchemy.resolvePoints(scope, items);
    if (add.length === 0) throw new NotFoundError('None of the ADD items is in the index');
    if (add.length > ALCHEMY_MAX_ANCHOR_POINTS) throw new ValidationError(`An anchor has at most ${ALCHEMY_MAX_ANCHOR_POINTS} anchor points`);
    const centroid = AlchemyService.centroidOf(add, dim);
    const radius = body.subtract_distance ?? ANCHOR_DEFAULT_SUBTRACT_DISTANCE;
    const exclusions: StoredExclusion[] = [];
    for (const s of sub) for (const v of AlchemyService.subtractVectors(scope, s)) exclusions.push({ vector: Array.from(v), distance: radius });
    for (const e of carried) exclusions.push({ vector: Array.from(e.vector), distance: e.distance });
    // The recipe as it can be re-read later: songs by canonical id (provider ids differ per server).
    const recipe = [...add, ...sub].map((p) => ({ id: p.input.type === 'song' ? scope.idOf(p.rows[0]!) : p.input.id, op: p.input.op, type: p.input.type }));
    const saved = await this.repo.insertAnchor({ name: body.name, centroid, exclusions: exclusions.slice(0, ANCHOR_MAX_EXCLUSION_VECTORS), items: recipe, createdBy, embedderVersion: scope.gen.embedderVersion });
    return { ...toAnchorDto(saved), unresolved };
  }

  /** @throws NotFoundError, ConflictError (taken name) */
  async rename(id: number, name: string): Promise<AnchorDto> {
    const a = await this.repo.renameAnchor(id, name);
    if (!a) throw new NotFoundError(`Anchor ${id} not found`);
    return toAnchorDto(a);
  }

  /** Deletes an anchor and its radio. @throws NotFoundError */
  async remove(id: number): Promise<void> {
    if (!(await this.repo.deleteAnchor(id))) throw new NotFoundError(`Anchor ${id} not found`);
  }

  /**
   * An anchor as a seed, by id or (case-insensitive) name.
   * @throws NotFoundError (404) when unknown; ConflictError (409) `anchor_dimension_mismatch` when saved for another
   *   embedding dimension, `embedder_version_mismatch` when saved against another embedder's vectors (the catalogue
   *   switched embedders since: its centroid and exclusions are points of the old space; save it again)
   */
  async seed(idOrName: string, gen: Generation): Promise<NamedAnchor> {
    const key = idOrName.trim();
    // A NUL cannot be in a stored name (PostgreSQL text refuses it): unknown, not a database error.
    if (key.includes('\u0000')) throw new NotFoundError('Anchor not found');
    const a = /^\d{1,9}$/.test(key) ? await this.repo.findAnchor(Number(key)) : await this.repo.findAnchorByName(key);
    if (!a) throw new NotFoundError(`Anchor ${JSON.stringify(key)} not found`);
    if (a.dim !== gen.index.dim) throw new ConflictError(`Anchor "${a.name}" was saved in a ${a.dim}-dimensional embedding space, the index now has ${gen.index.dim}: save it again`, 'anchor_dimension_mismatch');
    if (a.embedderVersion && gen.embedderVersion && a.embedderVersion !== gen.embedderVersion)
      throw new ConflictError(
        `Anchor "${a.name}" was saved against ${a.embedderVersion} vectors; the library is now analysed with ${gen.embedderVersion}, whose space it does not belong to: save it again from its songs`,
        'embedder_version_mismatch',
      );
    return { id: a.id, name: a.name, vector: a.centroid, exclusions: a.exclusions.map((e) => ({ vector: Float32Array.from(e.vector), distance: e.distance })) };
  }
}
