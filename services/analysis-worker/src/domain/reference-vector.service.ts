/**
 * The reference implementation's MusiCNN vector of one file on a media server (issue 34, the import's agreement
 * check: POST /internal/analysis/reference-vector). Downloads the file into a temporary folder (removed afterwards),
 * decodes it to 16 kHz mono and runs MusicnnAnalyser.referenceVector (musicnn/reference-vector.ts: the MSD network's
 * `model/dense/BiasAdd`, mean over every 3 s patch of an uncentred mel of the first 600 s).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ReferenceVectorResponse } from '@polyphony/contracts';
import { AppError, StateUnavailableError, UpstreamUnavailableError, ValidationError } from '@polyphony/platform';
import type { TrackCpu } from './audio/cpu-pool';
import { UndecodableAudioError, decodeToPcm } from './audio/decode';
import { referenceInputOf } from './musicnn/input';
import type { LearnedModel } from './musicnn/model-state';
import type { MediaClientFactory, RegistryPort } from './ports';

export class ReferenceVectorService {
  constructor(
    private readonly registry: RegistryPort,
    private readonly clientFactory: MediaClientFactory,
    private readonly learned: LearnedModel,
    /** Where the front end (log-mel of up to 200 patches, ~0.2-0.7 s) runs off the event loop; inline without it. */
    private readonly cpu?: Pick<TrackCpu, 'musicnnInput'>,
    private readonly tempRoot = tmpdir(),
  ) {}

  /**
   * @param serverId a registry server id; providerId the file's id on it
   * @returns the 200-d vector, the complete patches averaged and the precision the network ran at
   * @throws StateUnavailableError (503 model_unavailable) without the MusiCNN model; ValidationError (400) for an unknown
   *   server; UpstreamUnavailableError (502) when the download fails; AppError (422 undecodable) for audio that cannot be decoded
   */
  async compute(serverId: string, providerId: string): Promise<ReferenceVectorResponse> {
    const analyser = this.learned.analyser;
    if (!analyser) throw new StateUnavailableError('model_unavailable', `The MusiCNN model is not loaded: ${this.learned.status().reason ?? 'not installed'}`);
    let info;
    try {
      info = await this.registry.getServer(serverId);
    } catch (err) {
      if (err instanceof AppError && err.httpStatus === 404) throw new ValidationError(`Unknown server ${serverId}`);
      throw err;
    }
    const dir = await mkdtemp(path.join(this.tempRoot, 'polyphony-refvec-'));
    try {
      const file = path.join(dir, 'audio');
      try {
        await this.clientFactory(info.connection).downloadTrack(providerId, file);
      } catch (err) {
        throw new UpstreamUnavailableError(`Download of ${providerId} from "${info.name}" failed: ${(err as Error).message}`, 502, { cause: err });
      }
      let pcm;
      try {
        pcm = await decodeToPcm(file);
      } catch (err) {
        if (err instanceof UndecodableAudioError) throw new AppError('undecodable', `${providerId} cannot be decoded: ${err.reason}`, 422);
        throw err;
      }
      if (pcm.samples.length < 512) throw new AppError('undecodable', `${providerId} is too short for MusiCNN`, 422);
      const { vector, patches } = await analyser.referenceVector(await referenceInputOf(this.cpu, pcm));
      return { vector: Array.from(vector), patches, precision: analyser.precision };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
