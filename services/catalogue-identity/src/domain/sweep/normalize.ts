/**
 * Normalisation of the keys the sweep matches on (spec: Setup-time alignment 1; tier details from
 * the reference implementation's matcher, reference-implementation.md section 5).
 */
import { HASH, hash64 } from './compact';

/**
 * Common mount prefixes stripped from the front of a path, longest first so `/mnt/media/music/`
 * wins over `/mnt/`. Two servers that mount one library at different roots then agree.
 */
export const MOUNT_PREFIXES = [
  '/mnt/media/music/',
  '/media/music/',
  '/mnt/music/',
  '/mnt/data/',
  '/data/music/',
  '/home/music/',
  '/storage/music/',
  '/opt/music/',
  '/nas/music/',
  '/library/music/',
  '/srv/music/',
  '/volume1/music/',
  '/share/music/',
  '/media/',
  '/mnt/',
  '/data/',
  '/music/',
  '/share/',
  '/volume1/',
  '/srv/',
];

/**
 * Normalised file path: `file://` URLs decoded, backslashes to slashes, a Windows drive letter
 * dropped, lower case, the first matching mount prefix stripped, no leading slash. Empty for
 * nothing usable.
 */
export function normalizePath(raw: string | undefined | null): string {
  if (!raw) return '';
  let p = raw.trim();
  if (/^file:\/\//i.test(p)) {
    p = p.replace(/^file:\/\/(localhost)?/i, '');
    try {
      p = decodeURIComponent(p);
    } catch {
      /* keep the raw text */
    }
  }
  p = p.replace(/\\/g, '/').replace(/^[a-z]:\//i, '/').replace(/\/{2,}/g, '/').toLowerCase();
  if (!p.startsWith('/')) p = `/${p}`;
  for (const prefix of MOUNT_PREFIXES) {
    if (p.startsWith(prefix)) {
      p = p.slice(prefix.length - 1);
      break;
    }
  }
  return p.replace(/^\/+/, '');
}

/**
 * The last `components` path components of a normalised path (default 3), or '' when the path has
 * fewer than 2 components: a bare file name is too weak to match on.
 */
export function pathTail(normalized: string, components = 3): string {
  const parts = normalized.split('/').filter(Boolean);
  if (parts.length < 2) return '';
  return parts.slice(-components).join('/');
}

/** Words that mark a version of a recording inside brackets: `(Remastered 2011)`, `[Live]`, `(feat. X)`. */
export const NOISE_WORDS = ['remaster', 'remastered', 'feat', 'ft', 'featuring', 'explicit', 'clean', 'radio edit', 'radio version', 'single version', 'album version', 'extended', 'club mix', 'acoustic', 'live', 'demo', 'version', 'mix'];
const NOISE_GROUP = new RegExp(`[(\\[][^)\\]]*\\b(${NOISE_WORDS.map((w) => w.replace(/ /g, '\\s+')).join('|')})\\b[^)\\]]*[)\\]]`, 'gi');

/** Lower case, accents folded, whitespace collapsed (the exact-metadata tier). */
export function exactMeta(s: string | undefined | null): string {
  return (s ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Metadata normalised for noise words: bracketed groups containing a noise word removed, a leading
 * "the " dropped, punctuation to spaces, whitespace collapsed.
 */
export function normMeta(s: string | undefined | null): string {
  return exactMeta((s ?? '').replace(NOISE_GROUP, ' '))
    .replace(/^the\s+/, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Key of the exact-metadata tier: title, artist and album all required. */
export function exactMetaKey(title?: string | null, artist?: string | null, album?: string | null): string {
  const t = exactMeta(title);
  const a = exactMeta(artist);
  const b = exactMeta(album);
  return t && a && b ? `${t}\u0001${a}\u0001${b}` : '';
}

/** Key of the noise-normalised metadata tier. */
export function normMetaKey(title?: string | null, artist?: string | null, album?: string | null): string {
  const t = normMeta(title);
  const a = normMeta(artist);
  const b = normMeta(album);
  return t && a && b ? `${t}\u0001${a}\u0001${b}` : '';
}

/**
 * 53-bit form of compact.ts `hash64` (its two 32-bit lanes combined) as one JS number, for a single Map
 * key. Collision odds at 500k keys: about 500k^2 / 2^54 = 1.4e-5.
 */
export function hashKey(key: string): number {
  hash64(key);
  return HASH[0]! * 0x200000 + (HASH[1]! & 0x1fffff);
}

/** `<disc>-<track>` at the start of a file name: `1-03 Song.flac`, `02.11_title.mp3` (reference section 5). */
const DISC_TRACK = /^(\d+)[\s._-]+(\d+)/;

/**
 * The (disc, track) pair parsed from the file name of a path, as `"<disc>.<track>"` with leading zeros
 * dropped (`"1.3"` for `01-03 Song.flac`), or '' when the name does not start with two numbers. Used
 * only to break ties between metadata matches (reference implementation section 5: "ties on a
 * metadata key are broken by the (disc, track) parsed from the filename", `^(\d+)[\s._-]+(\d+)`).
 */
export function discTrackOf(path: string | undefined | null): string {
  if (!path) return '';
  const p = path.replace(/\\/g, '/');
  const name = p.slice(p.lastIndexOf('/') + 1);
  const m = DISC_TRACK.exec(name);
  return m ? `${Number(m[1])}.${Number(m[2])}` : '';
}
