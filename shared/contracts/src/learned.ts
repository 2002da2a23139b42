import { z } from './zod';

/**
 * Learned audio features of a song (MusiCNN tags, moods and the six "other features"), carried from the
 * analysis worker to the catalogue and served with every track. Label lists and their order are the
 * output order of the published networks (../shared/models/musicnn/README.md, from musicnn's
 * `configuration.py`); index i of `tags.msd` is the probability of `MSD_TAGS[i]`.
 */

/** The 50 Million Song Dataset (last.fm) tags of the MSD MusiCNN model, in output order. */
export const MSD_TAGS = [
  'rock', 'pop', 'alternative', 'indie', 'electronic', 'female vocalists', 'dance', '00s', 'alternative rock', 'jazz',
  'beautiful', 'metal', 'chillout', 'male vocalists', 'classic rock', 'soul', 'indie rock', 'Mellow', 'electronica', '80s',
  'folk', '90s', 'chill', 'instrumental', 'punk', 'oldies', 'blues', 'hard rock', 'ambient', 'acoustic',
  'experimental', 'female vocalist', 'guitar', 'Hip-Hop', '70s', 'party', 'country', 'easy listening', 'sexy', 'catchy',
  'funk', 'electro', 'heavy metal', 'Progressive rock', '60s', 'rnb', 'indie pop', 'sad', 'House', 'happy',
] as const;

/**
 * The MSD tags that name a genre (the others name an era, a voice, an instrument or a mood); the dashboard's
 * `top_genre` is chosen among them.
 */
export const MSD_GENRES: readonly string[] = [
  'rock', 'pop', 'alternative', 'indie', 'electronic', 'dance', 'alternative rock', 'jazz', 'metal', 'classic rock',
  'soul', 'indie rock', 'electronica', 'folk', 'punk', 'blues', 'hard rock', 'ambient', 'experimental', 'Hip-Hop',
  'country', 'easy listening', 'funk', 'electro', 'heavy metal', 'Progressive rock', 'rnb', 'indie pop', 'House',
];

/** The 50 MagnaTagATune tags of the MTT MusiCNN model, in output order. */
export const MTT_TAGS = [
  'guitar', 'classical', 'slow', 'techno', 'strings', 'drums', 'electronic', 'rock', 'fast', 'piano',
  'ambient', 'beat', 'violin', 'vocal', 'synth', 'female', 'indian', 'opera', 'male', 'singing',
  'vocals', 'no vocals', 'harpsichord', 'loud', 'quiet', 'flute', 'woman', 'male vocal', 'no vocal', 'pop',
  'soft', 'sitar', 'solo', 'man', 'classic', 'choir', 'voice', 'new age', 'dance', 'male voice',
  'female vocal', 'beats', 'harp', 'cello', 'no voice', 'weird', 'country', 'metal', 'female voice', 'choral',
] as const;

/** Labels of `other_features`, in the reference's order. */
export const OTHER_FEATURE_LABELS = ['danceable', 'aggressive', 'happy', 'party', 'relaxed', 'sad'] as const;
export type OtherFeatureLabel = (typeof OTHER_FEATURE_LABELS)[number];

/** Number of MSD tags in `mood_vector` (reference `TOP_N_MOODS`). */
export const TOP_N_MOODS = 5;

const probability = z.number().min(0).max(1);

/**
 * The reference's `label:prob,label:prob` text (e.g. `rock:0.512,pop:0.301`): labels from one of the lists
 * above, probabilities in [0, 1] with 3 decimals.
 */
export const LabelScoreString = z
  .string()
  .max(4000)
  .refine((s) => s === '' || parseLabelScores(s) !== null, { message: 'expected label:probability pairs separated by commas' });

/** Tag probabilities per model: 50 values in the order of MSD_TAGS / MTT_TAGS. */
export const TagScores = z.object({
  msd: z.array(probability).length(MSD_TAGS.length),
  mtt: z.array(probability).length(MTT_TAGS.length).optional(),
});
export type TagScores = z.infer<typeof TagScores>;

/**
 * Learned features of one song. `tagsModel` names the model files that produced them
 * (e.g. `musicnn-msd@412a832c+mtt@1a66a2e5`), so a later model change can be told apart.
 * `moodVector` = the top TOP_N_MOODS MSD tags, `otherFeatures` = the six OTHER_FEATURE_LABELS, both as
 * LabelScoreString (formulas: services/analysis-worker/src/domain/neural/moods.ts).
 */
export const LearnedFeatures = z.object({
  tagsModel: z.string().min(1).max(200),
  tags: TagScores,
  moodVector: LabelScoreString,
  otherFeatures: LabelScoreString,
});
export type LearnedFeatures = z.infer<typeof LearnedFeatures>;

/**
 * PUT /internal/tracks/:itemId/learned: replace the learned features of an existing song (re-analysis; with
 * `keepExisting`, fill them only where missing). 204, 404
 * unknown song. `embedding` (optional): the song's vector of the worker's active embedder version, stored next to
 * its other versions (an embedder switch re-analyses songs this way; id, mappings and playlists are untouched).
 */
export const StoreLearnedFeaturesRequest = LearnedFeatures.extend({
  embedding: z.object({ embedderVersion: z.string().min(1).max(200), embedding: z.array(z.number()).length(200) }).optional(),
  /**
   * true: store the features only when the song has none of `tagsModel` (none at all, or another model's); a song
   * that has them keeps them (still 204). Sent when another copy of an already stored song is analysed: the spec's
   * "the track gains a mapping row and nothing else happens" (Analysis across servers, 3), so which copy of a song
   * is analysed last never changes its moods.
   */
  keepExisting: z.boolean().optional(),
});
export type StoreLearnedFeaturesRequest = z.infer<typeof StoreLearnedFeaturesRequest>;

/** `[[label, p], ...]` -> `label:p,label:p` with p rounded to 3 decimals (the reference's format). */
export function formatLabelScores(pairs: ReadonlyArray<readonly [string, number]>): string {
  return pairs.map(([label, p]) => `${label}:${(Math.round(p * 1000) / 1000).toFixed(3)}`).join(',');
}

/**
 * Parses a `label:p,label:p` string. Labels may contain spaces and hyphens (`female vocalists`, `Hip-Hop`)
 * but not `:` or `,`. @returns the pairs, or null when malformed or a probability is outside [0, 1].
 */
export function parseLabelScores(s: string): Array<[string, number]> | null {
  if (s === '') return [];
  const out: Array<[string, number]> = [];
  for (const part of s.split(',')) {
    const i = part.lastIndexOf(':');
    if (i <= 0) return null;
    const label = part.slice(0, i).trim();
    const num = part.slice(i + 1).trim();
    const p = Number(num);
    if (!/^\d+(\.\d+)?(e-?\d+)?$/i.test(num)) return null;
    if (label === '' || label.includes(':') || !Number.isFinite(p) || p < 0 || p > 1) return null;
    out.push([label, p]);
  }
  return out;
}

/** The `mood_vector` string of MSD probabilities: the TOP_N_MOODS highest, highest first (ties: list order). */
export function moodVectorOf(msd: readonly number[], n = TOP_N_MOODS): string {
  const order = msd.map((p, i) => [i, p] as const).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  return formatLabelScores(order.slice(0, n).map(([i, p]) => [MSD_TAGS[i] as string, p] as const));
}
