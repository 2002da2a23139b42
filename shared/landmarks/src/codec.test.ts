import { mulberry32 } from '@polyphony/vectors';
import { LANDMARK_CODEC_VERSION, decodeLandmarks, encodeLandmarks, landmarkCount } from './codec';
import { sortLandmarks } from './extract';

describe('landmark codec', () => {
  it('When random landmarks with small and large time gaps are encoded, then they decode to the same arrays in ~3 bytes each', () => {
    const rnd = mulberry32(3);
    const n = 5000;
    const hashes = Uint32Array.from({ length: n }, () => Math.floor(rnd() * (1 << 20)));
    const times = Uint16Array.from({ length: n }, () => (rnd() < 0.01 ? Math.floor(rnd() * 65535) : Math.floor(rnd() * 8000)));
    const lm = sortLandmarks(hashes, times);
    const bytes = encodeLandmarks(lm);
    const back = decodeLandmarks(bytes);
    expect(Array.from(back.hashes)).toEqual(Array.from(lm.hashes));
    expect(Array.from(back.times)).toEqual(Array.from(lm.times));
    expect(landmarkCount(bytes)).toBe(lm.hashes.length);
    expect(bytes.length / lm.hashes.length).toBeLessThan(3.2);
  });

  it('When the input is unsorted or a hash exceeds 20 bits, then encoding throws', () => {
    expect(() => encodeLandmarks({ hashes: Uint32Array.of(1, 2), times: Uint16Array.of(5, 4) })).toThrow(/sorted/);
    expect(() => encodeLandmarks({ hashes: Uint32Array.of(1 << 20), times: Uint16Array.of(0) })).toThrow(/20 bits/);
  });

  it('When a buffer has another version or is cut short, then decoding throws instead of returning garbage', () => {
    const bytes = encodeLandmarks({ hashes: Uint32Array.of(7, 9, 11), times: Uint16Array.of(0, 3, 40) });
    expect(bytes[0]).toBe(LANDMARK_CODEC_VERSION);
    expect(() => decodeLandmarks(Uint8Array.of(LANDMARK_CODEC_VERSION + 1, ...bytes.subarray(1)))).toThrow(/version/);
    // A print of an earlier codec (another extraction, same layout) is refused, not read as current landmarks.
    for (let old = 1; old < LANDMARK_CODEC_VERSION; old++) expect(() => decodeLandmarks(Uint8Array.of(old, ...bytes.subarray(1)))).toThrow(/version/);
    expect(() => decodeLandmarks(bytes.subarray(0, bytes.length - 2))).toThrow(/truncated/);
    expect(() => decodeLandmarks(new Uint8Array(0))).toThrow(/version/);
  });

  it('When there are no landmarks (silence), then the buffer holds only the header', () => {
    const bytes = encodeLandmarks({ hashes: new Uint32Array(0), times: new Uint16Array(0) });
    expect(bytes.length).toBe(2);
    expect(decodeLandmarks(bytes).hashes.length).toBe(0);
  });
});
