/**
 * The reference implementation's MusiCNN vector computed by polyphony (reference-vector.ts, MusicnnAnalyser.referenceVector)
 * against the independent numpy oracle (__oracle__/musicnn_oracle.py with `uncentred`: librosa center=False frames and
 * musicnn's `model/dense/BiasAdd`, the 200-d dense layer before its ReLU) on real music: every complete patch, mean.
 * Tolerance: cosine >= 0.99999 and max |diff| <= 1e-3 of the vector's largest magnitude (float32 network vs float64 oracle).
 * Also records how far polyphony's own MSD vector (BN(ReLU(dense)), centred mel) is from it: a different layer.
 * Skips (with a message) only when the weights folder is absent; see __tests__/models.ts.
 * @jest-environment ./services/analysis-worker/src/domain/musicnn/__tests__/shared-typed-arrays-env.js
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { decodeToPcm } from '../audio/decode';
import { wesnoth } from '../audio/__tests__/wesnoth';
import { MusicnnAnalyser } from './analyser';
import { penultimateMean } from './embedding';
import { musicnnInput } from './input';
import { MusicnnMelFrontend } from './mel';
import { cosineSimilarity, referencePatchStarts } from './reference-vector';
import { dumpWeights, modelsPresent, runOracle, testModelsDir } from './__tests__/models';

const present = modelsPresent('reference MusiCNN vector tests');
const d = present ? describe : describe.skip;

d('the reference MusiCNN vector (model/dense/BiasAdd, center=False, every patch) against the numpy oracle (real music)', () => {
  jest.setTimeout(300_000);
  let analyser: MusicnnAnalyser;
  let weights: string;
  beforeAll(async () => {
    analyser = await MusicnnAnalyser.load({ modelsDir: testModelsDir(), backend: 'onnxruntime', precision: 'float', useMtt: false });
    weights = dumpWeights(join(testModelsDir(), 'musicnn', 'MSD_musicnn.h5'));
  }, 120_000);
  afterAll(() => {
    analyser?.dispose();
    if (weights) rmSync(weights, { recursive: true, force: true });
  });

  it('When Wesnoth tracks go through both, then the vectors agree (cosine >= 0.99999) and differ from the BN(ReLU) layer polyphony stores', async () => {
    const figures: string[] = [];
    for (const stem of ['victory2', 'elf-land']) {
      const pcm = (await decodeToPcm(wesnoth(stem))).samples;
      const { vector, patches } = await analyser.referenceVector(pcm);
      const { starts } = referencePatchStarts(pcm.length);
      expect(patches).toBe(starts.length);
      expect(patches).toBeGreaterThanOrEqual(6);
      const oracle = runOracle(weights, pcm, starts, true);
      expect(oracle.dense).toHaveLength(patches);
      const mean = new Float64Array(200);
      for (const row of oracle.dense) row.forEach((v, j) => (mean[j]! += v / patches));
      const scale = Math.max(...mean.map(Math.abs));
      let maxDiff = 0;
      for (let j = 0; j < 200; j++) maxDiff = Math.max(maxDiff, Math.abs(vector[j]! - mean[j]!));
      const cos = cosineSimilarity(vector, mean);
      // Pre-activation values: both signs (a ReLU output would have none below 0).
      expect(Math.min(...vector)).toBeLessThan(0);
      expect(cos).toBeGreaterThanOrEqual(0.99999);
      expect(maxDiff / scale).toBeLessThanOrEqual(1e-3);
      // The input computed apart (as the worker's CPU threads do) gives the same vector and, for its own patches, the
      // same outputs as the inline front end.
      const apart = await analyser.referenceVector(musicnnInput(new MusicnnMelFrontend(), pcm, { variant: 'reference' }));
      expect(apart.patches).toBe(patches);
      expect(Buffer.from(apart.vector.buffer).equals(Buffer.from(vector.buffer))).toBe(true);
      const inline = await analyser.analyse(pcm);
      const ownApart = await analyser.analyseInput(musicnnInput(new MusicnnMelFrontend(), pcm, { variant: 'tags', maxPatches: analyser.maxPatches }));
      expect(ownApart.starts).toEqual(inline.starts);
      expect(Buffer.from(ownApart.msd.penultimate.buffer).equals(Buffer.from(inline.msd.penultimate.buffer))).toBe(true);
      await expect(analyser.analyseInput(musicnnInput(new MusicnnMelFrontend(), pcm, { variant: 'reference' }))).rejects.toThrow(RangeError);
      const own = penultimateMean(inline.msd);
      const ownCos = cosineSimilarity(vector, own);
      figures.push(`${stem}: ${patches} patches, cosine to oracle ${cos.toFixed(7)}, max|diff|/max ${(maxDiff / scale).toExponential(2)}; cosine to polyphony's BN(ReLU(dense)) mean ${ownCos.toFixed(3)}`);
      expect(ownCos).toBeLessThan(0.99);
    }
    console.log(figures.join('\n'));
  });
});
