/**
 * Column codec of the learned features (catalogue.score mood_vector, other_features, tag_scores jsonb,
 * tags_model; migration 1732700000000). All four are set together or all NULL.
 */
import type { LearnedFeatures, TagScores } from '@polyphony/contracts';

/** The learned-feature columns as read from catalogue.score. */
export interface LearnedColumns {
  mood_vector: string | null;
  other_features: string | null;
  tag_scores: TagScores | null;
  tags_model: string | null;
}

/** SQL select list of the columns (alias `s` = catalogue.score). */
export const LEARNED_COLUMNS_SQL = 's.mood_vector, s.other_features, s.tag_scores, s.tags_model';

/** Query parameters [mood_vector, other_features, tag_scores json text, tags_model] (all null when absent). */
export function learnedParams(l: LearnedFeatures | undefined): [string | null, string | null, string | null, string | null] {
  if (!l) return [null, null, null, null];
  return [l.moodVector, l.otherFeatures, JSON.stringify(l.tags), l.tagsModel];
}

/** Row -> contract value; null when the song was analysed without the learned model. */
export function learnedFromRow(r: LearnedColumns): LearnedFeatures | null {
  if (r.tags_model === null || r.tag_scores === null) return null;
  return { tagsModel: r.tags_model, tags: r.tag_scores, moodVector: r.mood_vector ?? '', otherFeatures: r.other_features ?? '' };
}
