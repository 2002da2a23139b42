/**
 * In-memory implementation of {@link IdentityCandidateSource} plus the writes the decision implies,
 * for unit tests and benchmarks. Not for production: nothing is persisted and there is no locking
 * (single-threaded JavaScript makes each method atomic, which is enough to exercise the conflict
 * path of resolveAndCommit).
 *
 * Embeddings are packed into one growable Float32Array (800 bytes per song), signatures into a
 * {@link BandedSignatureIndex}; 1,000,000 songs take about 0.9 GB.
 */
import { BandLayout, BandedSignatureIndex } from './bands';
import type { CommitOutcome, IdentityDecision, IncomingTrack } from './decide';
import type { CandidateQuery, IdentityCandidate, IdentityCandidateSource, TrackFile } from './identity-candidate-source';
import { EMBEDDING_DIMENSION, computeSignature } from './signature';

/** A song as the in-memory store keeps it. */
interface StoredSong {
  readonly canonicalId: string;
  /** Row in the packed embedding array, or -1 for a song without a valid 200-d embedding. */
  readonly row: number;
  /** Embedding of a song that is not 200-d (kept as given). */
  readonly rawEmbedding: ArrayLike<number> | null;
  readonly durationSeconds: number | null;
  readonly chromaprint: ArrayLike<number> | null;
  readonly files: TrackFile[];
}

/** New song for {@link InMemoryIdentityStore.insertSong}. */
export interface NewSong {
  readonly canonicalId: string;
  readonly embedding: ArrayLike<number>;
  readonly durationSeconds: number | null;
  readonly chromaprint?: ArrayLike<number> | null;
  readonly files: readonly TrackFile[];
}

/** In-memory catalogue: candidate source and write side of the identity decision. */
export class InMemoryIdentityStore implements IdentityCandidateSource {
  private readonly songs = new Map<string, StoredSong>();
  private readonly index: BandedSignatureIndex;
  private readonly entryIds: string[] = [];
  private embeddings: Float32Array;
  private rows = 0;
  /** Calls of findBySignatureBands (for tests and benchmarks). */
  lookups = 0;
  /** Stored songs examined by those calls (shared at least one band). */
  scanned = 0;

  /**
   * @param layout band layout the store indexes with; queries with another layout id are refused.
   * @param initialCapacity songs to allocate for up front.
   */
  constructor(layout: BandLayout, initialCapacity = 1024) {
    this.index = new BandedSignatureIndex(layout, initialCapacity);
    this.embeddings = new Float32Array(Math.max(16, initialCapacity) * EMBEDDING_DIMENSION);
  }

  /** Number of songs. */
  get size(): number {
    return this.songs.size;
  }

  /** {@inheritDoc IdentityCandidateSource.findBySignatureBands} */
  async findBySignatureBands(query: CandidateQuery): Promise<IdentityCandidate[]> {
    if (query.layoutId !== this.index.layout.id) throw new Error(`store indexed with layout ${this.index.layout.id}, query uses ${query.layoutId}`);
    const result = this.index.query(query.signature, query.maxHamming);
    this.lookups++;
    this.scanned += result.scanned;
    return result.entries.map((e) => this.toCandidate(this.songs.get(this.entryIds[e] as string) as StoredSong));
  }

  /** {@inheritDoc IdentityCandidateSource.findTakenIds} */
  async findTakenIds(ids: readonly string[]): Promise<ReadonlySet<string>> {
    return new Set(ids.filter((id) => this.songs.has(id)));
  }

  /** A stored song as the decision sees it, or undefined. */
  get(canonicalId: string): IdentityCandidate | undefined {
    const song = this.songs.get(canonicalId);
    return song ? this.toCandidate(song) : undefined;
  }

  /** Whether a canonical id is used. */
  has(canonicalId: string): boolean {
    return this.songs.has(canonicalId);
  }

  /** Largest band bucket of each band (skew diagnostic; linear in the number of songs). */
  largestBandBuckets(): number[] {
    return this.index.largestBuckets();
  }

  /** Every stored canonical id, in insertion order. */
  ids(): string[] {
    return [...this.songs.keys()];
  }

  /**
   * Stores a new song; returns 'conflict' when the id is already used. Songs with a valid signature
   * are indexed; others are only stored.
   */
  insertSong(song: NewSong): CommitOutcome {
    if (this.songs.has(song.canonicalId)) return 'conflict';
    let row = -1;
    let signable = computeSignature(song.embedding).ok;
    if (signable) {
      if ((this.rows + 1) * EMBEDDING_DIMENSION > this.embeddings.length) {
        const grown = new Float32Array(this.embeddings.length * 2);
        grown.set(this.embeddings);
        this.embeddings = grown;
      }
      // Index the signature of the stored float32 copy: that is what candidates are judged on.
      this.embeddings.set(song.embedding, this.rows * EMBEDDING_DIMENSION);
      const stored = computeSignature(this.embeddings.subarray(this.rows * EMBEDDING_DIMENSION, (this.rows + 1) * EMBEDDING_DIMENSION));
      if (stored.ok) {
        row = this.rows++;
        this.index.add(stored.code);
        this.entryIds.push(song.canonicalId);
      } else signable = false;
    }
    this.songs.set(song.canonicalId, {
      canonicalId: song.canonicalId,
      row,
      rawEmbedding: signable ? null : Array.from(song.embedding),
      durationSeconds: song.durationSeconds,
      chromaprint: song.chromaprint ?? null,
      files: [...song.files],
    });
    return 'committed';
  }

  /** Adds a provider file to an existing song; 'conflict' when the song does not exist. */
  attachFile(canonicalId: string, file: TrackFile): CommitOutcome {
    const song = this.songs.get(canonicalId);
    if (!song) return 'conflict';
    if (!song.files.some((f) => f.serverId === file.serverId && f.providerId === file.providerId)) song.files.push(file);
    return 'committed';
  }

  /** Applies a decision for a track: insert a new song or attach its files to the merge target. */
  commit(decision: IdentityDecision, track: IncomingTrack): CommitOutcome {
    if (decision.kind === 'new') {
      return this.insertSong({
        canonicalId: decision.canonicalId,
        embedding: track.embedding,
        durationSeconds: track.durationSeconds,
        chromaprint: track.chromaprint,
        files: track.files,
      });
    }
    if (!this.songs.has(decision.canonicalId)) return 'conflict';
    for (const file of track.files) this.attachFile(decision.canonicalId, file);
    return 'committed';
  }

  private toCandidate(song: StoredSong): IdentityCandidate {
    return {
      canonicalId: song.canonicalId,
      embedding: song.row >= 0 ? this.embeddings.subarray(song.row * EMBEDDING_DIMENSION, (song.row + 1) * EMBEDDING_DIMENSION) : (song.rawEmbedding as ArrayLike<number>),
      durationSeconds: song.durationSeconds,
      chromaprint: song.chromaprint,
      files: song.files,
    };
  }
}
