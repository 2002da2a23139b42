/**
 * PostgreSQL side of identity resolution (spec "Content identity", "Analysis across servers" 2-4):
 * the candidate source the domain decision reads (band lookup + evidence of each candidate) and the
 * transaction that writes the decision.
 *
 * Concurrency (issue 4: "two analysis workers resolving the same new content at the same moment get
 * one id; two different songs resolved at once never share one"):
 * 1. The transaction takes the catalogue write lock and the server's lock SHARED, then an EXCLUSIVE
 *    advisory lock on every band key of the track's signature (sorted; locks.ts). Any two tracks close
 *    enough to be candidates of each other share a band key, so their decisions run one after the
 *    other, and the second sees the first's committed song (READ COMMITTED: each statement sees the
 *    latest commits).
 * 2. Inside the locks it re-checks the provider file's mapping (a redelivered message resolved by
 *    another worker meanwhile answers with that id).
 * 3. New ids are unique by the primary key; an insert that finds its id taken (a minted next-free id
 *    claimed by a song that shares no band key), a vanished merge target (foreign key) or a deadlock
 *    rolls back and the whole decision is recomputed (the domain's resolve-then-commit loop).
 */
import type { DataSource } from 'typeorm';
import type { ResolveIdentityRequest } from '@polyphony/contracts';
import { learnedParams } from './learned';
import { ConflictError } from '@polyphony/platform';
import { type BandLayout, bandKeys } from '../domain/identity/bands';
import { IdentityResolver, type IdentityDecision } from '../domain/identity/decide';
import { normalisePath, parentFolder } from '../domain/identity/gates';
import type { CandidateQuery, IdentityCandidate, IdentityCandidateSource, TrackEvidence, TrackFile } from '../domain/identity/identity-candidate-source';
import { computeSignature, unsignableCanonicalId } from '../domain/identity/signature';
import { normaliseArtistName } from '../domain/names';
import { chromaprintParam, decodeVector, encodeVector, signatureParam } from './codec';
import { ServedVersionChanged, type IdentityResolveStore, type ResolveOptions, type ResolveResult } from '../domain/ports';
import type { Queryable } from './sql';
import { CATALOGUE_WRITE_LOCK, type LockKey, bandLockKey, lockExclusive, lockShared, serverLockKey, unsignableLockKey } from './locks';


/** Thrown inside a resolve transaction to roll it back and decide again. */
class RetryDecision extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryDecision';
  }
}


/** SQLSTATEs after which a resolve is re-decided: unique violation, FK violation, serialization failure, deadlock. */
const RETRYABLE_SQLSTATES = new Set(['23505', '23503', '40001', '40P01']);

function sqlState(err: unknown): string | undefined {
  const e = err as { code?: string; driverError?: { code?: string } };
  return e?.code ?? e?.driverError?.code;
}

interface CandidateRow {
  item_id: string;
  duration_seconds: number | null;
  vector: Buffer;
  files: Array<[string, string, string | null]>;
  fingerprint: number[] | null;
}

/**
 * {@link IdentityCandidateSource} over the catalogue tables, bound to one transaction.
 * Candidates: songs sharing at least one (band, value) key with the query, of the same embedder version,
 * within the Hamming radius (checked in SQL with bit_count on the stored bit(200) signature; the domain
 * re-checks). Evidence per candidate: stored float32 embedding, stored duration, every mapped file
 * (server, provider id, path) and the Chromaprint of its oldest mapped file that has one.
 */
export class PgCandidateSource implements IdentityCandidateSource {
  /** Rows returned by the last band lookup (diagnostics and benchmarks). */
  lastCandidateCount = 0;

  constructor(
    private readonly m: Queryable,
    private readonly layoutId: string,
    private readonly embedderVersion: string,
  ) {}

  /** {@inheritDoc IdentityCandidateSource.findBySignatureBands} */
  async findBySignatureBands(query: CandidateQuery): Promise<IdentityCandidate[]> {
    if (query.layoutId !== this.layoutId) throw new Error(`band index built with layout ${this.layoutId}, query uses ${query.layoutId}`);
    const rows: CandidateRow[] = await this.m.query(
      `WITH hits AS (
         SELECT DISTINCT b.song_no
         FROM unnest($1::smallint[], $2::int[]) AS q(band_no, band_value)
         JOIN catalogue.signature_band b ON b.band_no = q.band_no AND b.band_value = q.band_value
       )
       SELECT s.item_id, s.duration_seconds, e.vector,
         COALESCE((SELECT json_agg(json_build_array(m.server_id, m.provider_id, m.file_path) ORDER BY m.server_id, m.provider_id)
                   FROM catalogue.track_server_map m WHERE m.item_id = s.item_id), '[]'::json) AS files,
         (SELECT c.fingerprint FROM catalogue.track_server_map m
            JOIN catalogue.chromaprint c ON c.server_id = m.server_id AND c.provider_id = m.provider_id
           WHERE m.item_id = s.item_id ORDER BY m.created_at, m.server_id, m.provider_id LIMIT 1) AS fingerprint
       FROM hits h
       JOIN catalogue.score s ON s.song_no = h.song_no
       JOIN catalogue.embedding e ON e.item_id = s.item_id
       WHERE e.signature IS NOT NULL AND e.embedder_version = $5 AND bit_count(e.signature # $3::bit(200)) <= $4`,
      [query.bands.map((k) => k.band), query.bands.map((k) => k.value), signatureParam(query.signature), query.maxHamming, this.embedderVersion],
    );
    this.lastCandidateCount = rows.length;
    return rows.map((r) => ({
      canonicalId: r.item_id,
      embedding: decodeVector(r.vector),
      durationSeconds: r.duration_seconds,
      chromaprint: r.fingerprint,
      files: r.files.map(([serverId, providerId, path]) => ({ serverId, providerId, path })),
    }));
  }

  /** {@inheritDoc IdentityCandidateSource.findTakenIds} */
  async findTakenIds(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const rows: Array<{ item_id: string }> = await this.m.query(`SELECT item_id FROM catalogue.score WHERE item_id = ANY($1::text[])`, [ids]);
    return new Set(rows.map((r) => r.item_id));
  }
}


/** Writes and reads of the resolve path. */
export class PgIdentityRepository implements IdentityResolveStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * The provider file's current mapping, or null.
   * @returns item id and whether the song was analysed from this very file.
   */
  async findMapping(m: Queryable, serverId: string, providerId: string, forUpdate = false): Promise<{ itemId: string; fromThisFile: boolean; fileStamp: string | null } | null> {
    const rows: Array<{ item_id: string; from_this: boolean; file_stamp: string | null }> = await m.query(
      `SELECT m.item_id, (s.source_server_id = m.server_id AND s.source_provider_id = m.provider_id) IS TRUE AS from_this, m.file_stamp
         FROM catalogue.track_server_map m JOIN catalogue.score s ON s.item_id = m.item_id
        WHERE m.server_id = $1 AND m.provider_id = $2${forUpdate ? ' FOR UPDATE OF m' : ''}`,
      [serverId, providerId],
    );
    const r = rows[0];
    return r ? { itemId: r.item_id, fromThisFile: r.from_this, fileStamp: r.file_stamp } : null;
  }

  /** Whether the server was deleted from the registry (tombstone). */
  async isServerDeleted(m: Queryable, serverId: string): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT 1 FROM catalogue.deleted_server WHERE server_id = $1`, [serverId]);
    return rows.length > 0;
  }

  /**
   * Resolves an analysed provider file to a canonical id and writes the outcome (see module docs).
   * Idempotent per provider file: an already mapped file answers with its mapping and writes nothing, unless the
   * request says `changedFile` and the mapping's stored stamp differs from `metadata.fileStamp` (issue 35): then the
   * decision is made again on the new audio and written by {@link reassign} (same song kept, or the mapping moved).
   *
   * @throws ConflictError('server_deleted') for a server deleted from the registry;
   *   Error after `maxAttempts` conflicting attempts; database errors propagate.
   */
  async resolve(req: ResolveIdentityRequest, options: ResolveOptions): Promise<ResolveResult> {
    const known = await this.findMapping(this.ds, req.serverId, req.providerId);
    if (known && !changedInPlace(req, known.fileStamp)) return { itemId: known.itemId, outcome: known.fromThisFile ? 'new' : 'existing', via: 'mapped', attempts: 0, mappingWritten: false };

    // Float32 once, here: the stored vector, its stored signature and this decision all use the same values.
    const embedding = Float32Array.from(req.embedding);
    const file: TrackFile = { serverId: req.serverId, providerId: req.providerId, path: req.metadata.filePath ?? null };
    const track: TrackEvidence = {
      embedding,
      durationSeconds: req.durationSeconds ?? null,
      chromaprint: req.chromaprint && req.chromaprint.length > 0 ? Int32Array.from(req.chromaprint, (w) => w | 0) : null,
      files: [file],
    };
    const sig = computeSignature(embedding);
    const lockKeys: LockKey[] = sig.ok
      ? bandKeys(sig.code, options.layout).map((k) => bandLockKey(k.band, k.value))
      : [unsignableLockKey(unsignableCanonicalId(req.serverId, req.providerId))];
    const maxAttempts = options.maxAttempts ?? 6;

    for (let attempt = 1; ; attempt++) {
      try {
        return await this.ds.transaction(async (m) => {
          await lockShared(m, [CATALOGUE_WRITE_LOCK, serverLockKey(req.serverId)]);
          if (await this.isServerDeleted(m, req.serverId)) throw new ConflictError(`Server ${req.serverId} was deleted`, 'server_deleted');
          await lockExclusive(m, lockKeys);
          // Row-locked when the file may have changed in place: two re-analyses of one file decide one after the other.
          const again = await this.findMapping(m, req.serverId, req.providerId, req.changedFile === true);
          if (again && !changedInPlace(req, again.fileStamp)) return { itemId: again.itemId, outcome: again.fromThisFile ? 'new' : 'existing', via: 'mapped', attempts: attempt, mappingWritten: false } as const;
          // The served version cannot change while this transaction holds the write lock shared (a switch takes it exclusive).
          const served = await servedVersion(m);
          if (served !== null && served !== req.embedderVersion) throw new ServedVersionChanged(req.embedderVersion, served);

          const resolver = new IdentityResolver(new PgCandidateSource(m, options.layout.id, req.embedderVersion), options.config, options.layout);
          const decision = await resolver.resolve(track);
          if (again) return await this.reassign(m, req, again.itemId, decision, embedding, options.layout, attempt);
          if (decision.kind === 'new') await this.insertSong(m, req, decision.canonicalId, embedding, options.layout);
          await storeAlternateVectors(m, decision.canonicalId, req.alternateEmbeddings ?? [], req.embedderVersion, decision.kind === 'new');
          await this.insertMapping(m, req, decision.canonicalId, decision.kind === 'new' ? 'analysis' : 'fingerprint');
          return { itemId: decision.canonicalId, outcome: decision.kind === 'new' ? 'new' : 'existing', via: decision.kind, decision, attempts: attempt, mappingWritten: true } as const;
        });
      } catch (err) {
        if (err instanceof ServedVersionChanged) throw err;
        const retryable = err instanceof RetryDecision || RETRYABLE_SQLSTATES.has(sqlState(err) ?? '');
        if (!retryable) throw err;
        if (attempt >= maxAttempts) throw new Error(`identity decision for ${req.serverId}/${req.providerId} still conflicting after ${attempt} attempts`, { cause: err });
      }
    }
  }

  /**
   * The decision for a file changed in place (issue 35), inside the resolve transaction that holds the locks and the
   * mapping row (FOR UPDATE). The gates ran on the new audio against every candidate, the mapped song included (its
   * evidence is its stored vector and the Chromaprint of its oldest file, which is this file's OLD print when it is
   * the song's only file; the file itself never vetoes, being the same file):
   * - merge into the song the file is mapped to: still the same song; the mapping keeps its content id and gets the
   *   new stamp, path, folder, library and duration, and the file's Chromaprint row the new print. The song's vectors
   *   and descriptors are NOT replaced (the song is the recording first analysed; a re-tag or re-encode of it changes
   *   them only by noise, and other files may map to it); the worker refreshes its MusiCNN tags and recording
   *   fingerprint as for any merge.
   * - merge into another song, or a new song (inserted here): the mapping row moves to that id (the mapping log
   *   records the move, so index replicas unmap the old song on this server), tier `fingerprint` or `analysis`;
   *   the old song stays in the catalogue with its other mappings (never deleted; an orphan when it had no other).
   * One transaction: a crash leaves the mapping as it was (old stamp, so the change is seen again) or fully moved.
   */
  private async reassign(m: Queryable, req: ResolveIdentityRequest, previousItemId: string, decision: IdentityDecision, embedding: Float32Array, layout: BandLayout, attempt: number): Promise<ResolveResult> {
    const same = decision.kind === 'merge' && decision.canonicalId === previousItemId;
    if (decision.kind === 'new') await this.insertSong(m, req, decision.canonicalId, embedding, layout);
    if (!same) await storeAlternateVectors(m, decision.canonicalId, req.alternateEmbeddings ?? [], req.embedderVersion, decision.kind === 'new');
    const path = req.metadata.filePath ?? null;
    const norm = normalisePath(path);
    await m.query(
      `UPDATE catalogue.track_server_map
          SET item_id = $3, match_tier = CASE WHEN $4::text IS NULL THEN match_tier ELSE $4::text END, file_stamp = $5,
              file_path = COALESCE($6, file_path), folder = CASE WHEN $6::text IS NULL THEN folder ELSE $7 END,
              library_id = COALESCE($8, library_id), duration_seconds = COALESCE($9, duration_seconds),
              artist_id = COALESCE($10, artist_id), updated_at = now()
        WHERE server_id = $1 AND provider_id = $2`,
      [req.serverId, req.providerId, decision.canonicalId, same ? null : decision.kind === 'new' ? 'analysis' : 'fingerprint', req.metadata.fileStamp ?? null,
        path, norm === null ? null : parentFolder(norm), req.metadata.libraryId ?? null, req.durationSeconds ?? null, req.metadata.artistId ?? null],
    );
    if (req.chromaprint && req.chromaprint.length > 0) {
      await m.query(
        `INSERT INTO catalogue.chromaprint (server_id, provider_id, fingerprint, duration_seconds) VALUES ($1, $2, $3::int[], $4)
         ON CONFLICT (server_id, provider_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, duration_seconds = EXCLUDED.duration_seconds, updated_at = now()`,
        [req.serverId, req.providerId, chromaprintParam(req.chromaprint), req.durationSeconds ?? null],
      );
    } else {
      // The old print described the old content: without a new one the file has none (the gate abstains for it).
      await m.query(`DELETE FROM catalogue.chromaprint WHERE server_id = $1 AND provider_id = $2`, [req.serverId, req.providerId]);
    }
    if (!same) await bumpAvailability(m, [req.serverId]);
    return {
      itemId: decision.canonicalId,
      outcome: decision.kind === 'new' ? 'new' : 'existing',
      via: decision.kind,
      decision,
      attempts: attempt,
      mappingWritten: !same,
      reanalysis: same ? 'same' : 'moved',
      previousItemId,
    };
  }

  /** Score, embedding and band rows (keyed by the song's surrogate song_no) of a new song. @throws RetryDecision when the id is taken meanwhile. */
  private async insertSong(m: Queryable, req: ResolveIdentityRequest, itemId: string, embedding: Float32Array, layout: BandLayout): Promise<void> {
    const md = req.metadata;
    const d = req.descriptors ?? {};
    const inserted: Array<{ song_no: string }> = await m.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, album_artist, year, rating, duration_seconds, file_path,
         tempo, key, scale, energy, embedder_version, source_server_id, source_provider_id, mood_vector, other_features, tag_scores, tags_model)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19::jsonb, $20)
       ON CONFLICT (item_id) DO NOTHING RETURNING song_no`,
      [itemId, md.title, md.artist, md.album ?? null, md.albumArtist ?? null, md.year ?? null, md.rating ?? null, req.durationSeconds ?? null, md.filePath ?? null,
        d.tempo ?? null, d.key ?? null, d.scale ?? null, d.energy ?? null, req.embedderVersion, req.serverId, req.providerId,
        ...learnedParams(req.learned)],
    );
    const songNo = inserted[0]?.song_no;
    if (songNo === undefined) throw new RetryDecision(`id ${itemId} taken concurrently`);
    const sig = computeSignature(embedding);
    await m.query(`INSERT INTO catalogue.embedding (item_id, vector, signature, embedder_version) VALUES ($1, $2, $3::bit(200), $4)`, [
      itemId,
      encodeVector(embedding),
      sig.ok ? signatureParam(sig.code) : null,
      req.embedderVersion,
    ]);
    if (sig.ok) {
      const keys = bandKeys(sig.code, layout);
      await m.query(`INSERT INTO catalogue.signature_band (song_no, band_no, band_value) SELECT $1, b, v FROM unnest($2::smallint[], $3::int[]) AS t(b, v)`, [
        songNo,
        keys.map((k) => k.band),
        keys.map((k) => k.value),
      ]);
    }
  }

  /** Mapping, Chromaprint and artist rows of the provider file, and the server's availability counter. */
  private async insertMapping(m: Queryable, req: ResolveIdentityRequest, itemId: string, tier: string): Promise<void> {
    const path = req.metadata.filePath ?? null;
    const norm = normalisePath(path);
    const inserted: unknown[] = await m.query(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, folder, artist_id, match_tier, duration_seconds, library_id, file_stamp)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (server_id, provider_id) DO NOTHING RETURNING item_id`,
      [req.serverId, req.providerId, itemId, path, norm === null ? null : parentFolder(norm), req.metadata.artistId ?? null, tier, req.durationSeconds ?? null, req.metadata.libraryId ?? null, req.metadata.fileStamp ?? null],
    );
    if (inserted.length === 0) throw new RetryDecision(`mapping ${req.serverId}/${req.providerId} written concurrently`);
    if (req.chromaprint && req.chromaprint.length > 0) {
      await m.query(
        `INSERT INTO catalogue.chromaprint (server_id, provider_id, fingerprint, duration_seconds) VALUES ($1, $2, $3::int[], $4)
         ON CONFLICT (server_id, provider_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, duration_seconds = EXCLUDED.duration_seconds, updated_at = now()`,
        [req.serverId, req.providerId, chromaprintParam(req.chromaprint), req.durationSeconds ?? null],
      );
    }
    if (req.metadata.artistId) {
      await m.query(
        `INSERT INTO catalogue.artist_server_map (server_id, provider_artist_id, artist_name, artist_norm) VALUES ($1, $2, $3, $4)
         ON CONFLICT (server_id, provider_artist_id) DO UPDATE SET artist_name = EXCLUDED.artist_name, artist_norm = EXCLUDED.artist_norm, updated_at = now()
         WHERE catalogue.artist_server_map.artist_name IS DISTINCT FROM EXCLUDED.artist_name`,
        [req.serverId, req.metadata.artistId, req.metadata.artist, normaliseArtistName(req.metadata.artist)],
      );
    }
    await bumpAvailability(m, [req.serverId]);
  }
}

/**
 * Whether a resolve request re-decides a mapped file (issue 35): it says `changedFile`, carries a stamp, and the
 * mapping's stored stamp differs from it (a stored NULL counts as different: the file was mapped before stamps were
 * recorded, and the caller saw it change). Equal stamps: already re-decided (redelivery), answered as mapped.
 */
function changedInPlace(req: ResolveIdentityRequest, storedStamp: string | null): boolean {
  return req.changedFile === true && req.metadata.fileStamp !== undefined && storedStamp !== req.metadata.fileStamp;
}

/** The catalogue's served embedder version (embedding_state; null on an empty catalogue). */
async function servedVersion(m: Queryable): Promise<string | null> {
  const rows: Array<{ served_version: string | null }> = await m.query(`SELECT served_version FROM catalogue.embedding_state WHERE id = 1`);
  return rows[0]?.served_version ?? null;
}

/**
 * Alternate vectors (other embedder versions) of the resolved song: a new song stores them; a song that already
 * existed keeps its own and only gains versions it lacks (so a merge into a song stored before an embedder
 * switch counts it as covered).
 */
export async function storeAlternateVectors(m: Queryable, itemId: string, vectors: ReadonlyArray<{ embedderVersion: string; embedding: number[] }>, servedVersion: string, replace: boolean): Promise<void> {
  const alt = vectors.filter((v) => v.embedderVersion !== servedVersion);
  if (alt.length === 0) return;
  await m.query(
    `INSERT INTO catalogue.embedding_alt (item_id, embedder_version, vector)
     SELECT $1, v, b FROM unnest($2::text[], $3::bytea[]) AS t(v, b)
     ON CONFLICT (item_id, embedder_version) DO ${replace ? 'UPDATE SET vector = EXCLUDED.vector' : 'NOTHING'}`,
    [itemId, alt.map((v) => v.embedderVersion), alt.map((v) => encodeVector(Float32Array.from(v.embedding)))],
  );
}

/** Increments the availability counter of each server (creating it at 1). */
export async function bumpAvailability(m: Queryable, serverIds: readonly string[]): Promise<void> {
  if (serverIds.length === 0) return;
  await m.query(
    `INSERT INTO catalogue.server_availability (server_id, version) SELECT s, 1 FROM unnest($1::text[]) AS s
     ON CONFLICT (server_id) DO UPDATE SET version = catalogue.server_availability.version + 1, updated_at = now()`,
    [[...new Set(serverIds)].sort()],
  );
}
