/**
 * From per-patch network outputs to the per-song learned features stored in the catalogue
 * (contract: @polyphony/contracts learned.ts).
 *
 * - Track tag probabilities: the mean of the patch probabilities (musicnn's `extractor` takes the mean over
 *   patches of the sigmoid outputs). Real probabilities in [0, 1]: the network's own sigmoid, applied once.
 * - `mood_vector`: the `topNMoods` highest of the 50 MSD track probabilities (moodVectorOf; default 5, the
 *   TOP_N_MOODS setting of the run).
 * - `other_features`: each of the six is a noisy-OR over the track probabilities of the tags that name it,
 *   p = 1 - prod_i (1 - p_i): "at least one of these tags applies" when the tags are read as independent
 *   evidence. It stays in [0, 1], equals the single tag's probability when only one tag names the quality,
 *   and needs no tuning constants. The tag sets (OTHER_FEATURE_TAGS) are the tags of the MSD (last.fm) and
 *   MTT vocabularies whose names state the quality; MTT tags are used only when the MTT model is installed.
 *   No DSP descriptor (tempo, energy, mode) enters: there is no mood-labelled music here to fit or check
 *   weights for them, so they are left out rather than guessed; tempo, key/scale and energy are stored
 *   alongside, from dsp-v1.
 */
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, TOP_N_MOODS, formatLabelScores, moodVectorOf, type LearnedFeatures, type OtherFeatureLabel } from '@polyphony/contracts';
import type { MusicnnTrackOutputs } from './analyser';
import { TAG_COUNT, type PatchOutputs } from './network';

/** Tags whose probability feeds each of the six other features (noisy-OR). */
export const OTHER_FEATURE_TAGS: Readonly<Record<OtherFeatureLabel, { msd: ReadonlyArray<(typeof MSD_TAGS)[number]>; mtt: ReadonlyArray<(typeof MTT_TAGS)[number]> }>> = Object.freeze({
  danceable: { msd: ['dance', 'House'], mtt: ['dance', 'beats'] },
  aggressive: { msd: ['metal', 'heavy metal', 'hard rock', 'punk'], mtt: ['metal', 'loud'] },
  happy: { msd: ['happy', 'catchy'], mtt: [] },
  party: { msd: ['party', 'dance'], mtt: [] },
  relaxed: { msd: ['chillout', 'chill', 'Mellow', 'easy listening'], mtt: ['soft', 'quiet'] },
  sad: { msd: ['sad'], mtt: [] },
});

/** Mean over patches of the 50 tag probabilities. */
export function trackTags(out: PatchOutputs): number[] {
  const mean = new Array<number>(TAG_COUNT).fill(0);
  for (let p = 0; p < out.patches; p++) for (let i = 0; i < TAG_COUNT; i++) mean[i]! += out.tags[p * TAG_COUNT + i]!;
  return mean.map((v) => Math.min(1, Math.max(0, v / out.patches)));
}

/** The six other features (formula above), each in [0, 1]. */
export function otherFeatures(msd: readonly number[], mtt?: readonly number[]): Array<[OtherFeatureLabel, number]> {
  return OTHER_FEATURE_LABELS.map((label) => {
    const spec = OTHER_FEATURE_TAGS[label];
    let none = 1;
    for (const t of spec.msd) none *= 1 - msd[MSD_TAGS.indexOf(t)]!;
    if (mtt) for (const t of spec.mtt) none *= 1 - mtt[MTT_TAGS.indexOf(t)]!;
    return [label, Math.min(1, Math.max(0, 1 - none))];
  });
}

/**
 * The learned features of a track.
 * @param modelId the analyser's model id (stored as tagsModel)
 * @param topNMoods MSD tags kept in `moodVector` (the TOP_N_MOODS setting; default 5)
 */
export function learnedFeatures(outputs: MusicnnTrackOutputs, modelId: string, topNMoods = TOP_N_MOODS): LearnedFeatures {
  const msd = trackTags(outputs.msd);
  const mtt = outputs.mtt ? trackTags(outputs.mtt) : undefined;
  return {
    tagsModel: modelId,
    tags: mtt ? { msd, mtt } : { msd },
    moodVector: moodVectorOf(msd, topNMoods),
    otherFeatures: formatLabelScores(otherFeatures(msd, mtt)),
  };
}
