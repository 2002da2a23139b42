import type { Generation } from '../core/generation';
import type { BallBasis } from './ball';

/**
 * What a build hands to the hyperbolic service for the ball of the generation it activates (issue 35, generation
 * reuse): the serving generation it matched its rows with, and per new row that generation's row whose stored vector
 * is bitwise the same (-1 = changed or new). The service copies those rows from the serving generation's ball when the
 * new generation is laid out with the same basis (`Generation.ballBasis`); every other row is projected.
 */
export interface BallSeed {
  readonly prev: Generation;
  readonly prevRowOfNew: Int32Array;
}

/** Seeds by the served index they belong to (dropped with it). */
const seeds = new WeakMap<object, BallSeed>();

/** Hands `seed` to the ball of the generation serving `index` (as built: no live-library rows on top). */
export function seedBallReuse(index: Generation['index'], seed: BallSeed): void {
  if (seed.prevRowOfNew.length === index.size) seeds.set(index, seed);
}

/** Takes the seed of a generation as built, once; undefined when there is none (or the generation has live rows). */
export function takeBallSeed(gen: Generation): BallSeed | undefined {
  if ((gen.revision ?? 0) !== 0) return undefined;
  const seed = seeds.get(gen.index);
  if (!seed || seed.prevRowOfNew.length !== gen.index.size) return undefined;
  seeds.delete(gen.index);
  return seed;
}

/** The basis each served index's ball was laid out with (set by the hyperbolic service; dropped with the index). */
const bases = new WeakMap<object, BallBasis>();

/** Records the basis the ball of `index` was laid out with (fitted or given). */
export function noteBallBasis(index: Generation['index'], basis: BallBasis | undefined): void {
  if (basis) bases.set(index, basis);
}

/**
 * The basis the ball of `index` was laid out with, once it is built (undefined before, or for an empty index): a build
 * with generation reuse on stores it with the generation, so replicas lay out the same ball without fitting it.
 */
export function ballBasisOf(index: Generation['index']): BallBasis | undefined {
  return bases.get(index);
}
