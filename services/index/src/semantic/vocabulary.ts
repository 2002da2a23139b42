/**
 * What the text search understands (docs/architecture.md "Text search"): the 100 MusiCNN tag labels
 * (MSD 50 + MTT 50), the six "other features", a synonym table, tempo and energy words, and stop words.
 *
 * Feature columns of a song (SemanticTable): 0-49 MSD tags, 50-99 MTT tags, 100-105 other features
 * (danceable, aggressive, happy, party, relaxed, sad).
 */
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { foldText } from '../core/text';

export const MSD_OFFSET = 0;
export const MTT_OFFSET = MSD_TAGS.length;
export const OTHER_OFFSET = MSD_TAGS.length + MTT_TAGS.length;
/** Columns of the feature table. */
export const FEATURE_COLUMNS = OTHER_OFFSET + OTHER_FEATURE_LABELS.length;

/** Descriptor channels that read the analysis descriptors instead of tag columns. */
export type Descriptor = 'slow' | 'fast' | 'loud' | 'quiet';

/** What one query term means: feature columns (a song scores the best of them) and/or a descriptor. */
export interface Concept {
  /** The query words this concept was recognised from (folded). */
  term: string;
  columns: number[];
  descriptor?: Descriptor;
}

/**
 * Synonyms: query word -> tag labels (folded) and descriptors it stands for. Chosen by hand from the tag
 * lists; every target is a label of MSD_TAGS / MTT_TAGS / OTHER_FEATURE_LABELS (checked by a unit test).
 */
export const SYNONYMS: Record<string, { tags: string[]; descriptor?: Descriptor }> = {
  calm: { tags: ['chill', 'mellow', 'relaxed', 'ambient', 'chillout', 'easy listening', 'soft', 'quiet'] },
  calming: { tags: ['chill', 'mellow', 'relaxed', 'ambient', 'chillout', 'soft'] },
  relaxing: { tags: ['chill', 'mellow', 'relaxed', 'ambient', 'chillout', 'easy listening'] },
  relax: { tags: ['chill', 'mellow', 'relaxed', 'chillout'] },
  peaceful: { tags: ['ambient', 'relaxed', 'mellow', 'new age', 'quiet'] },
  chilled: { tags: ['chill', 'chillout', 'relaxed'] },
  mellow: { tags: ['mellow', 'chill', 'soft'] },
  sleep: { tags: ['ambient', 'quiet', 'soft', 'relaxed', 'new age'] },
  study: { tags: ['ambient', 'instrumental', 'chill', 'quiet', 'classical'] },
  focus: { tags: ['ambient', 'instrumental', 'no vocals'] },
  upbeat: { tags: ['happy', 'party', 'dance', 'catchy', 'danceable'], descriptor: 'fast' },
  cheerful: { tags: ['happy', 'catchy'] },
  joyful: { tags: ['happy'] },
  uplifting: { tags: ['happy', 'beautiful'] },
  energetic: { tags: ['party', 'dance', 'fast', 'loud', 'aggressive'], descriptor: 'loud' },
  energy: { tags: ['party', 'dance', 'fast', 'loud'], descriptor: 'loud' },
  intense: { tags: ['aggressive', 'loud', 'metal', 'heavy metal', 'hard rock'], descriptor: 'loud' },
  angry: { tags: ['aggressive', 'metal', 'punk', 'hard rock'] },
  aggressive: { tags: ['aggressive', 'metal', 'punk'] },
  heavy: { tags: ['metal', 'heavy metal', 'hard rock', 'loud'] },
  dark: { tags: ['metal', 'sad', 'weird', 'experimental'] },
  melancholic: { tags: ['sad', 'mellow', 'beautiful'] },
  melancholy: { tags: ['sad', 'mellow'] },
  depressing: { tags: ['sad'] },
  gloomy: { tags: ['sad'] },
  sad: { tags: ['sad'] },
  romantic: { tags: ['sexy', 'beautiful', 'soul', 'rnb', 'mellow'] },
  love: { tags: ['sexy', 'beautiful', 'soul', 'rnb'] },
  sensual: { tags: ['sexy', 'rnb', 'soul'] },
  dancing: { tags: ['dance', 'danceable', 'party', 'house', 'electro'] },
  danceable: { tags: ['danceable', 'dance'] },
  club: { tags: ['dance', 'house', 'techno', 'electro', 'party'] },
  workout: { tags: ['dance', 'party', 'fast', 'electronic', 'loud'], descriptor: 'fast' },
  gym: { tags: ['dance', 'party', 'fast', 'loud', 'hard rock'], descriptor: 'fast' },
  running: { tags: ['dance', 'fast', 'electronic'], descriptor: 'fast' },
  background: { tags: ['ambient', 'easy listening', 'instrumental', 'quiet'] },
  lounge: { tags: ['chillout', 'easy listening', 'jazz', 'chill'] },
  epic: { tags: ['classical', 'strings', 'choir', 'loud', 'choral'] },
  orchestral: { tags: ['classical', 'strings', 'violin', 'cello'] },
  orchestra: { tags: ['classical', 'strings', 'violin', 'cello'] },
  symphonic: { tags: ['classical', 'strings'] },
  cinematic: { tags: ['classical', 'strings', 'ambient'] },
  soundtrack: { tags: ['classical', 'ambient', 'instrumental', 'strings'] },
  medieval: { tags: ['harpsichord', 'flute', 'classical', 'harp'] },
  celtic: { tags: ['flute', 'harp', 'folk'] },
  baroque: { tags: ['harpsichord', 'classical', 'strings'] },
  acoustic: { tags: ['acoustic', 'guitar', 'folk'] },
  electric: { tags: ['guitar', 'rock', 'electronic'] },
  guitars: { tags: ['guitar'] },
  drum: { tags: ['drums', 'beat', 'beats'] },
  percussion: { tags: ['drums', 'beat', 'beats'] },
  synths: { tags: ['synth', 'electronic', 'electro'] },
  synthesizer: { tags: ['synth', 'electronic'] },
  edm: { tags: ['electronic', 'dance', 'house', 'techno', 'electro'] },
  electronica: { tags: ['electronica', 'electronic'] },
  techno: { tags: ['techno', 'electronic'] },
  hiphop: { tags: ['hip hop'] },
  rap: { tags: ['hip hop'] },
  'r b': { tags: ['rnb'] },
  'rhythm and blues': { tags: ['rnb', 'blues'] },
  instrumental: { tags: ['instrumental', 'no vocals', 'no vocal', 'no voice'] },
  'without vocals': { tags: ['no vocals', 'no vocal', 'no voice', 'instrumental'] },
  'no singing': { tags: ['no vocals', 'no vocal', 'no voice', 'instrumental'] },
  vocals: { tags: ['vocals', 'vocal', 'singing', 'voice'] },
  singer: { tags: ['vocals', 'vocal', 'singing', 'voice'] },
  'female singer': { tags: ['female vocalists', 'female vocalist', 'female', 'female vocal', 'female voice', 'woman'] },
  'male singer': { tags: ['male vocalists', 'male', 'male vocal', 'male voice', 'man'] },
  oldies: { tags: ['oldies', '60s', '70s'] },
  retro: { tags: ['80s', '70s', 'oldies'] },
  old: { tags: ['oldies', '60s', '70s'] },
  modern: { tags: ['00s', 'electronic'] },
  weird: { tags: ['weird', 'experimental'] },
  strange: { tags: ['weird', 'experimental'] },
  experimental: { tags: ['experimental', 'weird'] },
  sexy: { tags: ['sexy'] },
  catchy: { tags: ['catchy', 'pop'] },
  pretty: { tags: ['beautiful'] },
  gentle: { tags: ['soft', 'quiet', 'mellow'], descriptor: 'quiet' },
  soft: { tags: ['soft', 'quiet'], descriptor: 'quiet' },
  quiet: { tags: ['quiet', 'soft'], descriptor: 'quiet' },
  loud: { tags: ['loud'], descriptor: 'loud' },
  noisy: { tags: ['loud'], descriptor: 'loud' },
  slow: { tags: ['slow'], descriptor: 'slow' },
  slower: { tags: ['slow'], descriptor: 'slow' },
  fast: { tags: ['fast'], descriptor: 'fast' },
  faster: { tags: ['fast'], descriptor: 'fast' },
  quick: { tags: ['fast'], descriptor: 'fast' },
  rapid: { tags: ['fast'], descriptor: 'fast' },
  uptempo: { tags: ['fast', 'dance'], descriptor: 'fast' },
  downtempo: { tags: ['slow', 'chillout'], descriptor: 'slow' },
  sixties: { tags: ['60s'] },
  seventies: { tags: ['70s'] },
  eighties: { tags: ['80s'] },
  nineties: { tags: ['90s'] },
};

/** Words carrying no meaning for the search ("some calm music for me" = "calm"). */
export const STOP_WORDS = new Set([
  'a', 'an', 'the', 'and', 'or', 'of', 'for', 'to', 'in', 'on', 'with', 'by', 'at', 'from', 'me', 'my', 'i', 'you', 'some', 'any',
  'music', 'song', 'songs', 'track', 'tracks', 'tune', 'tunes', 'playlist', 'play', 'please', 'want', 'like', 'something', 'that', 'this',
  'is', 'are', 'be', 'very', 'really', 'more', 'most', 'kind', 'sort', 'style', 'type', 'sounds', 'sound', 'sounding', 'feel', 'feeling', 'vibe', 'vibes', 'mood',
]);

/** Folded label -> feature columns (several lists share labels: "electronic", "rock", "pop", "dance", "country", "metal", "ambient", "guitar"). */
function labelColumns(): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const add = (label: string, col: number) => {
    const key = foldText(label);
    const list = out.get(key) ?? [];
    list.push(col);
    out.set(key, list);
  };
  MSD_TAGS.forEach((l, i) => add(l, MSD_OFFSET + i));
  MTT_TAGS.forEach((l, i) => add(l, MTT_OFFSET + i));
  OTHER_FEATURE_LABELS.forEach((l, i) => add(l, OTHER_OFFSET + i));
  return out;
}

export const LABEL_COLUMNS = labelColumns();

/** Longest phrase (in words) in the vocabulary. */
const MAX_PHRASE = 3;

function conceptOf(term: string): Concept | undefined {
  const syn = SYNONYMS[term];
  const direct = LABEL_COLUMNS.get(term);
  if (!syn && !direct) return undefined;
  const columns = new Set<number>(direct ?? []);
  for (const t of syn?.tags ?? []) for (const c of LABEL_COLUMNS.get(foldText(t)) ?? []) columns.add(c);
  return { term, columns: [...columns].sort((a, b) => a - b), descriptor: syn?.descriptor };
}

/**
 * Splits a query into recognised concepts (greedy longest phrase first, up to 3 words, e.g. "female
 * vocalists", "hip hop", "easy listening") and the remaining content words (stop words dropped), which
 * the metadata search gets. At most 16 terms.
 */
export function parseQuery(query: string): { concepts: Concept[]; words: string[] } {
  const tokens = foldText(query).split(' ').filter(Boolean).slice(0, 32);
  const concepts: Concept[] = [];
  const words: string[] = [];
  for (let i = 0; i < tokens.length; ) {
    let matched = false;
    for (let len = Math.min(MAX_PHRASE, tokens.length - i); len >= 1; len--) {
      const term = tokens.slice(i, i + len).join(' ');
      if (len === 1 && STOP_WORDS.has(term)) break;
      const c = conceptOf(term);
      if (c) {
        if (!concepts.some((x) => x.term === c.term)) concepts.push(c);
        i += len;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    const w = tokens[i]!;
    if (!STOP_WORDS.has(w) && !words.includes(w) && !concepts.some((c) => c.term === w)) words.push(w);
    i++;
  }
  return { concepts: concepts.slice(0, 16), words: words.slice(0, 16) };
}
