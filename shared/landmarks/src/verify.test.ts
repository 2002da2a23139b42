import { addNoise, syntheticNotesPcm } from '@polyphony/testkit';
import { extractLandmarks, extractPeaks } from './extract';
import { FRAME_SECONDS, LANDMARK_PARAMS } from './params';
import { landmarkPeaks, peakAgreement } from './verify';

const SR = LANDMARK_PARAMS.sampleRateHz;
const songs = [syntheticNotesPcm(300, 30), syntheticNotesPcm(301, 30)];
const stored = songs.map((pcm) => extractLandmarks(pcm));

describe('landmarkPeaks', () => {
  it('When peaks are recovered from landmarks, then every stored peak is a peak of the song and the span bounds hold', () => {
    const peaks = new Set(extractPeaks(songs[0]!).map((p) => p.t * 256 + p.f));
    const recovered = landmarkPeaks(stored[0]!, 100, 400);
    expect(recovered.length).toBeGreaterThan(20);
    for (const k of recovered) {
      expect(peaks.has(k)).toBe(true);
      expect(Math.floor(k / 256)).toBeGreaterThanOrEqual(100);
      expect(Math.floor(k / 256)).toBeLessThan(400);
    }
  });
});

describe('peakAgreement', () => {
  it('When a noisy clip is checked against its own song at its offset, then most stored peaks are found; against another song or offset, few', () => {
    const start = 8;
    const pcm = addNoise(songs[0]!.slice(start * SR, (start + 10) * SR), 10, 4);
    const clipPeaks = extractPeaks(pcm, LANDMARK_PARAMS.query);
    const frames = Math.floor(pcm.length / LANDMARK_PARAMS.hopSamples);
    const offset = Math.round(start / FRAME_SECONDS);
    const own = peakAgreement(clipPeaks, stored[0]!, offset, 1, frames);
    const other = peakAgreement(clipPeaks, stored[1]!, offset, 1, frames);
    const shifted = peakAgreement(clipPeaks, stored[0]!, offset + 40, 1, frames);
    expect(own.stored).toBeGreaterThan(20);
    expect(own.found / own.stored).toBeGreaterThan(0.5);
    expect(other.found / other.stored).toBeLessThan(0.3);
    expect(shifted.found / shifted.stored).toBeLessThan(0.3);
  });
});
