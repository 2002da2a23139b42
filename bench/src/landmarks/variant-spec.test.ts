import { LANDMARK_PARAMS } from '@polyphony/landmarks';
import { applyVariantSpec, speedGrid, storeDiffers } from './variant-spec';

const defaults = () => ({ store: { ...LANDMARK_PARAMS.store }, match: {}, index: {} });

describe('bench variant specs', () => {
  it('sets the stored and query densities, the band in bins and the peak neighbourhood', () => {
    const v = applyVariantSpec('storeDt=50,storePeaks=4,storeBand=350-3200,storeFrameR=6,queryDt=50,queryFan=16,queryBinR=11', defaults());
    expect(v.store).toEqual({ peaksPerSecond: 4, fanOut: 3, maxDt: 50, peakMinBin: 22, peakMaxBin: 205, peakFrameRadius: 6 });
    expect(v.match.query).toEqual({ peaksPerSecond: 12, fanOut: 16, maxDt: 50, peakBinRadius: 11 });
    expect(LANDMARK_PARAMS.query).toEqual({ peaksPerSecond: 12, fanOut: 12 });
  });

  it('starts from a base without changing it, and an empty spec is the base', () => {
    const base = applyVariantSpec('queryDt=63,stop=0.1', defaults());
    const v = applyVariantSpec('queryPeaks=14', base);
    expect(v.match.query).toEqual({ peaksPerSecond: 14, fanOut: 12, maxDt: 63 });
    expect(base.match.query).toEqual({ peaksPerSecond: 12, fanOut: 12, maxDt: 63 });
    expect(v.index).toEqual({ stopFraction: 0.1 });
    expect(applyVariantSpec('', base)).toEqual(base);
  });

  it('throws on an unknown key instead of running the default', () => {
    expect(() => applyVariantSpec('storeDT=50', defaults())).toThrow(/unknown variant key 'storeDT'/);
  });

  it('tells when the library must be fingerprinted again', () => {
    expect(storeDiffers(LANDMARK_PARAMS.store, applyVariantSpec('queryDt=50,shifts=2', defaults()).store)).toBe(false);
    expect(storeDiffers(LANDMARK_PARAMS.store, applyVariantSpec('storeFrameR=4', defaults()).store)).toBe(true);
  });

  it('builds the speed grid outward from 1', () => {
    expect(speedGrid(1 / 100, 0.02)).toEqual([1, 0.99, 1.01, 0.98, 1.02]);
  });
});
