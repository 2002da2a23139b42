/** Records of the index's catalogue copy (`index.tracks`) as the domain sees them (store: track.repository.ts). */

/** Display metadata of one track (what result rows show). */
export interface TrackMeta {
  itemId: string;
  title: string;
  artist: string;
  album: string | null;
  albumArtist: string | null;
  /** Reference `mood_vector`: top MSD tags as `label:prob,...`; null without the learned model. */
  moodVector: string | null;
  /** Reference `other_features`: `danceable:p,...,sad:p`; null without the learned model. */
  otherFeatures: string | null;
  /** Tempo in BPM (analysis DSP); null when unknown. Filled by `metadata()`. */
  tempo?: number | null;
  /** Energy as the analysis stores it (`energy` column); null when unknown. Filled by `metadata()`. */
  energy?: number | null;
}

/** Everything stored about a track except its vector. */
export interface TrackDetails extends TrackMeta {
  year: number | null;
  rating: number | null;
  duration: number | null;
  tempo: number | null;
  key: string | null;
  scale: string | null;
  energy: number | null;
  fp: string;
  embedderVersion: string;
  /** Learned-model id of the mood fields (null = analysed without it). */
  tagsModel: string | null;
  hasLyrics: boolean;
  /** The stored tag bytes (`index.tracks.tags`: 100 bytes, MSD then MTT probabilities x 255; MTT zeros when absent); null without tags. */
  tags: Buffer | null;
}

/** A search hit before availability filtering. */
export interface SearchHit {
  itemId: string;
  score: number;
}

/** Subsets of the catalogue a search can be limited to (see `search`). */
export type TrackFilter = 'learned' | 'lyrics' | 'neural';

/** One batch of the vector stream feeding a build, in canonical-id order (byte order, COLLATE "C"). */
export interface TrackVectorBatch {
  ids: string[];
  /** Folded artist key and display name of each track. */
  artistKeys: string[];
  artistNames: string[];
  /** ids.length * dim raw float32 values. */
  vectors: Float32Array;
}
