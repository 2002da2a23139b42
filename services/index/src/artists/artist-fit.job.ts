/**
 * The artist-mixture job of the IVF build pool (`IvfWorkerPool.runJob(ARTIST_FIT_JOB, ...)`), loaded in each
 * worker thread: the mixtures of consecutive artists from their songs' unit vectors (`fitArtistPoints`).
 * Input: `points` (the songs' vectors, concatenated), `counts[i]` songs of artist i, their `rows`, `dim` and
 * the mixture `prior`; output: one `ArtistFit` per artist, in order.
 */
import type { WorkerJobs } from '@polyphony/vector-engine';
import { fitArtistPoints, type ArtistFit } from './artist-fit';

/** The job kind the index registers with the engine's worker pool. */
export const ARTIST_FIT_JOB = 'artist-fit';

/** Input of one artist-fit job. */
export interface ArtistFitJob {
  points: Float32Array;
  counts: Int32Array;
  rows: Int32Array;
  dim: number;
  prior: Float32Array;
}

export const workerJobs: WorkerJobs = {
  [ARTIST_FIT_JOB]: (job: ArtistFitJob): ArtistFit[] => {
    const fits: ArtistFit[] = [];
    let o = 0;
    for (const n of job.counts) {
      fits.push(fitArtistPoints(job.points, o * job.dim, job.rows.subarray(o, o + n), job.dim, job.prior));
      o += n;
    }
    return fits;
  },
};
