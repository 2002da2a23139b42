/**
 * The music a fake media server serves. One catalogue can back several fakes at once (the same
 * songs on Jellyfin and Plex, say); each fake renders it with its own ids, field names and units.
 *
 * Two builders: {@link wesnothTracks} (41 real Ogg Vorbis files from the Debian package
 * `wesnoth-1.16-music`, so downloads carry real audio) and {@link syntheticCatalogue} (n generated
 * tracks, materialised on demand, for 100k-scale enumeration tests).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { readOggVorbisInfo } from './ogg';

/** One track as the catalogue knows it (provider-neutral; fakes map it to their own shapes). */
export interface FakeTrack {
  /** Catalogue-level id (stable, provider-neutral). Each fake derives its own provider id from it. */
  id: string;
  title: string;
  /** Track artist. */
  artist: string;
  /** Catalogue-level artist id (fakes derive provider artist ids from it). */
  artistId: string;
  album: string;
  /** Catalogue-level album id. */
  albumId: string;
  albumArtist: string;
  albumArtistId: string;
  year?: number;
  /** 0-5 stars; undefined when unrated. */
  rating?: number;
  /** Duration in seconds (float, exact for real files). */
  durationSeconds: number;
  /** Absolute path the server reports for the file (may be virtual: `/srv/music/...`). */
  path: string;
  /** Absolute path of a real file whose bytes are served on download. */
  audioFile: string;
  /** Catalogue-level library id (one of `FakeCatalogue.libraries[].id`). */
  library: string;
  playCount: number;
  /** ISO-8601 UTC; undefined when never played. */
  lastPlayed?: string;
  /** Plain-text lyrics; undefined when the track has none. */
  lyrics?: string;
  trackNumber?: number;
  discNumber?: number;
  genre?: string;
  /** ISO-8601 UTC time the server "added" the file. */
  addedAt: string;
}

/** A library / music folder; `path` is the root under which its tracks' `path`s live. */
export interface FakeLibrary { id: string; name: string; path: string }

/** An album grouping, derived from the tracks. `trackIndices` are catalogue indices in disc/track order. */
export interface FakeAlbum {
  id: string;
  name: string;
  artist: string;
  artistId: string;
  year?: number;
  library: string;
  trackIndices: number[];
}

/** An artist (track artists and album artists), derived from the tracks. */
export interface FakeArtist { id: string; name: string }

/** Read access to a catalogue; see the module doc. Indices are 0-based and stable. */
export interface FakeCatalogue {
  readonly libraries: readonly FakeLibrary[];
  /** Number of tracks. */
  readonly size: number;
  /** Incremented by every `update`; lets fakes invalidate caches (sort orders, folder trees). */
  readonly version: number;
  /** The track at `index` (0 <= index < size). Throws RangeError otherwise. */
  trackAt(index: number): FakeTrack;
  /** Index of the track with catalogue id `id`, or undefined. */
  indexOfId(id: string): number | undefined;
  /** The track with catalogue id `id`, or undefined. */
  byId(id: string): FakeTrack | undefined;
  /** Changes one track in place (e.g. give it lyrics or plays); persists for later reads. */
  update(id: string, patch: Partial<Omit<FakeTrack, 'id'>>): FakeTrack;
  /** Track indices inside the given libraries (all when `libraryIds` is empty/undefined), ascending. Cached. */
  indicesIn(libraryIds?: readonly string[]): readonly number[];
  /** Albums, in first-seen order. Computed once. */
  albums(): readonly FakeAlbum[];
  /** Artists (track and album artists), in first-seen order. Computed once. */
  artists(): readonly FakeArtist[];
  [Symbol.iterator](): Iterator<FakeTrack>;
}

/** 32-bit FNV-1a hash of a string: deterministic pseudo-random source for synthetic values. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Lower-case, dash-separated slug (ASCII letters and digits only). */
export function slug(text: string): string {
  return text.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'x';
}

/** Deterministic listening stats for a track id: about 3 in 4 tracks played, 2 in 3 rated. */
function statsFor(id: string): { playCount: number; lastPlayed?: string; rating?: number } {
  const h = fnv1a(id);
  const playCount = h % 4 === 0 ? 0 : ((h >>> 3) % 25) + 1;
  const rating = h % 3 === 0 ? undefined : ((h >>> 5) % 5) + 1;
  if (playCount === 0) return { playCount, rating };
  // Played within the 120 days before 2026-06-01, at a whole second.
  const lastPlayedMs = Date.UTC(2026, 5, 1) - ((h >>> 7) % (120 * 86400)) * 1000;
  return { playCount, rating, lastPlayed: new Date(lastPlayedMs).toISOString() };
}

/** Base class for both builders: albums/artists/library indices derived from `trackAt`. */
abstract class BaseCatalogue implements FakeCatalogue {
  abstract readonly libraries: readonly FakeLibrary[];
  abstract readonly size: number;
  protected abstract makeTrack(index: number): FakeTrack;
  abstract indexOfId(id: string): number | undefined;

  private readonly patched = new Map<number, FakeTrack>();
  version = 0;
  private albumCache?: FakeAlbum[];
  private artistCache?: FakeArtist[];
  private readonly libCache = new Map<string, number[]>();

  /** True when `update` replaced the track at `index`. */
  protected isPatched(index: number): boolean {
    return this.patched.has(index);
  }

  trackAt(index: number): FakeTrack {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw new RangeError(`track index ${index} out of range`);
    return this.patched.get(index) ?? this.makeTrack(index);
  }

  byId(id: string): FakeTrack | undefined {
    const i = this.indexOfId(id);
    return i === undefined ? undefined : this.trackAt(i);
  }

  update(id: string, patch: Partial<Omit<FakeTrack, 'id'>>): FakeTrack {
    const i = this.indexOfId(id);
    if (i === undefined) throw new Error(`unknown track ${id}`);
    const next = { ...this.trackAt(i), ...patch };
    this.patched.set(i, next);
    this.version++;
    this.albumCache = undefined;
    this.artistCache = undefined;
    this.libCache.clear();
    return next;
  }

  indicesIn(libraryIds?: readonly string[]): readonly number[] {
    const key = libraryIds && libraryIds.length ? [...libraryIds].sort().join('\u0000') : '';
    let hit = this.libCache.get(key);
    if (!hit) {
      const wanted = key ? new Set(libraryIds) : undefined;
      hit = [];
      for (let i = 0; i < this.size; i++) if (!wanted || wanted.has(this.libraryAt(i))) hit.push(i);
      this.libCache.set(key, hit);
    }
    return hit;
  }

  /** Library of track `index`; subclasses may answer without materialising the track. */
  protected libraryAt(index: number): string {
    return this.trackAt(index).library;
  }

  albums(): readonly FakeAlbum[] {
    if (!this.albumCache) {
      const byId = new Map<string, FakeAlbum>();
      // One read per track; the disc/track order key is kept so the sort touches no track again.
      const order = new Float64Array(this.size);
      for (let i = 0; i < this.size; i++) {
        const t = this.trackAt(i);
        order[i] = (t.discNumber ?? 1) * 1e6 + (t.trackNumber ?? 0);
        let a = byId.get(t.albumId);
        if (!a) {
          a = { id: t.albumId, name: t.album, artist: t.albumArtist, artistId: t.albumArtistId, year: t.year, library: t.library, trackIndices: [] };
          byId.set(t.albumId, a);
        }
        a.trackIndices.push(i);
      }
      for (const a of byId.values()) a.trackIndices.sort((x, y) => (order[x] as number) - (order[y] as number) || x - y);
      this.albumCache = [...byId.values()];
    }
    return this.albumCache;
  }

  artists(): readonly FakeArtist[] {
    if (!this.artistCache) {
      const byId = new Map<string, FakeArtist>();
      for (let i = 0; i < this.size; i++) {
        const t = this.trackAt(i);
        if (!byId.has(t.artistId)) byId.set(t.artistId, { id: t.artistId, name: t.artist });
        if (!byId.has(t.albumArtistId)) byId.set(t.albumArtistId, { id: t.albumArtistId, name: t.albumArtist });
      }
      this.artistCache = [...byId.values()];
    }
    return this.artistCache;
  }

  *[Symbol.iterator](): Iterator<FakeTrack> {
    for (let i = 0; i < this.size; i++) yield this.trackAt(i);
  }
}

/** A catalogue over an explicit array of tracks (tracks are stored, so `trackAt` returns the same object). */
export class ArrayCatalogue extends BaseCatalogue {
  readonly size: number;
  private readonly index = new Map<string, number>();
  constructor(readonly libraries: readonly FakeLibrary[], private readonly list: FakeTrack[]) {
    super();
    this.size = list.length;
    list.forEach((t, i) => {
      if (this.index.has(t.id)) throw new Error(`duplicate track id ${t.id}`);
      this.index.set(t.id, i);
    });
  }
  protected makeTrack(index: number): FakeTrack {
    return this.list[index] as FakeTrack;
  }
  indexOfId(id: string): number | undefined {
    return this.index.get(id);
  }
}

/** Where Debian installs the Wesnoth soundtrack (`dpkg -L wesnoth-1.16-music`). */
export const WESNOTH_MUSIC_DIR = '/usr/share/games/wesnoth/1.16/data/core/music';

/** The 41 `.ogg` files of the Debian package, absolute paths sorted by name. Uses `dpkg -L`, then the known folder. */
export function wesnothFiles(): string[] {
  let files: string[] = [];
  try {
    files = execFileSync('dpkg', ['-L', 'wesnoth-1.16-music'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.endsWith('.ogg'));
  } catch {
    if (existsSync(WESNOTH_MUSIC_DIR)) files = readdirSync(WESNOTH_MUSIC_DIR).filter((f) => f.endsWith('.ogg')).map((f) => join(WESNOTH_MUSIC_DIR, f));
  }
  if (files.length === 0) throw new Error('wesnoth-1.16-music is not installed (apt-get install wesnoth-1.16-music)');
  return files.sort();
}

/** Options for {@link wesnothTracks}. */
export interface WesnothOptions {
  /** Root of the virtual paths the servers report (default `/srv/music`). */
  pathRoot?: string;
}

/** Title from a file name: `the_king_is_dead.ogg` → `The King Is Dead`. */
export function titleFromFileName(file: string): string {
  return basename(file, extname(file))
    .split(/[_\-\s]+/)
    .filter(Boolean)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
}

/**
 * The Wesnoth soundtrack as a catalogue of 41 real Ogg Vorbis tracks.
 *
 * Metadata comes from the files' own Vorbis comments (TITLE, ARTIST, ALBUM, album_artist, DATE,
 * track, disc, GENRE), which is what a real server scanning them reports; where a tag is missing
 * the title comes from the file name and the artist is "Wesnoth". Albums group by the ALBUM tag;
 * untagged files form the album "Wesnoth Extras". Two libraries: "Music" (the OST album, 39 tracks)
 * and "Extras" (2 tracks). Durations are exact (Ogg granule / rate). Plays, ratings and last-played
 * times are deterministic per file. Reported paths are virtual (`<pathRoot>/<lib>/<album artist>/<album>/<file>`);
 * `audioFile` is the real file.
 * @throws Error when the Debian package is not installed.
 */
export function wesnothTracks(opts: WesnothOptions = {}): ArrayCatalogue {
  const root = opts.pathRoot ?? '/srv/music';
  const libraries: FakeLibrary[] = [
    { id: 'lib-music', name: 'Music', path: `${root}/music` },
    { id: 'lib-extras', name: 'Extras', path: `${root}/extras` },
  ];
  const infos = wesnothFiles().map((file) => ({ file, info: readOggVorbisInfo(file), mtime: statSync(file).mtime }));
  const albumArtistOf = new Map<string, string>();
  for (const { info } of infos) {
    const album = info.tags.ALBUM;
    const aa = info.tags.ALBUM_ARTIST ?? info.tags.ALBUMARTIST;
    if (album && aa && !albumArtistOf.has(album)) albumArtistOf.set(album, aa);
  }
  const tracks = infos.map(({ file, info, mtime }): FakeTrack => {
    const t = info.tags;
    const album = t.ALBUM ?? 'Wesnoth Extras';
    const library = t.ALBUM ? libraries[0]! : libraries[1]!;
    const artist = t.ARTIST ?? 'Wesnoth';
    const albumArtist = t.ALBUM_ARTIST ?? t.ALBUMARTIST ?? albumArtistOf.get(album) ?? 'Wesnoth';
    const id = `wes-${slug(basename(file, '.ogg'))}`;
    const year = t.DATE ? Number.parseInt(t.DATE, 10) : undefined;
    const trackNumber = t.TRACK ?? t.TRACKNUMBER;
    const disc = t.DISC ?? t.DISCNUMBER;
    return {
      id,
      title: t.TITLE ?? titleFromFileName(file),
      artist,
      artistId: `ar-${slug(artist)}`,
      album,
      albumId: `al-${slug(album)}`,
      albumArtist,
      albumArtistId: `ar-${slug(albumArtist)}`,
      year: Number.isFinite(year) ? year : undefined,
      durationSeconds: info.durationSeconds,
      path: `${library.path}/${albumArtist}/${album}/${basename(file)}`,
      audioFile: file,
      library: library.id,
      trackNumber: trackNumber ? Number.parseInt(trackNumber, 10) : undefined,
      discNumber: disc ? Number.parseInt(disc, 10) : undefined,
      genre: t.GENRE,
      addedAt: new Date(Math.floor(mtime.getTime() / 1000) * 1000).toISOString(),
      ...statsFor(id),
    };
  });
  return new ArrayCatalogue(libraries, tracks);
}

/** Options for {@link syntheticCatalogue}. */
export interface SyntheticOptions {
  /** Number of libraries, tracks spread by album (default 2). */
  libraries?: number;
  /** Tracks per album (default 10). */
  tracksPerAlbum?: number;
  /** Albums per artist (default 5). */
  albumsPerArtist?: number;
  /** Real file served for every track's download (default: the smallest Wesnoth file, else none checked). */
  audioFile?: string;
  /** Every k-th track (index % k === 0) gets lyrics (default 7; 0 = none). */
  lyricsEvery?: number;
  /** Root of the virtual paths (default `/srv/music`). */
  pathRoot?: string;
}

/** Generated catalogue: tracks are computed from the index on each read, so 100k tracks cost ~nothing until read. */
export class SyntheticCatalogue extends BaseCatalogue {
  readonly libraries: readonly FakeLibrary[];
  private readonly perAlbum: number;
  private readonly perArtist: number;
  private readonly audioFile: string;
  private readonly lyricsEvery: number;

  constructor(readonly size: number, opts: SyntheticOptions = {}) {
    super();
    if (!Number.isInteger(size) || size < 0) throw new RangeError('size must be a non-negative integer');
    const root = opts.pathRoot ?? '/srv/music';
    const libs = Math.max(1, opts.libraries ?? 2);
    this.libraries = Array.from({ length: libs }, (_, i) => ({ id: `lib-syn-${i + 1}`, name: `Synthetic ${i + 1}`, path: `${root}/synthetic-${i + 1}` }));
    this.perAlbum = Math.max(1, opts.tracksPerAlbum ?? 10);
    this.perArtist = Math.max(1, opts.albumsPerArtist ?? 5);
    this.lyricsEvery = opts.lyricsEvery ?? 7;
    this.audioFile = opts.audioFile ?? defaultSyntheticAudio();
  }

  indexOfId(id: string): number | undefined {
    const m = /^syn-(\d+)$/.exec(id);
    if (!m) return undefined;
    const i = Number(m[1]);
    return i < this.size ? i : undefined;
  }

  /** Library by arithmetic (albums round-robin over libraries) unless the track was updated. */
  protected override libraryAt(i: number): string {
    if (this.isPatched(i)) return this.trackAt(i).library;
    return (this.libraries[Math.floor(i / this.perAlbum) % this.libraries.length] as FakeLibrary).id;
  }

  protected makeTrack(i: number): FakeTrack {
    const albumNo = Math.floor(i / this.perAlbum);
    const artistNo = Math.floor(albumNo / this.perArtist);
    const library = this.libraries[albumNo % this.libraries.length] as FakeLibrary;
    const id = `syn-${i}`;
    const h = fnv1a(id);
    const artist = `Synthetic Artist ${artistNo}`;
    const album = `Synthetic Album ${albumNo}`;
    const trackNumber = (i % this.perAlbum) + 1;
    const title = `Synthetic Song ${i}`;
    return {
      id,
      title,
      artist,
      artistId: `ar-syn-${artistNo}`,
      album,
      albumId: `al-syn-${albumNo}`,
      albumArtist: artist,
      albumArtistId: `ar-syn-${artistNo}`,
      year: 1960 + (albumNo % 65),
      durationSeconds: 90 + (h % 420) + ((h >>> 9) % 1000) / 1000,
      path: `${library.path}/${artist}/${album}/${String(trackNumber).padStart(2, '0')} - ${title}.ogg`,
      audioFile: this.audioFile,
      library: library.id,
      trackNumber,
      discNumber: 1,
      genre: SYNTHETIC_GENRES[albumNo % SYNTHETIC_GENRES.length],
      addedAt: new Date(Date.UTC(2024, 0, 1) + (albumNo % 700) * 86400_000).toISOString(),
      lyrics: this.lyricsEvery > 0 && i % this.lyricsEvery === 0 ? `Synthetic lyrics for song ${i}\nSecond line ${i}` : undefined,
      ...statsFor(id),
    };
  }
}

const SYNTHETIC_GENRES = ['Rock', 'Jazz', 'Classical', 'Electronic', 'Folk'] as const;

function defaultSyntheticAudio(): string {
  const candidate = join(WESNOTH_MUSIC_DIR, 'victory.ogg');
  return candidate;
}

/**
 * `n` generated tracks (`syn-0` … `syn-<n-1>`), grouped 10 per album and 5 albums per artist,
 * albums spread round-robin over the libraries. Cheap: O(1) memory until tracks are read or
 * `update`d. Every download serves `opts.audioFile` (default: Wesnoth `victory.ogg`).
 */
export function syntheticCatalogue(n: number, opts: SyntheticOptions = {}): SyntheticCatalogue {
  return new SyntheticCatalogue(n, opts);
}
