/**
 * Chromaprint fingerprints through the system `fpcalc` (Debian package libchromaprint-tools). Their
 * comparison (`chromaprintAlignment`, `chromaprintSimilarity`) is the shared one in @polyphony/vectors.
 *
 * A raw Chromaprint fingerprint is a sequence of 32-bit words, one per ~0.1238 s of audio (the default
 * algorithm 2 frames 11025 Hz audio with a hop of 4096/3 samples); each bit is the sign of one of 16 learned
 * filters on the chroma image, 2 bits per filter (L. Lukas, "How does Chromaprint work?", 2011,
 * https://oxygene.sk/2011/01/how-does-chromaprint-work/). Two prints of the same recording compare by
 * aligning them and counting equal bits, i.e. 32 minus the popcount of the XOR of aligned words; this is
 * how AcoustID's server and pg_acoustid's `acoustid_compare` score matches (bit error rate over the
 * aligned overlap), and what the reference implementation's identity gate uses (best alignment over a
 * small offset range, minimum overlap, agreement threshold 0.95).
 */
import { AppError } from '@polyphony/platform';
import { runTool } from './tool-process';

/** fpcalc could not fingerprint the file. HTTP 422 if surfaced; callers usually store no fingerprint. */
export class ChromaprintError extends AppError {
  constructor(
    readonly filePath: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super('chromaprint_failed', `Cannot fingerprint ${filePath}: ${reason}`, 422, { reason }, options);
  }
}

/** A raw Chromaprint fingerprint. */
export interface Chromaprint {
  /** Duration fpcalc reports for the whole file, seconds (from the container/decoder, rounded to 0.01 s). */
  durationSeconds: number;
  /** Raw fingerprint words (unsigned 32-bit), one per ~0.1238 s of the first `lengthSeconds` of audio. */
  fingerprint: Uint32Array;
}

/** Options of {@link computeChromaprint}. */
export interface ChromaprintOptions {
  /** Seconds of audio fingerprinted from the start (fpcalc -length). Default 120 (fpcalc's default). */
  lengthSeconds?: number;
  /** Kill fpcalc after this long, ms. Default 120000 (the reference implementation's timeout). */
  timeoutMs?: number;
  /** fpcalc executable. Default 'fpcalc' on PATH. */
  fpcalcPath?: string;
}

/**
 * Runs `fpcalc -raw -json -length <s> <file>` and parses its output.
 * fpcalc 1.5 exits with status 3 after "Error decoding audio frame (End of file)" although the print is
 * complete; any run that printed a well-formed non-empty fingerprint is therefore accepted.
 * @throws ChromaprintError when fpcalc is missing, times out, or prints no usable fingerprint.
 */
export function computeChromaprint(filePath: string, options: ChromaprintOptions = {}): Promise<Chromaprint> {
  const lengthSeconds = options.lengthSeconds ?? 120;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const args = ['-raw', '-json', '-length', String(lengthSeconds), filePath];
  const out: Buffer[] = [];
  return runTool<Chromaprint>({
    command: options.fpcalcPath ?? 'fpcalc',
    args,
    name: 'fpcalc',
    timeoutMs,
    onStdout: (c) => out.push(c),
    onClose(code, _signal, lastError) {
      let parsed: Chromaprint;
      try {
        parsed = parseFpcalcJson(Buffer.concat(out).toString('utf8'));
      } catch (e) {
        return { fail: lastError ?? `unreadable fpcalc output (exit ${code})`, cause: e };
      }
      if (parsed.fingerprint.length === 0) return { fail: lastError ?? 'empty fingerprint' };
      return { ok: parsed };
    },
    error: (reason, cause) => new ChromaprintError(filePath, reason, { cause }),
  });
}

/**
 * Parses fpcalc's `-raw -json` output `{"duration": 74.08, "fingerprint": [147046359, ...]}`.
 * @throws Error when the text is not that shape or a word is not an integer in [-2^31, 2^32).
 */
export function parseFpcalcJson(text: string): Chromaprint {
  const value = JSON.parse(text) as { duration?: unknown; fingerprint?: unknown };
  if (typeof value.duration !== 'number' || !Array.isArray(value.fingerprint)) throw new Error('not an fpcalc -raw -json document');
  const words = value.fingerprint as unknown[];
  const fingerprint = new Uint32Array(words.length);
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (typeof w !== 'number' || !Number.isInteger(w) || w < -0x80000000 || w > 0xffffffff) throw new Error(`bad fingerprint word at ${i}`);
    fingerprint[i] = w >>> 0; // accepts fpcalc -signed output too
  }
  return { durationSeconds: value.duration, fingerprint };
}
