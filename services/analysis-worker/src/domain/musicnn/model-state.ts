/**
 * The worker's learned-model state: loads MusiCNN from MODELS_DIR at start and reports what happened, so the
 * analysis falls back to the DSP embedder without a model and every surface can say why tags are missing
 * (GET /api/analysis/model).
 */
import type { Logger } from '@polyphony/platform';
import { DSP_V1_NORMALISATION } from '../audio/dsp-v1-normalisation';
import type { LearnedTarget } from '../ports';
import { MUSICNN_FILES, MusicnnAnalyser, musicnnPath } from './analyser';
import { FusionEmbedder } from './embedding';
import type { MusicnnBackendPreference, MusicnnPrecision } from './analyser';

/** GET /api/analysis/model body. */
export interface ModelStatus {
  /** ready: tags are computed; missing: no model file (or MODELS_DIR unset); error: a file is there but unusable; loading: start-up. */
  status: 'ready' | 'missing' | 'error' | 'loading';
  /** tags_model stored with the features, e.g. `musicnn-msd@412a832c+mtt@1a66a2e5` (ready only). */
  model: string | null;
  /** Runtime: 'onnxruntime', or the TensorFlow.js backend 'tensorflow', 'wasm' or 'cpu' (ready only). */
  backend: string | null;
  /** Patches per track run by the network (ready only). */
  patchesPerTrack: number | null;
  /** Precision of the timbral convolutions, 'int8' or 'float' (MUSICNN_PRECISION; always 'float' on TensorFlow.js; ready only). */
  precision: MusicnnPrecision | null;
  /**
   * Embedder version of the vectors this worker stores: the learned `musicnn-fusion-v1` when the model is ready
   * with both networks (MSD and MTT), else `dsp-v1`.
   */
  embedderVersion: string;
  /** Why there is no model, and how to add it (missing/error). */
  reason: string | null;
  howToInstall: string;
}

/** Version of the DSP embedder's vectors (audio/dsp-v1-normalisation.ts). */
const DSP_VERSION = DSP_V1_NORMALISATION.version;

const HOW_TO = `Set MODELS_DIR to a folder holding musicnn/${MUSICNN_FILES.msd.file} (and optionally musicnn/${MUSICNN_FILES.mtt.file}); scripts/setup.sh downloads them from github.com/Quint-e/musicnn_keras and checks their sha256. Restart the analysis worker afterwards.`;

/** Holds the analyser once loaded. */
export class LearnedModel {
  private analyserRef: MusicnnAnalyser | undefined;
  private fusionRef: FusionEmbedder | undefined;
  private state: ModelStatus;

  /**
   * @param modelsDir MODELS_DIR (undefined: not configured, the learned model is off)
   * @param maxPatches patches per track (MUSICNN_PATCHES)
   */
  constructor(
    private readonly modelsDir: string | undefined,
    private readonly maxPatches: number,
    private readonly logger: Logger,
    private readonly backend: MusicnnBackendPreference = 'auto',
    /** Run the MTT network too when its file is present (MUSICNN_MTT). */
    private readonly useMtt = false,
    /** MUSICNN_PRECISION (default float here; the worker's default is config.ts DEFAULT_MUSICNN_PRECISION). */
    private readonly precision: MusicnnPrecision = 'float',
  ) {
    this.state = { status: modelsDir ? 'loading' : 'missing', model: null, backend: null, patchesPerTrack: null, precision: null, embedderVersion: DSP_VERSION, reason: modelsDir ? null : 'MODELS_DIR is not set', howToInstall: HOW_TO };
  }

  /** The learned embedder (both networks loaded), or undefined (the worker stores dsp-v1 vectors). */
  get fusion(): FusionEmbedder | undefined {
    return this.analyserRef ? this.fusionRef : undefined;
  }

  /** Model id and stored embedder version while the model is loaded (the run re-analyses songs lacking either), else undefined. */
  target(): LearnedTarget | undefined {
    const a = this.analyserRef;
    return a ? { model: a.modelId, embedderVersion: this.fusion?.version ?? DSP_VERSION } : undefined;
  }

  /** The loaded analyser, or undefined (fallback: DSP only, no tags). */
  get analyser(): MusicnnAnalyser | undefined {
    return this.analyserRef;
  }

  /** Current status (see ModelStatus). */
  status(): ModelStatus {
    return { ...this.state };
  }

  /** Loads the model; never throws (failures become status missing/error and one warning). */
  async load(): Promise<void> {
    if (!this.modelsDir) {
      this.logger.warn('learned model off: MODELS_DIR is not set; songs get DSP embeddings and no tags', {});
      return;
    }
    try {
      const a = await MusicnnAnalyser.load({ modelsDir: this.modelsDir, maxPatches: this.maxPatches, backend: this.backend, useMtt: this.useMtt, precision: this.precision });
      this.analyserRef = a;
      this.fusionRef = a.hasMtt ? new FusionEmbedder() : undefined;
      this.state = { status: 'ready', model: a.modelId, backend: a.backend, patchesPerTrack: this.maxPatches, precision: a.precision, embedderVersion: this.fusionRef?.version ?? DSP_VERSION, reason: null, howToInstall: HOW_TO };
      this.logger.info('learned model loaded', { model: a.modelId, backend: a.backend, patchesPerTrack: this.maxPatches, precision: a.precision });
      if (this.precision !== a.precision) this.logger.warn('MUSICNN_PRECISION=int8 runs as float here (TensorFlow.js, an x86 CPU without VNNI, or not x86: int8Supported)', { backend: a.backend });
    } catch (err) {
      const missing = (err as Error).message.endsWith('is missing');
      this.state = { ...this.state, status: missing ? 'missing' : 'error', reason: (err as Error).message };
      this.logger.warn('learned model unavailable; songs get DSP embeddings and no tags', { reason: (err as Error).message, expected: musicnnPath(this.modelsDir, 'msd') });
    }
  }

  /** Frees the networks. */
  dispose(): void {
    this.analyserRef?.dispose();
    this.analyserRef = undefined;
    this.fusionRef = undefined;
  }
}
