/**
 * Real-music corpora for the audio benchmarks, taken from Debian data packages (all freely licensed game
 * soundtracks). A track's group is its soundtrack: tracks composed and produced together for one game share
 * instrumentation, production and style, which makes the soundtrack a reasonable "sounds alike" label for a
 * retrieval benchmark, and different soundtracks are clearly different styles:
 *
 * | group        | package(s)                                              | style                          | tracks |
 * |--------------|---------------------------------------------------------|--------------------------------|--------|
 * | wesnoth      | wesnoth-1.16-music (installed with the project)         | orchestral / folk, acoustic    | 41     |
 * | drascula     | drascula-music (bench only)                             | 90s adventure-game score       | 31     |
 * | warzone2100  | warzone2100-music (bench only)                          | electronic / ambient rock      | 30     |
 * | nexuiz       | nexuiz-music (bench only; Ogg files inside music.pk3)   | techno / industrial electronic | 18     |
 * | fretsonfire  | fretsonfire-songs-muldjord, -sectoid (bench only)       | metal / rock band mixes        | 8      |
 * | hedgewars    | hedgewars-data (bench only; Data/Music)                 | light game themes, several composers | 26 |
 * | mars         | marsshooter-data (bench only; audio/music, Obsidian Shell) | symphonic metal / rock      | 10     |
 * | asc          | asc-music (bench only)                                  | orchestral-electronic          | 3      |
 * | hyperrogue   | hyperrogue-music (bench only; music/)                   | ambient / chiptune-orchestral  | 17     |
 * | singularity  | singularity-music (bench only; one composer)            | ambient electronic / piano     | 16     |
 * | colobot      | colobot-common-sounds (bench only; music/)              | space ambient / electronic rock | 21    |
 * | supertux     | supertux-data (bench only; music/, several composers)   | bright game themes, chiptune   | 51     |
 * | ufoai-crystan, ufoai-psymong, ufoai-marine | ufoai-music (bench only; 0music.pk3, one group per composer prefix; other composers left out) | orchestral / electronic / rock | 14, 15, 8 |
 * | planetblupi  | planetblupi-music-ogg (bench only)                      | light orchestral, 10 min loops | 10     |
 *
 * Added in session 10 (2026-11-26; Debian 12 "bookworm" main, versions in docs/musicnn.md), one group per package:
 *
 * | group            | package(s) (all bench only)                                   | style                          | tracks |
 * |------------------|---------------------------------------------------------------|--------------------------------|--------|
 * | etr              | extremetuxracer-data (music/)                                 | light electronic / pop themes  | 10     |
 * | xmoto            | xmoto-data (Textures/Musics)                                  | electronic / rock              | 7      |
 * | pingus           | pingus-data (data/music: tracker modules .it/.s3m)            | tracker music                  | 20     |
 * | neverball        | neverball-data (bgm/)                                         | light electronic               | 8      |
 * | blobwars         | blobwars-data (music/, Ogg files without extension)           | electronic / trance            | 15     |
 * | megaglest        | megaglest-data (menu music + one per megapack faction)        | orchestral / ethnic            | 9      |
 * | freedroidrpg     | freedroidrpg-data (sound/music)                               | electronic / ambient           | 16     |
 * | naev             | naev-data (dat/snd/music)                                     | space orchestral / electronic  | 54     |
 * | flare            | flare-game (mods/fantasycore/music)                           | fantasy orchestral             | 12     |
 * | warmux           | warmux-data (music/, ingame + menu)                           | light acoustic / comic         | 13     |
 * | supertuxkart     | supertuxkart-data (data/music; sped-up `*_fast`/`*_f` copies left out) | bright game themes    | 31     |
 * | widelands        | widelands-data (data/music)                                   | orchestral / folk              | 31     |
 * | 0ad              | 0ad-data (audio/music of mods/public/public.zip; Omri Lahav)  | historical orchestral / ethnic | 61     |
 * | fillets          | fillets-ng-data (music/)                                      | calm electronic / ambient      | 15     |
 * | btanks           | btanks-data (data/tunes)                                      | electronic / chiptune          | 8      |
 * | enigma           | enigma-data (music/game, music/menu)                          | calm acoustic / ragtime        | 9      |
 * | lordsawar        | lordsawar-data (music/, the one-second bless.ogg left out)    | orchestral fanfares            | 6      |
 * | unknown-horizons | unknown-horizons (content/audio/music)                        | orchestral / folk              | 15     |
 *
 * All are in Debian main (DFSG-free: GPL-2+/GPL-3+, CC-BY(-SA) 3.0/4.0, Expat or public domain per each
 * package's /usr/share/doc/<package>/copyright). Install the bench-only packages with
 *   apt-get install -y drascula-music warzone2100-music nexuiz-music fretsonfire-songs-muldjord \
 *     fretsonfire-songs-sectoid hedgewars-data marsshooter-data asc-music hyperrogue-music singularity-music \
 *     colobot-common-sounds supertux-data ufoai-music planetblupi-music-ogg
 * and those of session 10 with
 *   apt-get install -y --no-install-recommends extremetuxracer-data xmoto-data pingus-data neverball-data blobwars-data \
 *     megaglest-data freedroidrpg-data naev-data flare-game warmux-data supertuxkart-data widelands-data 0ad-data \
 *     fillets-ng-data btanks-data enigma-data lordsawar-data unknown-horizons
 * Missing packages are skipped with a warning. Fretsonfire ships stems; only the full mix `song.ogg` is used.
 * Drascula's per-language folders hold the same files as `audio/`; only `audio/` is used.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { decodeToPcm, UndecodableAudioError, type DecodedAudio } from '@polyphony/analysis-worker/engine';

/** One benchmark track. */
export interface CorpusTrack {
  path: string;
  /** Soundtrack the track belongs to. */
  group: string;
  /** Short unique name, `<group>/<file stem>`. */
  name: string;
}

/** Directory with the Wesnoth 1.16 music (Debian package wesnoth-1.16-music). */
export const WESNOTH_MUSIC_DIR = '/usr/share/games/wesnoth/1.16/data/core/music';

/** Scratch directory of the benchmarks (extracted archives, transcodes). */
export const BENCH_SCRATCH_DIR = join(tmpdir(), 'polyphony-audio-bench');

function listFiles(dir: string, pattern: RegExp, recursive = false): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) {
      if (recursive) out.push(...listFiles(full, pattern, true));
    } else if (pattern.test(entry)) out.push(full);
  }
  return out;
}

function stem(path: string): string {
  return basename(path).replace(/\.[^.]+$/, '');
}

/** The 41 Wesnoth tracks, sorted by file name. */
export function wesnothTracks(): CorpusTrack[] {
  return listFiles(WESNOTH_MUSIC_DIR, /\.ogg$/).map((path) => ({ path, group: 'wesnoth', name: `wesnoth/${stem(path)}` }));
}

/**
 * Extracts a zip archive (pk3) once into the scratch directory with python3's zipfile; '' when it fails.
 * @param prefix when given, only the members whose path starts with it are extracted (0 A.D.'s archive is 3 GB).
 */
function extractZip(archive: string, name: string, prefix = ''): string {
  const target = join(BENCH_SCRATCH_DIR, name);
  if (!existsSync(join(target, '.done'))) {
    mkdirSync(target, { recursive: true });
    const script = 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [m for m in z.namelist() if m.startswith(sys.argv[3])]); open(sys.argv[2] + "/.done", "w")';
    const r = spawnSync('python3', ['-c', script, archive, target, prefix], { stdio: 'inherit' });
    if (r.status !== 0) return '';
  }
  return target;
}

/** UFO:AI tracks of one composer (file-name prefix) from ufoai-music's 0music.pk3. */
function ufoaiTracks(prefix: RegExp): string[] {
  const pk3 = '/usr/share/games/ufoai/base/0music.pk3';
  if (!existsSync(pk3)) return [];
  const dir = extractZip(pk3, 'ufoai');
  return dir ? listFiles(join(dir, 'music'), prefix) : [];
}

/** 0 A.D.'s soundtrack (audio/music of 0ad-data's public.zip). */
function zeroAdTracks(): string[] {
  const zip = '/usr/share/games/0ad/mods/public/public.zip';
  if (!existsSync(zip)) return [];
  const dir = extractZip(zip, '0ad', 'audio/music/');
  return dir ? listFiles(join(dir, 'audio', 'music'), /\.ogg$/) : [];
}

/** Extracts nexuiz's music.pk3 (a zip) once into the scratch directory with python3's zipfile. */
function nexuizTracks(): string[] {
  const pk3 = '/usr/share/games/nexuiz/data/music.pk3';
  if (!existsSync(pk3)) return [];
  const target = join(BENCH_SCRATCH_DIR, 'nexuiz');
  if (!existsSync(join(target, 'sound', 'cdtracks'))) {
    mkdirSync(target, { recursive: true });
    const r = spawnSync('python3', ['-c', 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])', pk3, target], { stdio: 'inherit' });
    if (r.status !== 0) return [];
  }
  return listFiles(join(target, 'sound', 'cdtracks'), /\.ogg$/);
}

/**
 * The 16 groups of the corpus up to session 9 (2026-11-26, 320 tracks): every figure of docs/musicnn.md before
 * session 10 is on these. `BENCH_CORPUS=session9` restricts loadCorpus to them, which reproduces those figures.
 */
export const SESSION9_GROUPS: readonly string[] = [
  'wesnoth', 'drascula', 'warzone2100', 'nexuiz', 'fretsonfire', 'hedgewars', 'mars', 'asc', 'hyperrogue', 'singularity',
  'colobot', 'supertux', 'ufoai-crystan', 'ufoai-psymong', 'ufoai-marine', 'planetblupi',
];

/**
 * All available corpus tracks, grouped by soundtrack, in a fixed order; only SESSION9_GROUPS when the environment
 * sets BENCH_CORPUS=session9.
 * @param log receives one line per missing corpus.
 */
export function loadCorpus(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): CorpusTrack[] {
  const only = process.env.BENCH_CORPUS === 'session9' ? SESSION9_GROUPS : undefined;
  // Listed lazily: a group left out by BENCH_CORPUS is not read (0 A.D.'s is a zip extraction).
  const groups: Array<[string, () => string[]]> = [
    ['wesnoth', () => listFiles(WESNOTH_MUSIC_DIR, /\.ogg$/)],
    ['drascula', () => listFiles('/usr/share/scummvm/drascula/audio', /\.ogg$/)],
    ['warzone2100', () => listFiles('/usr/share/games/warzone2100/music', /\.opus$/, true)],
    ['nexuiz', () => nexuizTracks()],
    ['fretsonfire', () => listFiles('/usr/share/games/fretsonfire/data/songs', /^song\.ogg$/, true)],
    ['hedgewars', () => listFiles('/usr/share/games/hedgewars/Data/Music', /\.ogg$/)],
    ['mars', () => listFiles('/usr/share/games/marsshooter/audio/music', /\.ogg$/)],
    ['asc', () => listFiles('/usr/share/games/asc/music', /\.mp3$/)],
    ['hyperrogue', () => listFiles('/usr/share/hyperrogue/music', /\.ogg$/)],
    ['singularity', () => listFiles('/usr/share/games/singularity/music', /\.ogg$/, true)],
    ['colobot', () => listFiles('/usr/share/games/colobot/music', /\.ogg$/)],
    ['supertux', () => listFiles('/usr/share/games/supertux2/music', /\.ogg$/, true)],
    ['ufoai-crystan', () => ufoaiTracks(/^Crystan-.*\.ogg$/)],
    ['ufoai-psymong', () => ufoaiTracks(/^Psymong.*\.ogg$/)],
    ['ufoai-marine', () => ufoaiTracks(/^Marine.*\.ogg$/)],
    ['planetblupi', () => listFiles('/usr/share/planetblupi/music', /\.ogg$/)],
    // Added in session 10 (2026-11-26); names of the groups above are unchanged, so their split is too.
    ['etr', () => listFiles('/usr/share/games/etr/music', /\.ogg$/)],
    ['xmoto', () => listFiles('/usr/share/games/xmoto/Textures/Musics', /\.ogg$/)],
    ['pingus', () => listFiles('/usr/share/games/pingus/data/music', /\.(it|s3m)$/)],
    ['neverball', () => listFiles('/usr/share/games/neverball/bgm', /\.ogg$/)],
    ['blobwars', () => listFiles('/usr/share/games/blobwars/music', /^[^.]+$/)],
    ['megaglest', () => [...listFiles('/usr/share/games/megaglest/data/core/menu/music', /\.ogg$/), ...listFiles('/usr/share/games/megaglest/techs/megapack/factions', /\.ogg$/, true).filter((f) => basename(dirname(f)) === 'music')]],
    ['freedroidrpg', () => listFiles('/usr/share/freedroidrpg/data/sound/music', /\.ogg$/)],
    ['naev', () => listFiles('/usr/share/naev/dat/snd/music', /\.ogg$/)],
    ['flare', () => listFiles('/usr/share/games/flare/mods/fantasycore/music', /\.ogg$/)],
    ['warmux', () => listFiles('/usr/share/games/warmux/music', /\.ogg$/, true)],
    // SuperTuxKart's `*_fast` / `*_f` files are sped-up copies of other tracks (near-duplicates): left out.
    ['supertuxkart', () => listFiles('/usr/share/games/supertuxkart/data/music', /\.ogg$/).filter((f) => !/_(fast|f)\.ogg$/.test(f))],
    ['widelands', () => listFiles('/usr/share/games/widelands/data/music', /\.ogg$/)],
    ['0ad', () => zeroAdTracks()],
    ['fillets', () => listFiles('/usr/share/games/fillets-ng/music', /\.ogg$/)],
    ['btanks', () => listFiles('/usr/share/games/btanks/data/tunes', /\.ogg$/)],
    ['enigma', () => listFiles('/usr/share/games/enigma/music', /\.ogg$/, true)],
    // bless.ogg is a one-second jingle, not a track.
    ['lordsawar', () => listFiles('/usr/share/games/lordsawar/music', /\.ogg$/).filter((f) => basename(f) !== 'bless.ogg')],
    ['unknown-horizons', () => listFiles('/usr/share/unknown-horizons/content/audio/music', /\.ogg$/, true)],
  ];
  const tracks: CorpusTrack[] = [];
  for (const [group, list] of groups) {
    if (only && !only.includes(group)) continue;
    const paths = list();
    if (paths.length === 0) {
      log(`corpus ${group}: not installed, skipped`);
      continue;
    }
    for (const path of paths) {
      const name =
        group === 'fretsonfire'
          ? `${group}/${basename(dirname(path))}`
          : group === 'supertux' || group === 'singularity'
            ? `${group}/${basename(dirname(path))}-${stem(path)}`
            : `${group}/${stem(path)}`;
      tracks.push({ path, group, name });
    }
  }
  return tracks;
}

/**
 * The fixed held-out split of the retrieval benchmarks: a track is held out when the first byte of the
 * sha256 of its name (`<group>/<stem>`) is odd. The rule depends on the name alone, so the split does not move
 * when packages are added or when only part of the corpus is cached, and it was fixed before any tuning on
 * the grown corpus (2026-11-25). Every constant and choice is fitted on the other tracks (the tuning part).
 */
export function isHeldOut(name: string): boolean {
  return (createHash('sha256').update(name).digest()[0]! & 1) === 1;
}

/** Tracks in round-robin order over the groups, so a partly filled cache covers every soundtrack. */
export function interleaved(tracks: CorpusTrack[]): CorpusTrack[] {
  const groups = new Map<string, CorpusTrack[]>();
  for (const t of tracks) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  const out: CorpusTrack[] = [];
  for (let i = 0; out.length < tracks.length; i++) for (const g of groups.values()) if (g[i]) out.push(g[i]!);
  return out;
}

/**
 * Decodes one corpus track, or undefined (logged as skipped) when ffmpeg cannot decode it: some
 * packages ship broken files (e.g. three hyperrogue-music tracks), which the benchmarks leave out.
 * Any other failure (ffmpeg missing, I/O) is thrown.
 */
export async function decodeCorpusTrack(t: CorpusTrack, log: (line: string) => void, position: string): Promise<DecodedAudio | undefined> {
  try {
    return await decodeToPcm(t.path);
  } catch (err) {
    if (!(err instanceof UndecodableAudioError)) throw err;
    log(`${position} ${t.name}: undecodable, skipped`);
    return undefined;
  }
}
