/**
 * The worker's learned-model state: loads MusiCNN from MODELS_DIR at start and reports what happened, so the
 * analysis falls back to the DSP embedder without a model and every surface can say why tags are missing
 * (GET /api/analysis/model).
 */
import type { Logger } from '@polyphony/platform';
import { MUSICNN_FILES, MusicnnAnalyser, musicnnPath } from './analyser';
import type { BackendPreference } from './tf-runtime';

/** GET /api/analysis/model body. */
export interface ModelStatus {
  /** ready: tags are computed; missing: no model file (or MODELS_DIR unset); error: a file is there but unusable; loading: start-up. */
  status: 'ready' | 'missing' | 'error' | 'loading';
  /** tags_model stored with the features, e.g. `musicnn-msd@412a832c+mtt@1a66a2e5` (ready only). */
  model: string | null;
  /** TensorFlow.js backend ('tensorflow', 'wasm' or 'cpu'; ready only). */
  backend: string | null;
  /** Patches per track run by the network (ready only). */
  patchesPerTrack: number | null;
  /** Why there is no model, and how to add it (missing/error). */
  reason: string | null;
  howToInstall: string;
}

const HOW_TO = `Set MODELS_DIR to a folder holding musicnn/${MUSICNN_FILES.msd.file} (and optionally musicnn/${MUSICNN_FILES.mtt.file}); scripts/setup.sh downloads them from github.com/Quint-e/musicnn_keras and checks their sha256. Restart the analysis worker afterwards.`;

/** Holds the analyser once loaded. */
export class LearnedModel {
  private analyserRef: MusicnnAnalyser | undefined;
  private state: ModelStatus;

  /**
   * @param modelsDir MODELS_DIR (undefined: not configured, the learned model is off)
   * @param maxPatches patches per track (MUSICNN_PATCHES)
   */
  constructor(
    private readonly modelsDir: string | undefined,
    private readonly maxPatches: number,
    private readonly logger: Logger,
    private readonly backend: BackendPreference = 'auto',
    /** Run the MTT network too when its file is present (MUSICNN_MTT). */
    private readonly useMtt = false,
  ) {
    this.state = { status: modelsDir ? 'loading' : 'missing', model: null, backend: null, patchesPerTrack: null, reason: modelsDir ? null : 'MODELS_DIR is not set', howToInstall: HOW_TO };
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
      const a = await MusicnnAnalyser.load({ modelsDir: this.modelsDir, maxPatches: this.maxPatches, backend: this.backend, useMtt: this.useMtt });
      this.analyserRef = a;
      this.state = { status: 'ready', model: a.modelId, backend: a.backend, patchesPerTrack: this.maxPatches, reason: null, howToInstall: HOW_TO };
      this.logger.info('learned model loaded', { model: a.modelId, backend: a.backend, patchesPerTrack: this.maxPatches });
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
  }
}
