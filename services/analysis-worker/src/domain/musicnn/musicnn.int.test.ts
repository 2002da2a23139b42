/**
 * MusiCNN (ONNX Runtime, the default runtime, and TensorFlow.js wasm, the fallback) against an independent numpy implementation (__oracle__/musicnn_oracle.py, weights
 * read with h5wasm instead of jsfive) on real music (Wesnoth tracks), plus tag sanity.
 * Tolerances: log-mel 1e-4 absolute (values 0..~5 stored as float32), tag probabilities 1e-5 absolute,
 * penultimate 1e-4 absolute (float32 network vs float64 oracle; measured ~6e-7 and ~7e-6).
 * Skips (with a message) only when the weights folder is absent; see __tests__/models.ts.
 * @jest-environment ./services/analysis-worker/src/domain/musicnn/__tests__/shared-typed-arrays-env.js
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { MSD_TAGS, OTHER_FEATURE_LABELS, parseLabelScores } from '@polyphony/contracts';
import { decodeToPcm } from '../audio/decode';
import { wesnoth } from '../audio/__tests__/wesnoth';
import { MusicnnAnalyser } from './analyser';
import { learnedFeatures, trackTags } from './learned';
import { MUSICNN_INPUT, MusicnnMelFrontend, patchFrameRanges } from './mel';
import { dumpWeights, modelsPresent, runOracle, testModelsDir } from './__tests__/models';

const present = modelsPresent('MusiCNN oracle tests');
const d = present ? describe : describe.skip;

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

d.each(['onnxruntime', 'wasm'] as const)('MusiCNN on %s against the numpy oracle (real music)', (backend) => {
  let analyser: MusicnnAnalyser;
  const dumps: string[] = [];
  beforeAll(async () => {
    analyser = await MusicnnAnalyser.load({ modelsDir: testModelsDir(), backend });
    expect(analyser.backend).toBe(backend);
  }, 120_000);
  afterAll(() => {
    analyser?.dispose();
    for (const dir of dumps) rmSync(dir, { recursive: true, force: true });
  });

  it('When two Wesnoth tracks go through both implementations, then log-mel, the 50 MSD and MTT tags and the 200-d penultimate agree', async () => {
    const msdWeights = dumpWeights(join(testModelsDir(), 'musicnn', 'MSD_musicnn.h5'));
    const mttWeights = dumpWeights(join(testModelsDir(), 'musicnn', 'MTT_musicnn.h5'));
    dumps.push(msdWeights, mttWeights);
    expect(analyser.hasMtt).toBe(true);
    for (const stem of ['elf-land', 'battle-epic']) {
      const pcm = (await decodeToPcm(wesnoth(stem))).samples;
      const out = await analyser.analyse(pcm, 2);
      expect(out.starts.length).toBe(2);
      const mel = new MusicnnMelFrontend().compute(pcm, patchFrameRanges(out.starts));
      const msd = runOracle(msdWeights, pcm, out.starts);
      const mtt = runOracle(mttWeights, pcm, out.starts);
      out.starts.forEach((s, p) => {
        const ours = mel.data.subarray(s * MUSICNN_INPUT.nMels, (s + MUSICNN_INPUT.patchFrames) * MUSICNN_INPUT.nMels);
        expect(maxAbs(ours, msd.mel[p]!.flat())).toBeLessThan(1e-4);
        expect(maxAbs(out.msd.tags.subarray(p * 50, p * 50 + 50), msd.tags[p]!)).toBeLessThan(1e-5);
        expect(maxAbs(out.msd.penultimate.subarray(p * 200, p * 200 + 200), msd.penultimate[p]!)).toBeLessThan(1e-4);
        expect(maxAbs(out.mtt!.tags.subarray(p * 50, p * 50 + 50), mtt.tags[p]!)).toBeLessThan(1e-5);
        expect(maxAbs(out.mtt!.penultimate.subarray(p * 200, p * 200 + 200), mtt.penultimate[p]!)).toBeLessThan(1e-4);
      });
      // The test must be able to fail: a different patch gives clearly different outputs.
      expect(maxAbs(out.msd.penultimate.subarray(0, 200), msd.penultimate[1]!)).toBeGreaterThan(0.05);
    }
  }, 240_000);

  it('When orchestral game music is tagged, then instrumental/ambient-like tags lead and Hip-Hop is near zero; stored features are real probabilities', async () => {
    for (const stem of ['heroes_rite', 'knolls', 'elvish-theme']) {
      const out = await analyser.analyse((await decodeToPcm(wesnoth(stem))).samples, 4);
      const tags = trackTags(out.msd);
      const top5 = tags.map((p, i) => [MSD_TAGS[i]!, p] as const).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([l]) => l);
      expect(top5.some((l) => ['instrumental', 'ambient', 'beautiful', 'experimental', 'Mellow', 'chillout', 'folk', 'acoustic'].includes(l))).toBe(true);
      expect(tags[MSD_TAGS.indexOf('Hip-Hop')]!).toBeLessThan(0.05);
      expect(top5).not.toContain('Hip-Hop');
      const f = learnedFeatures(out, analyser.modelId);
      const moods = parseLabelScores(f.moodVector)!;
      expect(moods.map(([l]) => l)).toEqual(top5);
      // one sigmoid only: the top probability equals the network's mean output, not sigmoid(p) in 0.5-0.73
      expect(moods[0]![1]).toBeCloseTo(Math.max(...tags), 3);
      expect(Math.min(...tags)).toBeLessThan(0.5);
      const other = parseLabelScores(f.otherFeatures)!;
      expect(other.map(([l]) => l)).toEqual([...OTHER_FEATURE_LABELS]);
      for (const [, p] of other) expect(p).toBeGreaterThanOrEqual(0);
      expect(f.tags.mtt).toHaveLength(50);
      expect(f.tagsModel).toBe('musicnn-msd@412a832c+mtt@1a66a2e5');
    }
  }, 240_000);
});

d('MusiCNN runtime choice', () => {
  it('When onnxruntime-node cannot be loaded, then auto falls back to TensorFlow.js and an explicit onnxruntime request fails clearly', async () => {
    const load = (id: string): unknown => {
      if (id === 'onnxruntime-node') throw new Error(`Cannot find module '${id}'`);
      if (id === '@tensorflow/tfjs-node') throw new Error(`Cannot find module '${id}'`);
      return require(id) as unknown;
    };
    const fallback = await MusicnnAnalyser.load({ modelsDir: testModelsDir(), useMtt: false, load });
    try {
      expect(fallback.backend).toBe('wasm');
      expect(fallback.tf).toBeDefined();
    } finally {
      fallback.dispose();
    }
    await expect(MusicnnAnalyser.load({ modelsDir: testModelsDir(), useMtt: false, backend: 'onnxruntime', load })).rejects.toThrow('onnxruntime-node is not available');
    const native = await MusicnnAnalyser.load({ modelsDir: testModelsDir(), useMtt: false });
    try {
      expect(native.backend).toBe('onnxruntime');
      expect(native.tf).toBeUndefined();
    } finally {
      native.dispose();
    }
  }, 120_000);
});
