/**
 * The Poincaré ball of a live-library revision (issue 35): with the generation's stored basis (generation reuse on),
 * the revision copies the points of the rows it shares with the revision it grew from and projects only the appended
 * rows (17.8 s fresh against 0.5 s reused at 1M for a build, session 16), and holds exactly what laying out every row
 * with that basis gives. Without a basis (reuse off) every revision's ball is fitted from its own rows, as before.
 */
import { createLogger } from '@polyphony/platform';
import { buildIvfIndex } from '@polyphony/vector-engine';
import { ArtistLinks, IndexState, emptyGeneration, type Generation } from '../core/generation';
import { applyDelta } from '../generation/live/delta-apply';
import { GenerationMaps } from '../maps/generation-maps';
import { TrackMetaStore } from '../maps/track-meta-store';
import { BALL_COMPACT_MIN_ROWS, BALL_DIM, buildPoincareBall, fitBallBasis, type PoincareBall } from './ball';
import { ballInputOf } from './ball-input';
import { ballBasisOf } from './ball-seed';
import { HyperbolicService } from './hyperbolic.service';
import { expectSameBall } from './__tests__/same-ball';
import { mixturePoints } from '../__tests__/mixture-points';

const DIM = 24;

const points = (count: number, streamSeed: number) => mixturePoints(count, streamSeed, { dim: DIM, clusters: 10, intrinsicDim: 6, seed: 8 });

describe('Poincaré ball of a live-library revision', () => {
  jest.setTimeout(120_000);
  const logger = createLogger({ service: 'ball-live-test', level: 'error' });
  let base: Generation;

  beforeAll(async () => {
    const p = points(3000, 1);
    const index = (await buildIvfIndex([{ ids: p.ids, vectors: p.vectors }], { expectedCount: p.ids.length, nlist: 16, dim: DIM })).index;
    base = { ...emptyGeneration(DIM), generation: 5, index, links: new ArtistLinks(), coords: new Float32Array(index.size * 2), maps: new GenerationMaps(index), meta: new TrackMetaStore(index.size) };
  });

  const grow = (gen: Generation, seq: number, count: number) => {
    const p = points(count, 10 + seq);
    return applyDelta(gen, { seq, tracks: p.ids.map((itemId, i) => ({ itemId, vector: p.vectors.slice(i * DIM, (i + 1) * DIM), meta: undefined, mappings: [] })) }).gen;
  };

  it('When the generation has a stored basis, then each revision copies its first rows from the previous revision\'s ball and equals a ball laid out with that basis', async () => {
    const basis = (await fitBallBasis(ballInputOf(base.index), undefined, BALL_DIM))!;
    const gen0: Generation = { ...base, ballBasis: basis };
    const service = new HyperbolicService(new IndexState(emptyGeneration(DIM)), logger);
    const b0 = await service.ball(gen0);
    const rev1 = grow(gen0, 1, 50);
    const rev2 = grow(rev1, 2, 20);
    const b1 = (await service.ball(rev1)) as PoincareBall & { reused: number };
    const b2 = (await service.ball(rev2)) as PoincareBall & { reused: number };
    expect([b0.size, b1.reused, b2.reused]).toEqual([3000, 3000, 3050]);
    for (const [rev, ball] of [[rev1, b1], [rev2, b2]] as const) {
      expectSameBall(ball, await buildPoincareBall(ballInputOf(rev.index), undefined, BALL_DIM, BALL_COMPACT_MIN_ROWS, basis));
    }
  });

  it('When a fresh build serves its generation with the basis its ball fitted (set after the ball was built), then the first revision still copies the shared rows', async () => {
    const service = new HyperbolicService(new IndexState(emptyGeneration(DIM)), logger);
    // As build-run's activation: the ball is prepared on the generation without a basis, the served object gets the fitted one.
    const fitted = (await service.ball(base)).basis!;
    expect(ballBasisOf(base.index)).toBe(fitted);
    const served: Generation = { ...base, ballBasis: fitted };
    expect(await service.ball(served)).toBe(await service.ball(base));
    const rev1 = grow(served, 1, 50);
    const b1 = (await service.ball(rev1)) as PoincareBall & { reused: number };
    expect(b1.reused).toBe(3000);
    expectSameBall(b1, await buildPoincareBall(ballInputOf(rev1.index), undefined, BALL_DIM, BALL_COMPACT_MIN_ROWS, fitted));
  });

  it('When the generation has no stored basis (reuse off), then a revision\'s ball is fitted from its own rows, nothing copied', async () => {
    const service = new HyperbolicService(new IndexState(emptyGeneration(DIM)), logger);
    await service.ball(base);
    const rev1 = grow(base, 1, 50);
    const b1 = (await service.ball(rev1)) as PoincareBall & { reused: number };
    expect(b1.reused).toBe(0);
    expectSameBall(b1, await buildPoincareBall(ballInputOf(rev1.index)));
  });
});
