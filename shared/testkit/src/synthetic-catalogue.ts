import { MSD_TAGS, OTHER_FEATURE_LABELS, formatLabelScores, moodVectorOf, type LearnedFeatures, type SnapshotTrack } from '@polyphony/contracts';
import { SeededRandom } from '@polyphony/vectors';

/** One generated song (without server mappings). */
export interface SyntheticSong {
  itemId: string;
  title: string;
  artist: string;
  album: string;
  albumArtist: string;
  /** Raw 200-d embedding (not normalised). */
  vector: Float32Array;
  durationSeconds: number;
  year: number;
}

export interface SyntheticSongOptions {
  /** Songs per artist (default 20). */
  songsPerArtist?: number;
  /** Songs per album (default 10). */
  songsPerAlbum?: number;
  dim?: number;
  seed?: number;
  /** Spread of an album around its artist, relative to the artist centre's per-coordinate sd 1 (default 0.35). */
  albumSpread?: number;
  /** Spread of a song around its album (default 0.45). */
  songSpread?: number;
}

/** Canonical-looking id of song i: `fp_4` + 50 hex digits. */
export function syntheticItemId(i: number): string {
  return `fp_4${i.toString(16).padStart(50, '0')}`;
}

/**
 * Deterministic synthetic catalogue with artist structure, for tests and benchmarks: song i belongs to
 * artist floor(i / songsPerArtist) and album floor(i / songsPerAlbum); its embedding is
 * artist centre (N(0, 1) per coordinate) + album offset (N(0, albumSpread²)) + song noise (N(0, songSpread²)),
 * so songs of one artist are mutual neighbours and artists differ. Titles are `Song <i>`, artists
 * `Artist <a>`, albums `Album <b>`. Generated lazily, one song at a time: O(dim) memory per song kept.
 */
export function* syntheticSongs(count: number, options: SyntheticSongOptions = {}): Generator<SyntheticSong> {
  const perArtist = options.songsPerArtist ?? 20;
  const perAlbum = options.songsPerAlbum ?? 10;
  const dim = options.dim ?? 200;
  const seed = options.seed ?? 7;
  const albumSpread = options.albumSpread ?? 0.35;
  const songSpread = options.songSpread ?? 0.45;
  let artistCentre = new Float32Array(dim);
  let albumCentre = new Float32Array(dim);
  let currentArtist = -1;
  let currentAlbum = -1;
  for (let i = 0; i < count; i++) {
    const a = Math.floor(i / perArtist);
    const b = Math.floor(i / perAlbum);
    if (a !== currentArtist) {
      const rng = new SeededRandom((seed * 1_000_003 + a) >>> 0);
      artistCentre = new Float32Array(dim);
      for (let d = 0; d < dim; d++) artistCentre[d] = rng.nextGaussian();
      currentArtist = a;
    }
    if (b !== currentAlbum) {
      const rng = new SeededRandom((seed * 7_919 + b * 31 + 17) >>> 0);
      albumCentre = new Float32Array(dim);
      for (let d = 0; d < dim; d++) albumCentre[d] = artistCentre[d]! + albumSpread * rng.nextGaussian();
      currentAlbum = b;
    }
    const rng = new SeededRandom((seed * 104_729 + i * 13 + 5) >>> 0);
    const vector = new Float32Array(dim);
    for (let d = 0; d < dim; d++) vector[d] = albumCentre[d]! + songSpread * rng.nextGaussian();
    yield {
      itemId: syntheticItemId(i),
      title: `Song ${i}`,
      artist: `Artist ${a}`,
      album: `Album ${b}`,
      albumArtist: `Artist ${a}`,
      vector,
      durationSeconds: 120 + (i % 240),
      year: 1970 + (b % 50),
    };
  }
}

/**
 * Deterministic learned features of synthetic song `i` (what the analysis worker stores for a MusiCNN-analysed
 * song): 50 MSD tag probabilities (uniform in [0, 1) cubed, so a few tags stand out), `moodVector` = their top
 * TOP_N_MOODS as the reference string (`rock:0.512,...`, ~60-75 bytes) and the six `otherFeatures`
 * (`danceable:0.123,...`, ~95 bytes): about as many bytes a song as real analysed songs carry. MTT tags absent.
 */
export function syntheticLearned(i: number, seed = 7): LearnedFeatures {
  const rng = new SeededRandom((seed * 65_537 + i * 29 + 11) >>> 0);
  const msd = MSD_TAGS.map(() => Math.round(rng.nextFloat() ** 3 * 1000) / 1000);
  const other = OTHER_FEATURE_LABELS.map((l) => [l, rng.nextFloat()] as const);
  return { tagsModel: 'synthetic-musicnn', tags: { msd }, moodVector: moodVectorOf(msd), otherFeatures: formatLabelScores(other) };
}

/**
 * A snapshot row of the catalogue's internal API for a song and its mapping rows; `learned` = the song's learned
 * features (absent = not analysed with the learned model, as the synthetic catalogue was before).
 */
export function toSnapshotTrack(song: SyntheticSong, mappings: SnapshotTrack['mappings'], learned?: LearnedFeatures): SnapshotTrack {
  return {
    itemId: song.itemId,
    embedding: f32Bytes(song.vector).toString('base64'),
    embedderVersion: 'synthetic-1',
    title: song.title,
    artist: song.artist,
    album: song.album,
    albumArtist: song.albumArtist,
    year: song.year,
    rating: null,
    durationSeconds: song.durationSeconds,
    tempo: 120,
    key: 'C',
    scale: 'major',
    energy: -12,
    ...(learned ? { learned } : {}),
    mappings,
  };
}

/** The little-endian bytes of a float32 array (no copy): how the index stores vectors. */
function f32Bytes(arr: Float32Array): Buffer {
  return Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength);
}
