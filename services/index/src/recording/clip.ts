import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Request } from 'express';
import busboy from 'busboy';
import { LANDMARK_PARAMS, rmsDb } from '@polyphony/landmarks';
import { AppError, ValidationError } from '@polyphony/platform';

/** Clip limits in force (contracts RECORDING_LIMITS by default; README "Search by recording" names the settings). */
export interface ClipLimits {
  /** Largest multipart body, bytes (413 `payload_too_large` above). */
  maxUploadBytes: number;
  /** Longest decoded clip, seconds (413 `clip_too_long` above). */
  maxClipSeconds: number;
  /** Shortest decoded clip, seconds (400 `clip_too_short` below). */
  minClipSeconds: number;
}

/** Level a clip is normalised to before matching, dBFS RMS (a typical mastered song's loudness). */
export const CLIP_TARGET_LEVEL_DB = -20;
/** A clip whose RMS level is below this (dBFS) is silence: 400 `clip_silent` (a muted or absent microphone). */
export const CLIP_SILENCE_DB = -70;
/** ffmpeg gets this long to decode a clip, ms (a 60 s clip of any browser format decodes in well under a second). */
export const CLIP_DECODE_TIMEOUT_MS = 30_000;

/** A received upload: the clip in a temporary file and the text fields of the form. */
export interface ReceivedClip {
  file: string;
  bytes: number;
  fields: Record<string, string>;
  /** Removes the temporary directory. */
  cleanup(): Promise<void>;
}

/**
 * Reads a `multipart/form-data` request (busboy) into a temporary file: the file field `clip` (one file) and up to
 * 10 short text fields. The caller is authenticated before this runs (the service's pipeline checks the signed
 * identity before any handler), so no unauthenticated body is read.
 * @throws AppError 415 `unsupported_media_type` for a body that is not multipart; 413 `payload_too_large` when the
 *   declared length or the bytes read exceed `limits.maxUploadBytes`; ValidationError 400 (`bad_clip`) for a
 *   malformed form or one without a `clip` file
 */
export async function receiveClip(req: Request, limits: ClipLimits, tempRoot = tmpdir()): Promise<ReceivedClip> {
  if (!req.is('multipart/form-data')) throw new AppError('unsupported_media_type', 'Send the clip as multipart/form-data with the file field "clip"', 415);
  const declared = Number(req.headers['content-length']);
  // The form's own bytes (boundaries, headers, n_results) add well under 64 kB to the file.
  if (Number.isFinite(declared) && declared > limits.maxUploadBytes + 64 * 1024) throw tooLarge(limits);
  const dir = await mkdtemp(path.join(tempRoot, 'polyphony-clip-'));
  const cleanup = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'clip');
  try {
    const received = await new Promise<{ bytes: number; fields: Record<string, string>; sawClip: boolean }>((resolve, reject) => {
      let bb: busboy.Busboy;
      try {
        bb = busboy({ headers: req.headers, limits: { fileSize: limits.maxUploadBytes, files: 1, fields: 10, fieldSize: 1024, parts: 12 } });
      } catch (err) {
        reject(new AppError('bad_clip', `Malformed multipart body: ${(err as Error).message}`, 400));
        return;
      }
      const fields: Record<string, string> = {};
      let bytes = 0;
      let sawClip = false;
      let failed = false;
      let writing: Promise<void> = Promise.resolve();
      const fail = (err: Error) => {
        if (failed) return;
        failed = true;
        req.unpipe(bb);
        req.resume();
        reject(err);
      };
      bb.on('field', (name, value) => {
        fields[name] = value;
      });
      bb.on('file', (name, stream) => {
        if (name !== 'clip' || sawClip) {
          stream.resume();
          return;
        }
        sawClip = true;
        const out = createWriteStream(file);
        writing = new Promise<void>((done, bad) => {
          out.on('finish', done);
          out.on('error', bad);
        });
        stream.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        stream.on('limit', () => fail(tooLarge(limits)));
        stream.pipe(out);
      });
      bb.on('error', (err: Error) => fail(new AppError('bad_clip', `Malformed multipart body: ${err.message}`, 400)));
      bb.on('close', () => {
        if (failed) return;
        writing.then(
          () => resolve({ bytes, fields, sawClip }),
          (err: Error) => fail(err),
        );
      });
      req.on('aborted', () => fail(new AppError('bad_clip', 'The upload was aborted', 400)));
      req.pipe(bb);
    });
    if (!received.sawClip) throw new AppError('bad_clip', 'The form has no file field "clip"', 400);
    if (received.bytes === 0) throw new AppError('bad_clip', 'The clip is empty', 400);
    return { file, bytes: received.bytes, fields: received.fields, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

function tooLarge(limits: ClipLimits): AppError {
  return new AppError('payload_too_large', `The clip is larger than ${limits.maxUploadBytes} bytes (RECORDING_MAX_UPLOAD_BYTES)`, 413);
}

/** A decoded, level-normalised clip. */
export interface DecodedClip {
  /** Mono PCM at 16 kHz, normalised to CLIP_TARGET_LEVEL_DB RMS (peaks clipped to [-1, 1]). */
  pcm: Float32Array;
  seconds: number;
  /** RMS level as received, dBFS. */
  levelDb: number;
}

/**
 * Decodes a clip with ffmpeg (any container and codec it reads: WebM/Opus, Ogg, MP4/AAC, WAV, MP3, FLAC) to mono
 * 16 kHz float PCM, at most `limits.maxClipSeconds` plus a little (to tell a too-long clip), then normalises its
 * level to CLIP_TARGET_LEVEL_DB RMS.
 * @throws AppError 400 `bad_clip` (ffmpeg cannot decode it, or no audio), 400 `clip_too_short`, 400 `clip_silent`
 *   (RMS under CLIP_SILENCE_DB), 413 `clip_too_long`
 */
export async function decodeClip(file: string, limits: ClipLimits, ffmpegPath = 'ffmpeg'): Promise<DecodedClip> {
  const rate = LANDMARK_PARAMS.sampleRateHz;
  const maxSamples = Math.ceil((limits.maxClipSeconds + 0.25) * rate);
  const args = ['-nostdin', '-v', 'error', '-i', file, '-vn', '-ac', '1', '-ar', String(rate), '-t', String(limits.maxClipSeconds + 0.25), '-f', 'f32le', '-'];
  const raw = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn(ffmpegPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), CLIP_DECODE_TIMEOUT_MS);
    child.stdout.on('data', (c: Buffer) => {
      if (size < maxSamples * 4) chunks.push(c);
      size += c.length;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-2000);
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`ffmpeg could not be started: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(Buffer.concat(chunks));
      const last = stderr.trim().split('\n').pop() ?? '';
      reject(new AppError('bad_clip', `The clip could not be decoded as audio${signal ? ` (decoder stopped after ${CLIP_DECODE_TIMEOUT_MS / 1000} s)` : ''}${last ? `: ${last}` : ''}`, 400));
    });
  });
  const n = Math.min(maxSamples, Math.floor(raw.length / 4));
  if (n === 0) throw new AppError('bad_clip', 'The clip holds no audio', 400);
  const pcm = new Float32Array(n);
  for (let i = 0; i < n; i++) pcm[i] = raw.readFloatLE(i * 4);
  const seconds = n / rate;
  if (seconds > limits.maxClipSeconds) throw new AppError('clip_too_long', `The clip is longer than ${limits.maxClipSeconds} s (RECORDING_MAX_CLIP_SECONDS)`, 413);
  if (seconds < limits.minClipSeconds) throw new AppError('clip_too_short', `The clip is ${seconds.toFixed(1)} s long; at least ${limits.minClipSeconds} s are needed`, 400);
  const levelDb = rmsDb(pcm);
  if (!(levelDb >= CLIP_SILENCE_DB)) throw new AppError('clip_silent', 'The clip is silent (check the microphone)', 400);
  const gain = Math.pow(10, (CLIP_TARGET_LEVEL_DB - levelDb) / 20);
  for (let i = 0; i < n; i++) pcm[i] = Math.max(-1, Math.min(1, pcm[i]! * gain));
  return { pcm, seconds, levelDb };
}

/** `n_results` of the form, validated like the query parameter. @throws ValidationError */
export function formInt(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ValidationError(`${name} must be an integer between ${min} and ${max}`);
  return n;
}
