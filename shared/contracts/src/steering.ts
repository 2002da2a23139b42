import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from './learned';
import { z } from './zod';

/**
 * Steerable text search (issue 31 "Steerable text search"): the concepts a text search can be steered towards
 * or away from ("more piano, less drums"), `POST /api/clap/search {steering: [{concept, weight}]}` and
 * `GET /api/clap/concepts`. A concept is one learned label of the MusiCNN models (MSD 50 + MTT 50) or of the
 * six other features, folded (lower case, runs of other characters as one space: "Hip-Hop" -> "hip hop");
 * a label both models carry ("rock", "electronic", ...) is one concept. How a concept steers:
 * docs/architecture.md "Steering".
 */

/** What a concept names, for grouping in a client's picker. */
export const CONCEPT_KINDS = ['genre', 'instrument', 'voice', 'mood', 'era', 'tempo', 'dynamics', 'rhythm'] as const;
export type ConceptKind = (typeof CONCEPT_KINDS)[number];

/** A label folded as the text search folds words (ASCII labels: lower case, other characters -> one space). */
export function foldConcept(label: string): string {
  return label.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
}

/** Kind of each concept (folded label), written by hand from the label lists; every folded label has one (unit test). */
export const CONCEPT_KIND: Readonly<Record<string, ConceptKind>> = {
  // MSD genres and styles
  rock: 'genre', pop: 'genre', alternative: 'genre', indie: 'genre', electronic: 'genre', dance: 'genre', 'alternative rock': 'genre',
  jazz: 'genre', metal: 'genre', 'classic rock': 'genre', soul: 'genre', 'indie rock': 'genre', electronica: 'genre', folk: 'genre',
  punk: 'genre', blues: 'genre', 'hard rock': 'genre', ambient: 'genre', experimental: 'genre', 'hip hop': 'genre', country: 'genre',
  'easy listening': 'genre', funk: 'genre', electro: 'genre', 'heavy metal': 'genre', 'progressive rock': 'genre', rnb: 'genre',
  'indie pop': 'genre', house: 'genre', chillout: 'genre',
  // MTT genres
  classical: 'genre', techno: 'genre', indian: 'genre', opera: 'genre', classic: 'genre', 'new age': 'genre',
  // eras
  '00s': 'era', '80s': 'era', '90s': 'era', '70s': 'era', '60s': 'era', oldies: 'era',
  // moods (MSD, MTT and the other features)
  beautiful: 'mood', mellow: 'mood', chill: 'mood', party: 'mood', sexy: 'mood', catchy: 'mood', sad: 'mood', happy: 'mood',
  weird: 'mood', danceable: 'mood', aggressive: 'mood', relaxed: 'mood',
  // voice
  'female vocalists': 'voice', 'male vocalists': 'voice', 'female vocalist': 'voice', instrumental: 'voice', vocal: 'voice',
  female: 'voice', male: 'voice', singing: 'voice', vocals: 'voice', 'no vocals': 'voice', woman: 'voice', 'male vocal': 'voice',
  'no vocal': 'voice', man: 'voice', choir: 'voice', voice: 'voice', 'male voice': 'voice', 'female vocal': 'voice', 'no voice': 'voice',
  'female voice': 'voice', choral: 'voice',
  // instruments
  acoustic: 'instrument', guitar: 'instrument', strings: 'instrument', drums: 'instrument', piano: 'instrument', violin: 'instrument',
  synth: 'instrument', harpsichord: 'instrument', flute: 'instrument', sitar: 'instrument', solo: 'instrument', harp: 'instrument',
  cello: 'instrument',
  // tempo, loudness, rhythm
  slow: 'tempo', fast: 'tempo', loud: 'dynamics', quiet: 'dynamics', soft: 'dynamics', beat: 'rhythm', beats: 'rhythm',
};

/** Every concept name (folded labels of MSD_TAGS, MTT_TAGS and OTHER_FEATURE_LABELS, first appearance order). */
export const STEER_CONCEPTS: readonly string[] = [...new Set([...MSD_TAGS, ...MTT_TAGS, ...OTHER_FEATURE_LABELS].map(foldConcept))];
const CONCEPT_SET = new Set(STEER_CONCEPTS);

/** Largest |weight| of a steering concept: 1 makes the concept count as much as one query term. */
export const STEER_MAX_WEIGHT = 1;
/** Most concepts one search can be steered by. */
export const STEER_MAX_CONCEPTS = 8;

/** One steering concept: `weight` > 0 = more of it, < 0 = less of it, in [-1, 1]. */
export const SteeringItem = z
  .object({
    concept: z.preprocess(
      (v) => (typeof v === 'string' ? foldConcept(v) : v),
      z.string().refine((c) => CONCEPT_SET.has(c), (c) => ({ message: `unknown concept '${c}': GET /api/clap/concepts lists the concepts` })),
    ),
    weight: z.number({ invalid_type_error: 'weight must be a number' }).min(-STEER_MAX_WEIGHT, `weight must be between -${STEER_MAX_WEIGHT} and ${STEER_MAX_WEIGHT}`).max(STEER_MAX_WEIGHT, `weight must be between -${STEER_MAX_WEIGHT} and ${STEER_MAX_WEIGHT}`),
  })
  .strict()
  .describe('One concept to steer by: weight > 0 asks for more of it ("more piano"), < 0 for less ("less drums"); |weight| = 1 counts as much as one query term')
  .openapi('SteeringItem');
export type SteeringItem = z.infer<typeof SteeringItem>;

/** The steering list of a text search: at most STEER_MAX_CONCEPTS concepts, each at most once. */
export const Steering = z
  .array(SteeringItem)
  .max(STEER_MAX_CONCEPTS, `at most ${STEER_MAX_CONCEPTS} steering concepts`)
  .refine((items) => new Set(items.map((i) => i.concept)).size === items.length, { message: 'a concept may appear only once in steering' });

/** One concept of GET /api/clap/concepts. */
export const ClapConcept = z
  .object({
    /** Concept name as `steering[].concept` takes it (folded label). */
    name: z.string(),
    kind: z.enum(CONCEPT_KINDS),
    /** Songs available on the selected server that carry the concept (normalised tag score >= 0.5, docs "Steering"). */
    songs: z.number().int(),
    /** False when the index has too few songs with and without it to derive a direction (steering by it is a 400). */
    steerable: z.boolean(),
  })
  .openapi('ClapConcept');
export const ClapConceptsResponse = z
  .object({
    concepts: z.array(ClapConcept),
    /** Songs with learned tags available on the selected server. */
    tagged_songs: z.number().int(),
  })
  .openapi('ClapConceptsResponse');
export type ClapConceptsResponse = z.infer<typeof ClapConceptsResponse>;
