import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REFERENCE_EMBEDDER_VERSION, TOP_N_MOODS, servedVersionOfMismatch, type AnalysisTrackRequested, type ResolveIdentityRequest, type ResolveIdentityResponse, type UnanalyzableReasonCode } from '@polyphony/contracts';
import type { MediaServerClient } from '@polyphony/media-servers';
import { AppError, TransientError, isTransientFault, leaseRenewMs, type Logger } from '@polyphony/platform';
import { computeChromaprint } from './audio/chromaprint';
import { AnalysisThreadError, type PcmHolder, type TrackCpu } from './audio/cpu-pool';
import { UndecodableAudioError, decodeToPcm } from './audio/decode';
import { InsufficientAudioError, MIN_AUDIO_SECONDS } from './audio/embedder';
import { fetchAndStoreLyrics, isInstrumental } from './lyrics';
import { learnedFeatures } from './musicnn/learned';
import type { MusicnnAnalyser, MusicnnTrackOutputs } from './musicnn/analyser';
import { referenceInputOf } from './musicnn/input';
import type { LearnedModel } from './musicnn/model-state';
import type { CataloguePort, MediaClientFactory, RegistryPort, TrackClaim, TrackClaimStore, TrackOutcome } from './ports';

/** Stable hash of the metadata that, when changed, lifts a file's exclusion (title, artist, album, duration, path). */
export function metadataHash(t: AnalysisTrackRequested['track']): string {
  return createHash('sha256')
    .update(JSON.stringify([t.title, t.artist, t.album ?? '', t.durationSeconds ?? null, t.path ?? '']))
    .digest('hex')
    .slice(0, 32);
}

export interface ProcessResult {
  outcome: TrackOutcome;
  /** The track already had an outcome in this run (redelivered or republished message): no work was done. */
  duplicate?: boolean;
  itemId?: string;
  error?: string;
}

/** Timings of the last track, for the benchmark and metrics (milliseconds). */
export interface StageTimings {
  downloadMs: number;
  decodeMs: number;
  embedMs: number;
  /** MusiCNN front end + networks (0 without the learned model). */
  learnedMs: number;
  fingerprintMs: number;
}

/**
 * Another processing attempt holds a live claim on the track (e.g. the broker redelivered its message
 * after a channel closed while the first attempt kept working). Transient: the bus retries the message
 * with backoff, and the retry finds the outcome recorded (duplicate) or the claim lapsed (the holder died).
 */
export class TrackBusyError extends TransientError {
  constructor(providerId: string, until: Date) {
    super(`track ${providerId} is being analyzed by another attempt (claim until ${until.toISOString()})`);
    this.name = 'TrackBusyError';
  }
}

/** Lease of a track claim in seconds, renewed every `leaseRenewMs` of it (5 s) while the attempt works (a killed worker's claim lapses within it). */
export const TRACK_CLAIM_LEASE_SECONDS = 20;

/**
 * Analyzes one provider track (the work of one bus message): skip if already mapped (idempotent
 * redelivery), download to a temp directory (streamed), decode to 16 kHz mono with ffmpeg,
 * embed and describe, MusiCNN tags when the learned model is installed, Chromaprint with fpcalc, the recording
 * fingerprint (landmarks, search by recording), resolve identity in the catalogue, and for new
 * content fetch lyrics from the server. A mapped song lacking tags (model installed later) or a recording
 * fingerprint (analysed before they existed) is fetched again for that part only. A mapped file changed in place
 * (`changedFile`, issue 35) goes through the whole pipeline again and is resolved with `changedFile`: the outcome is
 * `mapped_existing` when it is still its song (or now a copy of another stored song) and `analyzed` when it became a
 * new song; either way `analysis.track.completed.v1` names the song it now maps to, so the live index appends it. The temp directory is removed on every path.
 * Undecodable or unreadable files are excluded until their metadata changes.
 *
 * The per-song DSP (dsp-v1 analysis, recording fingerprint) runs on `cpu`, the service's CPU threads
 * (`AnalysisThreadPool`), so the event loop stays free for the routes, probes and heartbeats meanwhile; a thread that
 * dies fails the attempt transiently (`AnalysisThreadError`: the bus retries the track).
 */
export class TrackProcessor {
  private readonly clients = new Map<string, { at: number; client: MediaServerClient }>();
  lastTimings?: StageTimings;
  /** Lease of a track claim (seconds); see TRACK_CLAIM_LEASE_SECONDS. */
  claimLeaseSeconds = TRACK_CLAIM_LEASE_SECONDS;
  /** How long a delivery waits in place for another attempt's claim (ms): a lease and a half, then the bus retries it. */
  claimWaitMs = TRACK_CLAIM_LEASE_SECONDS * 1500;

  constructor(
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly runs: TrackClaimStore,
    private readonly clientFactory: MediaClientFactory,
    /** The per-song CPU steps (dsp-v1 analysis, recording fingerprint), run off the event loop. */
    private readonly cpu: TrackCpu,
    private readonly logger: Logger,
    private readonly tempRoot = tmpdir(),
    /** The MusiCNN model when installed (tags, moods, other features); absent = DSP only. */
    private readonly learned?: LearnedModel,
    /** The TOP_N_MOODS setting, for messages that do not carry their run's value (published before it existed). */
    private readonly topNMoodsSetting: () => Promise<number> = async () => TOP_N_MOODS,
  ) {}

  /** MSD tags kept in the mood_vector of this message's song: its run's value, else the setting. */
  private async topNMoods(msg: AnalysisTrackRequested): Promise<number> {
    return msg.topNMoods ?? (await this.topNMoodsSetting().catch(() => TOP_N_MOODS));
  }

  /** The media-server client of a server, cached for a minute so credential edits take effect soon. */
  private async client(serverId: string): Promise<MediaServerClient> {
    const hit = this.clients.get(serverId);
    if (hit && Date.now() - hit.at < 60_000) return hit.client;
    const info = await this.registry.getServer(serverId);
    const client = this.clientFactory(info.connection);
    this.clients.set(serverId, { at: Date.now(), client });
    return client;
  }

  /**
   * Processes one message. Transient failures (server unreachable, catalogue down) throw so the bus
   * retries; permanent per-file failures are recorded and excluded. `finalAttempt` turns a transient
   * failure into a recorded failure so a run never waits forever for a dead-lettered message.
   */
  async process(msg: AnalysisTrackRequested, finalAttempt: boolean, signal?: AbortSignal): Promise<ProcessResult> {
    const { taskId, serverId, track } = msg;
    if (await this.runs.isCancelled(taskId)) return this.record(msg, { outcome: 'cancelled' });
    // A duplicate message (redelivery after its outcome was recorded, or a republish by a coordinator
    // that took the run over) does no work; one that arrives while another attempt is still working on
    // the track (redelivered when the first attempt's channel closed) waits for that attempt (`claim`).
    const owner = `${process.pid}:${randomUUID()}`;
    const claim = await this.claim(msg, owner);
    if (claim.state === 'final') return { outcome: claim.outcome, duplicate: true };
    if (claim.state === 'busy') throw new TrackBusyError(track.id, claim.until);
    if (claim.state === 'absent') return this.work(msg, finalAttempt, signal);
    const renew = setInterval(() => {
      this.runs.renewClaim(taskId, serverId, track.id, owner, this.claimLeaseSeconds).catch(() => undefined);
    }, leaseRenewMs(this.claimLeaseSeconds * 1000));
    renew.unref();
    try {
      return await this.work(msg, finalAttempt, signal);
    } catch (err) {
      // No outcome recorded: hand the track back so the retry (here or on another worker) starts at once.
      await this.runs.releaseClaim(taskId, serverId, track.id, owner).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * Claims the track, waiting in place up to `claimWaitMs` while another attempt holds it: polled every
   * second, so a holder that finishes (broker restart: it records the outcome within seconds) ends the
   * wait as a duplicate, and a dead holder's claim is taken the moment its lease lapses (kill -9), rather
   * than after the bus retry's growing delays. Still busy after the wait: the caller throws TrackBusyError.
   */
  private async claim(msg: AnalysisTrackRequested, owner: string): Promise<TrackClaim> {
    const deadline = Date.now() + this.claimWaitMs;
    for (;;) {
      const claim = await this.runs.claimTrack(msg.taskId, msg.serverId, msg.track.id, owner, this.claimLeaseSeconds);
      if (claim.state !== 'busy' || Date.now() >= deadline) return claim;
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(50, deadline - Date.now()))));
    }
  }

  /** The work of `process` once the track is claimed (or has no run row to claim). */
  private async work(msg: AnalysisTrackRequested, finalAttempt: boolean, signal?: AbortSignal): Promise<ProcessResult> {
    const { serverId, track } = msg;
    const mapped = await this.catalogue.mappedProviderIds(serverId, [track.id]);
    // A mapped file changed in place (issue 35: `changedFile`, listed stamp different from the stored one) is analysed
    // again whole, like a new file; the catalogue decides whether it is still its song (resolve with `changedFile`).
    const changedFile = msg.changedFile === true && track.fileStamp !== undefined;
    if (mapped.has(track.id) && !changedFile) {
      // Already a song: only its MusiCNN tags or its learned embedding may be missing (model installed after it was analysed).
      const want = this.learned?.target();
      const itemId = want ? (await this.catalogue.songsNeedingTags(serverId, [track.id], want)).get(track.id) : undefined;
      if (want && itemId) return this.retag(msg, finalAttempt, itemId, signal);
      // ...or its recording fingerprint (analysed before fingerprints existed): fetched again, fingerprinted only.
      const unprinted = this.catalogue.songsWithoutFingerprint ? (await this.catalogue.songsWithoutFingerprint(serverId, [track.id])).get(track.id) : undefined;
      if (unprinted) return this.fingerprintOnly(msg, finalAttempt, unprinted, signal);
      return this.record(msg, { outcome: 'skipped_mapped' });
    }
    const dir = await this.tempDir(msg, finalAttempt);
    if (typeof dir !== 'string') return dir;
    try {
      const client = await this.client(serverId);
      const file = path.join(dir, 'audio');
      const t0 = performance.now();
      try {
        await client.downloadTrack(track.id, file, signal);
      } catch (err) {
        if (isLocalDiskFull(err)) return await this.tempFull(msg, finalAttempt, err);
        if (!finalAttempt && isTransient(err)) throw err;
        return this.fail(msg, `download failed: ${(err as Error).message}`, isTransient(err) ? undefined : 'download_failed');
      }
      const t1 = performance.now();
      let pcm;
      try {
        pcm = await decodeToPcm(file);
      } catch (err) {
        if (err instanceof UndecodableAudioError) return this.fail(msg, err.reason, 'undecodable');
        throw err;
      }
      const t2 = performance.now();
      let analysis;
      try {
        analysis = await this.cpu.analyseTrack(pcm);
      } catch (err) {
        if (err instanceof InsufficientAudioError) return this.fail(msg, err.message, 'too_short');
        throw err;
      }
      const t3 = performance.now();
      // Tags are an addition: an inference failure leaves the song without them rather than failing it.
      const analyser = this.learned?.analyser;
      const topN = await this.topNMoods(msg);
      const outputs = analyser
        ? await this.musicnn(analyser, pcm).catch((err: unknown) => {
            if (err instanceof AnalysisThreadError) throw err; // the thread died: the bus retries the track
            this.logger.warn('MusiCNN analysis failed; song stored without tags, with its dsp-v1 vector (re-analysed by the next run)', { serverId, providerId: track.id, err: (err as Error).message });
            return undefined;
          })
        : undefined;
      const learned = outputs && analyser ? learnedFeatures(outputs, analyser.modelId, topN) : undefined;
      const fusion = this.learned?.fusion;
      const learnedVector = outputs && fusion ? fusion.embedTrack(outputs, analysis.embedding) : undefined;
      const t3b = performance.now();
      // A missing print only makes the Chromaprint gate abstain.
      const print = await computeChromaprint(file).catch((err: unknown) => {
        this.logger.warn('chromaprint failed', { serverId, providerId: track.id, err: (err as Error).message });
        return undefined;
      });
      // The recording fingerprint (search by recording) from the same PCM; stored once the song's id is known.
      const landmarks = this.catalogue.storeFingerprint ? await this.landmarkPrint(pcm, serverId, track.id) : undefined;
      const t4 = performance.now();
      this.lastTimings = { downloadMs: t1 - t0, decodeMs: t2 - t1, embedMs: t3 - t2, learnedMs: t3b - t3, fingerprintMs: t4 - t3b };
      const d = analysis.descriptors;
      const request: ResolveIdentityRequest = {
        serverId,
        providerId: track.id,
        // The learned vector when there is one, with the dsp-v1 vector as an alternate: the catalogue serves
        // whichever version covers it (docs/architecture.md "Embedder versions").
        embedding: Array.from(learnedVector ?? analysis.embedding),
        embedderVersion: learnedVector ? fusion!.version : this.cpu.embedderVersion,
        ...(learnedVector ? { alternateEmbeddings: [{ embedderVersion: this.cpu.embedderVersion, embedding: Array.from(analysis.embedding) }] } : {}),
        activeEmbedderVersion: fusion?.version ?? this.cpu.embedderVersion,
        durationSeconds: pcm.durationSeconds > 0 ? pcm.durationSeconds : undefined,
        chromaprint: print ? Array.from(print.fingerprint) : undefined,
        metadata: {
          title: track.title,
          artist: track.artist,
          artistId: track.artistId,
          album: track.album,
          albumArtist: track.albumArtist,
          year: track.year,
          rating: track.rating,
          filePath: track.path,
          libraryId: track.libraryId,
          fileStamp: track.fileStamp,
        },
        descriptors: { tempo: d.tempoBpm ?? undefined, key: d.key, scale: d.scale, energy: d.energy },
        learned,
        ...(changedFile ? { changedFile: true } : {}),
      };
      const resolved = await this.resolveServed(request, pcm);
      if (resolved.reanalysis) this.logger.info('file changed in place re-analysed', { serverId, providerId: track.id, fileStamp: track.fileStamp, result: resolved.reanalysis, itemId: resolved.itemId, previousItemId: resolved.previousItemId });
      if (landmarks) await this.catalogue.storeFingerprint!(resolved.itemId, landmarks);
      // Same content already stored (e.g. from another server, possibly before the model was installed): the song
      // gains this file's tags only when it has none of this model, so which copy was analysed last never changes
      // its moods (spec "Analysis across servers" 3: a copy gains a mapping and nothing else).
      if (resolved.outcome === 'existing' && learned) await this.catalogue.storeLearned(resolved.itemId, { ...learned, keepExisting: true });
      if (resolved.outcome === 'new') await fetchAndStoreLyrics(this.catalogue, client, serverId, track.id, resolved.itemId, isInstrumental(request.learned), this.logger, { artist: track.artist, title: track.title });
      return this.record(msg, { outcome: resolved.outcome === 'new' ? 'analyzed' : 'mapped_existing', itemId: resolved.itemId });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * The MusiCNN outputs of `pcm`: the front end (log-mel patches) on a CPU thread when the pool offers it, the
   * networks in the analyser (ONNX Runtime's threads), so the event loop is not blocked by either; inline otherwise.
   * @throws RangeError when the audio is too short; AnalysisThreadError when the thread died
   */
  private async musicnn(analyser: MusicnnAnalyser, pcm: PcmHolder): Promise<MusicnnTrackOutputs> {
    if (!this.cpu.musicnnInput) return analyser.analyse(pcm.samples);
    return analyser.analyseInput(await this.cpu.musicnnInput(pcm, { variant: 'tags', maxPatches: analyser.maxPatches }));
  }

  /**
   * Resolves a new file's identity. During the embedder switch after an import from the reference (issue 34) the
   * catalogue serves the reference's vectors (`audiomuse:musicnn-msd-200`), which no request carries by default, and
   * answers 409 `embedder_version_mismatch` naming that version: then, with the MusiCNN model loaded, the reference's
   * vector is computed from the same PCM (MusicnnAnalyser.referenceVector: one MSD pass per 3 s of the first 600 s) and
   * sent as one more alternate, so the song is decided and served under the served version, its learned vector kept as
   * the target version (it counts as covered for the switch). Any other mismatch is thrown as before.
   */
  private async resolveServed(request: ResolveIdentityRequest, pcm: PcmHolder): Promise<ResolveIdentityResponse> {
    try {
      return await this.catalogue.resolve(request);
    } catch (err) {
      const analyser = this.learned?.analyser;
      const served = err instanceof AppError && err.code === 'embedder_version_mismatch' ? servedVersionOfMismatch(err.message) : undefined;
      if (!analyser || served !== REFERENCE_EMBEDDER_VERSION || request.alternateEmbeddings?.some((v) => v.embedderVersion === served)) throw err;
      const { vector } = await analyser.referenceVector(await referenceInputOf(this.cpu, pcm));
      const alternateEmbeddings = [...(request.alternateEmbeddings ?? []), { embedderVersion: served, embedding: Array.from(vector) }];
      this.logger.info('catalogue serves the reference vectors (switch after an import): resolving with the reference vector', { serverId: request.serverId, providerId: request.providerId });
      return this.catalogue.resolve({ ...request, alternateEmbeddings });
    }
  }

  /**
   * Re-analysis of a mapped song (model installed after it was analysed): download, decode, MusiCNN (and dsp-v1,
   * an input of the learned embedding), PUT the learned features with the learned vector, which the catalogue
   * keeps next to the song's served one until the switch. The song's id, mappings and playlists are untouched.
   * Outcome `retagged`.
   */
  private async retag(msg: AnalysisTrackRequested, finalAttempt: boolean, itemId: string, signal?: AbortSignal): Promise<ProcessResult> {
    const { serverId, track } = msg;
    const analyser = this.learned!.analyser!;
    return this.withMappedAudio(msg, finalAttempt, signal, async (pcm) => {
      if (pcm.samples.length < MIN_AUDIO_SECONDS * pcm.sampleRate) return this.fail(msg, 'audio too short for tags');
      const outputs = await this.musicnn(analyser, pcm);
      const learned = learnedFeatures(outputs, analyser.modelId, await this.topNMoods(msg));
      const fusion = this.learned!.fusion;
      let embedding: { embedderVersion: string; embedding: number[] } | undefined;
      if (fusion) {
        let dsp;
        try {
          dsp = (await this.cpu.analyseTrack(pcm)).embedding;
        } catch (err) {
          if (err instanceof InsufficientAudioError) return this.fail(msg, err.message);
          throw err;
        }
        embedding = { embedderVersion: fusion.version, embedding: Array.from(fusion.embedTrack(outputs, dsp)) };
      }
      await this.catalogue.storeLearned(itemId, embedding ? { ...learned, embedding } : learned);
      // The PCM is at hand: the song gets (or refreshes) its recording fingerprint too.
      const landmarks = this.catalogue.storeFingerprint ? await this.landmarkPrint(pcm, serverId, track.id) : undefined;
      if (landmarks) await this.catalogue.storeFingerprint!(itemId, landmarks);
      return this.record(msg, { outcome: 'retagged', itemId });
    });
  }

  /**
   * The recording fingerprint of decoded PCM, or undefined (logged) when it cannot be made: the song is stored without
   * one. A CPU thread that died is not such a case: AnalysisThreadError is thrown (the attempt fails transiently).
   */
  private async landmarkPrint(pcm: PcmHolder, serverId: string, providerId: string) {
    try {
      return await this.cpu.recordingFingerprint(pcm);
    } catch (err) {
      if (err instanceof AnalysisThreadError) throw err;
      this.logger.warn('recording fingerprint failed; song stored without one', { serverId, providerId, err: (err as Error).message });
      return undefined;
    }
  }

  /**
   * The fingerprint backfill of one mapped song (analysed before recording fingerprints existed): download, decode,
   * fingerprint, PUT it. Nothing else of the song changes (no re-analysis, same id, mappings and tags). Outcome
   * `fingerprinted`; a failed download or decode is `failed` without an exclusion (the song stays analysed, and
   * the next run tries again).
   */
  private async fingerprintOnly(msg: AnalysisTrackRequested, finalAttempt: boolean, itemId: string, signal?: AbortSignal): Promise<ProcessResult> {
    return this.withMappedAudio(msg, finalAttempt, signal, async (pcm) => {
      await this.catalogue.storeFingerprint!(itemId, await this.cpu.recordingFingerprint(pcm));
      return this.record(msg, { outcome: 'fingerprinted', itemId });
    });
  }

  /**
   * Downloads and decodes the audio of an already-mapped song into a temporary folder (removed afterwards) and hands
   * the PCM to `use` (retag, fingerprint backfill). A failed download is `failed` (a transient one is thrown for the
   * bus to retry unless this is the last attempt), undecodable audio is `failed` with its reason; neither excludes the
   * file: the song stays analysed and the next run tries again.
   */
  private async withMappedAudio(
    msg: AnalysisTrackRequested,
    finalAttempt: boolean,
    signal: AbortSignal | undefined,
    use: (pcm: Awaited<ReturnType<typeof decodeToPcm>>) => Promise<ProcessResult>,
  ): Promise<ProcessResult> {
    const { serverId, track } = msg;
    const dir = await this.tempDir(msg, finalAttempt);
    if (typeof dir !== 'string') return dir;
    try {
      const file = path.join(dir, 'audio');
      try {
        await (await this.client(serverId)).downloadTrack(track.id, file, signal);
      } catch (err) {
        if (isLocalDiskFull(err)) return await this.tempFull(msg, finalAttempt, err);
        if (!finalAttempt && isTransient(err)) throw err;
        return this.fail(msg, `download failed: ${(err as Error).message}`);
      }
      let pcm;
      try {
        pcm = await decodeToPcm(file);
      } catch (err) {
        if (err instanceof UndecodableAudioError) return this.fail(msg, err.reason);
        throw err;
      }
      return await use(pcm);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Records a track as failed after its last delivery attempt (no exclusion: the cause may pass). */
  async recordFailure(msg: AnalysisTrackRequested, reason: string): Promise<void> {
    await this.record(msg, { outcome: 'failed', error: reason });
  }

  /**
   * Records the track as failed; with `exclude` (the reason code of a failure that will not pass by itself) the file is
   * also excluded, with what the server reported of it, until its metadata hash changes (the run's listing skips it).
   */
  /** A fresh temp directory for one track, or the outcome when the temp filesystem is full (see `tempFull`). */
  private async tempDir(msg: AnalysisTrackRequested, finalAttempt: boolean): Promise<string | ProcessResult> {
    try {
      return await mkdtemp(path.join(this.tempRoot, 'polyphony-track-'));
    } catch (err) {
      if (isLocalDiskFull(err)) return await this.tempFull(msg, finalAttempt, err);
      throw err;
    }
  }

  /**
   * The analysis temp directory is full (ENOSPC/EDQUOT while downloading; issue 36): the worker's disk, not the
   * song, is at fault. Logged as an error naming the directory; the track is retried by the bus (a
   * {@link TempDirectoryFullError}, transient) and so analysed once space is back. On its final attempt it is
   * recorded failed with that reason and NOT excluded, so the next run tries it again.
   */
  private async tempFull(msg: AnalysisTrackRequested, finalAttempt: boolean, err: unknown): Promise<ProcessResult> {
    const full = new TempDirectoryFullError(this.tempRoot, err);
    this.logger.error('analysis temp directory full: the track is retried once space is freed', { dir: this.tempRoot, code: (err as { code?: string }).code, serverId: msg.serverId, providerId: msg.track.id });
    if (!finalAttempt) throw full;
    return this.fail(msg, full.message);
  }

  private async fail(msg: AnalysisTrackRequested, reason: string, exclude?: UnanalyzableReasonCode): Promise<ProcessResult> {
    const t = msg.track;
    if (exclude) await this.runs.exclude(msg.serverId, { providerId: t.id, title: t.title, artist: t.artist, album: t.album ?? null, path: t.path ?? null, durationSeconds: t.durationSeconds ?? null }, metadataHash(t), exclude, reason);
    this.logger.warn('track failed', { serverId: msg.serverId, providerId: msg.track.id, reason });
    return this.record(msg, { outcome: 'failed', error: reason });
  }

  private async record(msg: AnalysisTrackRequested, result: ProcessResult): Promise<ProcessResult> {
    await this.runs.recordOutcome(msg.taskId, msg.serverId, msg.track.id, result.outcome, result.itemId, result.error);
    return result;
  }
}

/** The analysis temp directory (TMPDIR) has no space left: transient (retried), never a reason to exclude a song. */
export class TempDirectoryFullError extends TransientError {
  constructor(dir: string, cause: unknown) {
    super(`analysis temp directory full: ${dir} (${(cause as { code?: string }).code ?? 'ENOSPC'}); free space there or point TMPDIR at a larger volume`, { cause });
    this.name = 'TempDirectoryFullError';
  }
}

/** ENOSPC (no space left) or EDQUOT (quota exceeded) from the local filesystem. */
export function isLocalDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Network failures, timeouts and 5xx/429 are worth retrying; bad credentials, 404 and protocol errors
 * are not (the platform's fault classification, faults.ts).
 */
export function isTransient(err: unknown): boolean {
  return isTransientFault(err);
}
