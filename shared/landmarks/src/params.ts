/**
 * Parameters of the landmark fingerprint. The method is Wang's (A. Wang, "An Industrial-Strength Audio Search
 * Algorithm", ISMIR 2003): spectrogram peaks ("constellation"), pairs of an anchor peak with target peaks in a
 * zone after it hashed as (anchor frequency, frequency difference, time difference), and a match that counts the
 * hashes shared with a stored song at one consistent time offset. The density split (a sparse stored side and a
 * denser query side, every pair of the target zone on the query side) follows D. Ellis' audfprint
 * (https://github.com/dpwe/audfprint, "density" and "fanout" options; its documentation reports that a denser
 * query raises recall at no storage cost).
 *
 * Choices of this implementation (measured in `bench/src/landmarks/recording-search.ts`, docs in the README):
 * - PCM at 16 kHz mono (what the analysis already decodes), n_fft 1024 (64 ms, 15.6 Hz bins), hop 512 (32 ms);
 * - peaks only between 250 Hz and 3.5 kHz: a phone in a room passes roughly 300-3400 Hz (the telephone band of
 *   ITU-T G.712), so peaks outside it would be stored but never found again in a recorded clip;
 * - hash = anchor bin (8 bits) | frequency difference + 32 (6 bits) | time difference in frames (6 bits): 20 bits.
 */
export const LANDMARK_PARAMS = Object.freeze({
  /** Sample rate of the PCM the extractor takes, Hz. */
  sampleRateHz: 16000,
  /** FFT length, samples (64 ms). */
  nFft: 1024,
  /** Hop between frames, samples (32 ms: 31.25 frames/s). */
  hopSamples: 512,
  /** First FFT bin kept (16 x 15.625 Hz = 250 Hz). */
  minBin: 16,
  /** One past the last FFT bin kept (224 x 15.625 Hz = 3.5 kHz). */
  maxBin: 224,
  /** A peak is the maximum of the log spectrogram within +-this many bins... */
  peakBinRadius: 9,
  /** ...and +-this many frames (+-160 ms). */
  peakFrameRadius: 5,
  /** Frames whose band energy is this far (dB) below the loudest frame's are silence: no peak there. */
  silenceBelowMaxDb: 60,
  /**
   * Target zone: a target peak lies 1..maxDt frames after its anchor (up to 1.6 s)... 50 since codec 2 (40 before):
   * +11/-0 goal-case clips on two fresh draws (McNemar p = 0.001) for 8,171 bytes per 4-minute song (7,246 at 40);
   * package README, session 19.
   */
  maxDt: 50,
  /** ...and at most this many bins above or below it (+-484 Hz). */
  maxDf: 31,
  /** Stored side: strongest peaks kept per second and targets paired with each anchor (nearest in time). */
  store: Object.freeze({ peaksPerSecond: 5, fanOut: 3 }),
  /** Query side: denser peaks, and every pair within the target zone up to this many per anchor. */
  query: Object.freeze({ peaksPerSecond: 12, fanOut: 12 }),
});

/** Duration of one frame, seconds. */
export const FRAME_SECONDS = LANDMARK_PARAMS.hopSamples / LANDMARK_PARAMS.sampleRateHz;

/** Number of distinct hash values (20 bits). */
export const HASH_SPACE = 1 << 20;

/** Largest frame time a posting can hold (Uint16): 65535 frames = 34.9 minutes; later landmarks are not stored. */
export const MAX_FRAME = 0xffff;

/** Density settings of one side (stored or query). */
export interface Density {
  /** Strongest peaks kept per second of audio. */
  peaksPerSecond: number;
  /** Target peaks paired with each anchor, nearest in time first. */
  fanOut: number;
  /** Peak neighbourhood of this side, bins and frames (default LANDMARK_PARAMS.peakBinRadius / peakFrameRadius). */
  peakBinRadius?: number;
  peakFrameRadius?: number;
  /** Target zone length of this side, frames (default LANDMARK_PARAMS.maxDt; at most 63, the hash's 6 bits). */
  maxDt?: number;
  /**
   * Peaks of this side only between these bins (absolute FFT bins, 15.625 Hz each; default the whole kept band
   * `minBin`..`maxBin`): the maxima are still found over the whole band, peaks outside [peakMinBin, peakMaxBin) are
   * not kept, so the per-second cap goes to peaks that a band-limited recording keeps (the bench's `storeBand`).
   */
  peakMinBin?: number;
  peakMaxBin?: number;
}
