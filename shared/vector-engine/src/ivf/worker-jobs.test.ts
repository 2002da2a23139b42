import { join } from 'node:path';
import { IvfWorkerPool } from './worker-pool';
import { moduleFile } from '@polyphony/platform';

describe('IvfWorkerPool jobs registered by its user', () => {
  it('runs a registered job kind in the workers and reports unknown kinds and handler errors', async () => {
    const pool = new IvfWorkerPool(2, undefined, [moduleFile(join(__dirname, '__tests__'), 'sum-job')]);
    try {
      const sums = await Promise.all([1, 2, 3].map((n) => pool.runJob<number>('sum', Float64Array.from({ length: n * 10 }, (_, i) => i + 0.5))));
      expect(sums).toEqual([50, 200, 450]);
      await expect(pool.runJob('nope', null)).rejects.toThrow('no worker job registered as nope');
      await expect(pool.runJob('fail', 'broken input')).rejects.toThrow('broken input');
      // The pool keeps serving after a job failed.
      await expect(pool.runJob<number>('sum', Float64Array.of(2, 3))).resolves.toBe(5);
    } finally {
      await pool.close();
    }
  });
});
