/**
 * Decoding of any audio file to mono float PCM with the system `ffmpeg`.
 *
 * Command: `ffmpeg -nostdin -v error -i <file> -vn -ac 1 -ar <rate> -flush_packets 0 -f f32le -` : ffmpeg downmixes
 * all channels to one (mean of the channels, as librosa's mono=True and the reference implementation do), resamples
 * with its default swresample filter, and writes little-endian float32 samples to stdout. `-flush_packets 0` lets
 * ffmpeg's output buffer fill (32 KiB writes) instead of writing every decoded frame (1.5 KiB): the same bytes in
 * ~600 pipe reads instead of ~15,000 for a 5-minute track, which cut this process's CPU for the read from ~250 ms
 * to ~80 ms per track (measured on Wesnoth's battle.ogg, 2026-11-26). The stream is copied
 * chunk by chunk into a Float32Array that grows by 1.5x, so no list of Buffers is ever concatenated and the
 * peak memory is about 2.5x the final PCM size at worst.
 */
import { endianness } from 'node:os';
import { AppError } from '@polyphony/platform';
import { runTool } from './tool-process';

/** The file could not be turned into PCM (missing, not audio, corrupt, or no samples). HTTP 422 if surfaced. */
export class UndecodableAudioError extends AppError {
  constructor(
    readonly filePath: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super('undecodable_audio', `Cannot decode audio ${filePath}: ${reason}`, 422, { reason }, options);
  }
}

/** Mono PCM. */
export interface DecodedAudio {
  /** Mono samples in [-1, 1] (float32, ffmpeg's scaling). May be a view on a larger buffer. */
  samples: Float32Array;
  /** Samples per second of `samples`, Hz. */
  sampleRate: number;
  /**
   * Length of the whole decoded stream, seconds (total decoded samples / sampleRate). Never capped: when
   * `maxStoredSeconds` cut the kept PCM short, this still counts every sample ffmpeg produced.
   */
  durationSeconds: number;
  /** True when `samples` holds only the first `maxStoredSeconds` of the stream. */
  truncated: boolean;
}

/** Options of {@link decodeToPcm}. */
export interface DecodeOptions {
  /** Output sample rate, Hz. Default 16000 (what the default embedder expects). */
  sampleRate?: number;
  /**
   * Keep at most this many seconds of PCM in memory (the rest is decoded and counted for the duration but
   * not stored). Default 3600 s (230 MB at 16 kHz); bounds memory on hour-long mixes.
   */
  maxStoredSeconds?: number;
  /** Kill ffmpeg after this long, ms. Default 300000. */
  timeoutMs?: number;
  /** ffmpeg executable. Default 'ffmpeg' on PATH. */
  ffmpegPath?: string;
}

const INITIAL_CAPACITY_SECONDS = 240;
/** f32le bytes can be viewed as a Float32Array directly only on little-endian hosts. */
const HOST_IS_LITTLE_ENDIAN = endianness() === 'LE';

/**
 * Decodes `filePath` to mono float32 PCM at `sampleRate` (default 16 kHz).
 * @returns samples, sample rate and the full decoded duration in seconds.
 * @throws UndecodableAudioError when ffmpeg cannot be started, exits non-zero, times out, or yields no samples
 *   (`reason` carries ffmpeg's last error line or the cause).
 */
export function decodeToPcm(filePath: string, options: DecodeOptions = {}): Promise<DecodedAudio> {
  const sampleRate = options.sampleRate ?? 16000;
  const maxStoredSeconds = options.maxStoredSeconds ?? 3600;
  const timeoutMs = options.timeoutMs ?? 300_000;
  if (!Number.isInteger(sampleRate) || sampleRate < 1000 || sampleRate > 384000) {
    throw new RangeError(`sampleRate must be an integer in [1000, 384000] Hz, got ${sampleRate}`);
  }
  const maxStored = Math.max(1, Math.floor(maxStoredSeconds * sampleRate));
  const args = ['-nostdin', '-v', 'error', '-i', filePath, '-vn', '-ac', '1', '-ar', String(sampleRate), '-flush_packets', '0', '-f', 'f32le', '-'];

  let buffer = new Float32Array(Math.min(maxStored, INITIAL_CAPACITY_SECONDS * sampleRate));
  let stored = 0;
  let total = 0;
  // Bytes of a sample split across two chunks.
  const carry = Buffer.alloc(4);
  let carryLength = 0;

  function push(value: number): void {
    total++;
    if (stored >= maxStored) return;
    if (stored === buffer.length) {
      const grown = new Float32Array(Math.min(maxStored, Math.ceil(buffer.length * 1.5) + sampleRate));
      grown.set(buffer);
      buffer = grown;
    }
    buffer[stored++] = value;
  }

  return runTool<DecodedAudio>({
    command: options.ffmpegPath ?? 'ffmpeg',
    args,
    name: 'ffmpeg',
    timeoutMs,
    onStdout(chunk) {
      let pos = 0;
      if (carryLength > 0) {
        while (carryLength < 4 && pos < chunk.length) carry[carryLength++] = chunk[pos++]!;
        if (carryLength < 4) return;
        push(carry.readFloatLE(0));
        carryLength = 0;
      }
      const whole = Math.floor((chunk.length - pos) / 4);
      const needed = stored + whole;
      if (needed > buffer.length && stored < maxStored) {
        const grown = new Float32Array(Math.min(maxStored, Math.max(needed, Math.ceil(buffer.length * 1.5))));
        grown.set(buffer.subarray(0, stored));
        buffer = grown;
      }
      const room = Math.max(0, Math.min(whole, maxStored - stored));
      if (room > 0) {
        if (HOST_IS_LITTLE_ENDIAN && (chunk.byteOffset + pos) % 4 === 0) {
          buffer.set(new Float32Array(chunk.buffer, chunk.byteOffset + pos, room), stored);
        } else {
          for (let i = 0; i < room; i++) buffer[stored + i] = chunk.readFloatLE(pos + 4 * i);
        }
        stored += room;
      }
      total += whole;
      pos += whole * 4;
      while (pos < chunk.length) carry[carryLength++] = chunk[pos++]!;
    },
    onClose(code, signal, lastError) {
      if (code !== 0) return { fail: lastError ?? `ffmpeg exited with ${code ?? signal}` };
      if (total === 0) return { fail: lastError ? `no audio samples (${lastError})` : 'no audio samples' };
      return { ok: { samples: buffer.subarray(0, stored), sampleRate, durationSeconds: total / sampleRate, truncated: total > stored } };
    },
    error: (reason, cause) => new UndecodableAudioError(filePath, reason, { cause }),
  });
}
