/**
 * Raw Chromaprint fingerprints as `fpcalc -raw` prints them (an integer list). Their comparison
 * (`chromaprintAlignment`: best bit agreement over small offsets) is the shared one in @polyphony/vectors.
 */

/**
 * Parses the output of `fpcalc -raw` (lines `DURATION=<s>` and `FINGERPRINT=<i,i,...>`) or a bare
 * comma-separated list into an Int32Array (unsigned values are stored as their signed 32-bit twin).
 * @throws RangeError when there is no fingerprint or an item is not an integer.
 */
export function parseFpcalcRaw(output: string): Int32Array {
  const line = output.split(/\r?\n/).find((l) => l.startsWith('FINGERPRINT=')) ?? (output.includes('=') ? undefined : output);
  if (line === undefined) throw new RangeError('no FINGERPRINT= line in fpcalc output');
  const body = line.startsWith('FINGERPRINT=') ? line.slice('FINGERPRINT='.length) : line;
  const items = body.trim() === '' ? [] : body.trim().split(',');
  if (items.length === 0) throw new RangeError('empty fingerprint');
  const out = new Int32Array(items.length);
  items.forEach((s, i) => {
    if (!/^-?\d+$/.test(s.trim())) throw new RangeError(`fingerprint item ${i} is not an integer: ${JSON.stringify(s)}`);
    out[i] = Number(s.trim()) | 0;
  });
  return out;
}
