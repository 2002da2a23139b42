/**
 * `@polyphony/analysis-worker/engine`: the audio analysis engine as a library, for tools that run it
 * outside the worker (the benchmarks and calibration studies in the top-level `bench/` workspace).
 * Product code only; the worker itself imports these modules directly.
 *
 * - Decoding and DSP: `decodeToPcm` (ffmpeg to mono float PCM), `FrameAnalyser` with `ANALYSIS_PARAMS`,
 *   the 'dsp-v1' features (`dspV1RawFeatures`, `DSP_V1_DIMENSIONS`, `DSP_V1_BLOCKS`), their normalisation
 *   (`computeNormalisation`, `reliabilityWeights`, the committed `DSP_V1_NORMALISATION`) and the default
 *   embedder (`DefaultEmbedder`, `unweightedNormalise`).
 * - Chromaprint through fpcalc: `computeChromaprint` (comparison: `chromaprintAlignment` in @polyphony/vectors).
 * - MusiCNN: `MusicnnAnalyser` (float or int8, ONNX Runtime or tfjs), its mel front end and patch layout,
 *   the fusion embedding (`FusionEmbedder`), the learned tag heads, the ONNX graph builder and runtime
 *   loader, the weight-file reader, and the worker's defaults (`DEFAULT_MUSICNN_PATCHES`, `DEFAULT_MUSICNN_PRECISION`).
 * - The per-song DSP off the event loop: `AnalysisThreadPool` (worker threads running the dsp-v1 analysis and the
 *   recording fingerprint, `recordingFingerprint` inline).
 * Shapes, units and errors are documented on each export.
 */
export { ANALYSIS_PARAMS, FrameAnalyser, type AudioAnalysis } from './domain/audio/analysis';
export { decodeToPcm, UndecodableAudioError, type DecodedAudio } from './domain/audio/decode';
export { DSP_V1_BLOCKS, DSP_V1_DIMENSIONS, dspV1RawFeatures } from './domain/audio/dsp-features';
export { DSP_V1_NORMALISATION } from './domain/audio/dsp-v1-normalisation';
export { computeNormalisation, reliabilityWeights, type NormalisationConstants } from './domain/audio/normalisation';
export { DefaultEmbedder, unweightedNormalise } from './domain/audio/embedder';
export { AnalysisThreadError, AnalysisThreadPool, type PcmHolder, type TrackCpu } from './domain/audio/cpu-pool';
export { recordingFingerprint } from './domain/audio/landmark-print';
export { computeChromaprint, parseFpcalcJson, ChromaprintError, type Chromaprint, type ChromaprintOptions } from './domain/audio/chromaprint';
export { MUSICNN_FILES, MusicnnAnalyser, musicnnPath, type MusicnnBackendPreference, type MusicnnOptions, type MusicnnPrecision } from './domain/musicnn/analyser';
export { MUSICNN_INPUT, MusicnnMelFrontend, centredFrameCount, uncentredFrameCount, patchFrameRanges, patchStarts, patchTensorData } from './domain/musicnn/mel';
export { musicnnInput, type MusicnnInput, type MusicnnInputRequest } from './domain/musicnn/input';
export { REFERENCE_MUSICNN_VERSION, REFERENCE_MAX_SECONDS, cosineSimilarity, denseBiasAdd, referencePatchStarts, referenceVectorOf } from './domain/musicnn/reference-vector';
export { FusionEmbedder, LEARNED_EMBEDDER_VERSION, penultimateMean, quantise, type FusionConstants } from './domain/musicnn/embedding';
export { learnedFeatures, otherFeatures, trackTags } from './domain/musicnn/learned';
export { musicnnOnnxModel, type MusicnnInt8Calibration } from './domain/musicnn/onnx-graph';
export { ONNX_SESSION_OPTIONS, loadOnnxRuntime } from './domain/musicnn/onnx-network';
export { loadMusicnnFile } from './domain/musicnn/weights';
export { DEFAULT_MUSICNN_PATCHES, DEFAULT_MUSICNN_PRECISION } from './config';
