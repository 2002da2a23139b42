import type { WorkerJobs } from '../worker-pool';

/** A job module for the pool's tests: `sum` adds a Float64Array; `fail` throws. */
export const workerJobs: WorkerJobs = {
  sum: (xs: Float64Array) => xs.reduce((a, b) => a + b, 0),
  fail: (message: string) => {
    throw new Error(message);
  },
};
