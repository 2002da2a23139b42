/**
 * Pure parts of the Recording search page (no DOM; unit-tested in logic.test.ts): the recorder's container
 * choice, the level meter's dBFS, the countdown, and the text and links of a search result.
 */
import { trackLabel, type TrackLike } from './track-format';

/**
 * Containers MediaRecorder is asked for, best first: WebM/Opus (Chromium, Firefox), Ogg/Opus (Firefox), MP4/AAC
 * (Safari, iOS). All are decoded by the server's ffmpeg (RECORDING_CLIP_TYPES).
 */
export const RECORDER_TYPES = ['audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus', 'audio/mp4;codecs=mp4a.40.2', 'audio/mp4'] as const;

/** The first of RECORDER_TYPES the browser can record (`isTypeSupported`), or '' to let it choose. */
export function pickRecorderType(isTypeSupported: (t: string) => boolean): string {
  return RECORDER_TYPES.find((t) => isTypeSupported(t)) ?? '';
}

/** The media type without parameters (`audio/webm;codecs=opus` -> `audio/webm`) and a matching file name for the upload. */
export function clipFileOf(recordedType: string): { type: string; name: string } {
  const type = (recordedType.split(';')[0] ?? '').trim().toLowerCase() || 'audio/webm';
  const ext = type.includes('ogg') ? 'ogg' : type.includes('mp4') || type.includes('aac') || type.includes('m4a') ? 'm4a' : type.includes('wav') ? 'wav' : type.includes('mpeg') || type.includes('mp3') ? 'mp3' : 'webm';
  return { type, name: `clip.${ext}` };
}

/** Floor of the level meter, dBFS: anything quieter shows as empty (the server refuses clips below -70 dBFS as silent). */
export const METER_FLOOR_DB = -70;

/** RMS level of a block of samples in dBFS (full scale = 1.0), floored at METER_FLOOR_DB. */
export function rmsDbfs(samples: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  const rms = samples.length ? Math.sqrt(sum / samples.length) : 0;
  return rms > 0 ? Math.max(METER_FLOOR_DB, 20 * Math.log10(rms)) : METER_FLOOR_DB;
}

/** Meter position in [0, 1] for a level in dBFS (linear in dB from METER_FLOOR_DB to 0). */
export function meterFraction(db: number): number {
  return Math.min(1, Math.max(0, (db - METER_FLOOR_DB) / -METER_FLOOR_DB));
}

/** Whole seconds left of a `lengthSeconds` recording `elapsedMs` after it started (rounded up, never below 0). */
export function secondsLeft(lengthSeconds: number, elapsedMs: number): number {
  return Math.max(0, Math.ceil(lengthSeconds - elapsedMs / 1000));
}

/** Offset in a song as m:ss ("1:05"). */
export function fmtOffset(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** One result row of /api/recording_search/search (the fields the page shows). */
export interface RecordingRow extends TrackLike {
  score: number;
  votes: number;
  offset_seconds: number;
  identified: boolean;
  lead: number;
}

/** What the page says about a search answer: the identified song (first row, `identified`), or no match. */
export function describeResult(rows: RecordingRow[]): { identified: RecordingRow | null; headline: string; detail: string } {
  const top = rows[0];
  if (top?.identified) {
    return {
      identified: top,
      headline: trackLabel(top),
      detail: `${top.album ? `${top.album} · ` : ''}clip starts at ${fmtOffset(top.offset_seconds)} · ${top.votes} matching landmarks, ${top.lead} more than the next song · score ${top.score.toFixed(2)}`,
    };
  }
  return {
    identified: null,
    headline: 'No match',
    detail: top
      ? `No song of this server stands out (best candidate ${top.votes} matching landmarks, ${top.lead} ahead of the next). Record longer, closer to the speaker, or with less noise.`
      : 'No song of this server shares material with the clip.',
  };
}

/** Links from an identified song: Similar songs, a Song path starting from it, an Instant playlist around it. */
export function followUpLinks(t: TrackLike): { similar: string; path: string; playlist: string } {
  const label = trackLabel(t);
  return {
    similar: `#/similar?${new URLSearchParams({ item_id: t.item_id, label }).toString()}`,
    path: `#/path?${new URLSearchParams({ start_song_id: t.item_id, start_title: t.title ?? '', start_author: t.author ?? '' }).toString()}`,
    playlist: `#/chat?${new URLSearchParams({ prompt: `Songs like ${t.title ?? 'this song'}${t.author ? ` by ${t.author}` : ''}` }).toString()}`,
  };
}
