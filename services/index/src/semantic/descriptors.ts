/**
 * The tempo and energy words of text search ("slow", "fast", "loud", "quiet"): a song's score in [0, 1] from its
 * tempo (BPM) or energy (dB). One definition for the query channel and for the postings that list songs by it.
 */
import type { Descriptor } from './vocabulary';

/** BPM ramps of the tempo words: "slow" = 1 at <= 70 BPM, 0 at >= 120; "fast" = 0 at <= 100, 1 at >= 150. */
export const SLOW_BPM: [number, number] = [70, 120];
export const FAST_BPM: [number, number] = [100, 150];

const ramp = (x: number, [a, b]: [number, number]) => Math.max(0, Math.min(1, (x - a) / (b - a)));

/**
 * Score of descriptor `d` for a row: tempo ramps (SLOW_BPM, FAST_BPM), energy scaled between the catalogue's 5th and
 * 95th percentiles (`energyRange`, dB); 0 when the row's tempo or energy is unknown (NaN).
 * @param tempo BPM per row; @param energy dB per row (only the one `d` reads is used)
 */
export function descriptorScore(d: Descriptor, tempo: Float32Array, energy: Float32Array, energyRange: readonly [number, number]): (row: number) => number {
  const [e5, e95] = energyRange;
  switch (d) {
    case 'slow':
      return (row) => (Number.isFinite(tempo[row]!) ? 1 - ramp(tempo[row]!, SLOW_BPM) : 0);
    case 'fast':
      return (row) => (Number.isFinite(tempo[row]!) ? ramp(tempo[row]!, FAST_BPM) : 0);
    case 'loud':
      return (row) => (Number.isFinite(energy[row]!) && e95 > e5 ? ramp(energy[row]!, [e5, e95]) : 0);
    case 'quiet':
      return (row) => (Number.isFinite(energy[row]!) && e95 > e5 ? 1 - ramp(energy[row]!, [e5, e95]) : 0);
  }
}
