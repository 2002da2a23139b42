import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the Poincaré ball's basis of a generation (issue 35, generation reuse: hyperbolic/ball.ts
 * `encodeBallBasis`, float64 centroid, axes and distance percentiles). Null = every replica fits it from the vectors
 * (builds with reuse off, and every build stored before this migration).
 */
export class AddBallBasis1734500000000 implements MigrationInterface {
  name = 'AddBallBasis1734500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds ADD COLUMN ball bytea`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "index".builds DROP COLUMN ball');
  }
}
