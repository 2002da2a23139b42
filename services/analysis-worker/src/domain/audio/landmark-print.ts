import type { PutFingerprintRequest } from '@polyphony/contracts';
import { LANDMARK_CODEC_VERSION, LANDMARK_PARAMS, encodeLandmarks, extractLandmarks } from '@polyphony/landmarks';

/**
 * The recording fingerprint of a song (search by recording, issue 33) from the PCM the analysis already decoded:
 * Wang 2003 landmarks at the stored density (`@polyphony/landmarks`, LANDMARK_PARAMS.store: 5 peaks/s, 3 pairs
 * each), encoded with the package codec (~3 bytes per landmark; a 4-minute song is ~4-8 KB, 8,171 bytes on average with codec 2) and ready for
 * PUT /internal/tracks/:itemId/fingerprint. Cost: one 1024-point FFT per 32 ms of audio plus the peak filter
 * (CPU per song measured by `node bench/dist/landmarks/recording-search.js`).
 * @param samples mono PCM at `sampleRate`
 * @throws RangeError when `sampleRate` is not the 16 kHz the fingerprint is defined at
 */
export function recordingFingerprint(samples: Float32Array, sampleRate: number): PutFingerprintRequest {
  if (sampleRate !== LANDMARK_PARAMS.sampleRateHz) throw new RangeError(`recording fingerprints need ${LANDMARK_PARAMS.sampleRateHz} Hz PCM, got ${sampleRate} Hz`);
  const lm = extractLandmarks(samples, LANDMARK_PARAMS.store);
  const blob = encodeLandmarks(lm);
  return { codec: LANDMARK_CODEC_VERSION, landmarks: lm.hashes.length, seconds: samples.length / sampleRate, blob: Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).toString('base64') };
}
