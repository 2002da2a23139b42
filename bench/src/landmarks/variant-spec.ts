import { LANDMARK_PARAMS, type Density, type LandmarkIndexOptions, type MatchOptions } from '@polyphony/landmarks';

/** Speeds 1, 1 -+ step, 1 -+ 2 step... out to +-max (the matcher's grid order), for the `step=` variant. */
export function speedGrid(step: number, max: number): number[] {
  const out = [1];
  for (let k = 1; k * step <= max + 1e-9; k++) out.push(+(1 - k * step).toFixed(6), +(1 + k * step).toFixed(6));
  return out;
}

/** Settings of one bench variant: the stored side's density, the matcher's options (query density included) and the index's. */
export interface VariantSettings {
  store: Density;
  match: MatchOptions;
  index: LandmarkIndexOptions;
}

/**
 * Applies a variant spec (`key=value` pairs, comma-separated) on top of `from` (not modified): stored side
 * storePeaks/storeFan/storeDt/storeBand (Hz, `lo-hi`)/storeBinR/storeFrameR (the peak neighbourhood, +-bins and
 * +-frames); query side queryPeaks/queryFan/queryDt/queryBinR/queryFrameR; matcher shifts, exit (`votes/lead`),
 * speeds1, gridShifts, resample, together, refine, step (grid step in %); index stop (stop-list fraction).
 * Unknown keys throw, so a misspelt variant is not silently the default.
 */
export function applyVariantSpec(spec: string, from: VariantSettings): VariantSettings {
  const sd: Density = { ...from.store };
  const mo: MatchOptions = { ...from.match };
  const io: LandmarkIndexOptions = { ...from.index };
  const qd = (): Density => (mo.query = mo.query === from.match.query || mo.query === undefined ? { ...(mo.query ?? LANDMARK_PARAMS.query) } : mo.query);
  const bin = LANDMARK_PARAMS.sampleRateHz / LANDMARK_PARAMS.nFft;
  for (const kv of spec.split(',').filter(Boolean)) {
    const [k, v = ''] = kv.split('=') as [string, string?];
    const n = Number(v);
    if (k === 'storePeaks') sd.peaksPerSecond = n;
    else if (k === 'storeFan') sd.fanOut = n;
    else if (k === 'storeDt') sd.maxDt = n;
    else if (k === 'storeBand') [sd.peakMinBin, sd.peakMaxBin] = v.split('-').map((hz) => Math.round(Number(hz) / bin)) as [number, number];
    else if (k === 'storeBinR') sd.peakBinRadius = n;
    else if (k === 'storeFrameR') sd.peakFrameRadius = n;
    else if (k === 'queryPeaks') qd().peaksPerSecond = n;
    else if (k === 'queryFan') qd().fanOut = n;
    else if (k === 'queryDt') qd().maxDt = n;
    else if (k === 'queryBinR') qd().peakBinRadius = n;
    else if (k === 'queryFrameR') qd().peakFrameRadius = n;
    else if (k === 'shifts') mo.shifts = n;
    else if (k === 'stop') io.stopFraction = n;
    else if (k === 'exit') [mo.earlyExitVotes, mo.earlyExitLead] = v.split('/').map(Number) as [number, number];
    else if (k === 'speeds1') mo.speeds = [1];
    else if (k === 'gridShifts') mo.gridShifts = n;
    else if (k === 'resample') mo.gridResample = v !== '0';
    else if (k === 'together') mo.gridTogether = v !== '0';
    else if (k === 'refine') mo.gridRefine = n;
    else if (k === 'step') mo.speeds = speedGrid(n / 100, 0.02);
    else throw new Error(`unknown variant key '${k}' in '${spec}'`);
  }
  return { store: sd, match: mo, index: io };
}

/** Whether two stored densities extract different landmarks (the library must then be fingerprinted again). */
export function storeDiffers(a: Density, b: Density): boolean {
  const keys: Array<keyof Density> = ['peaksPerSecond', 'fanOut', 'maxDt', 'peakMinBin', 'peakMaxBin', 'peakBinRadius', 'peakFrameRadius'];
  return keys.some((k) => a[k] !== b[k]);
}
