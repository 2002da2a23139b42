import { foldText } from '../core/text';
import type { ChatCatalogPort, ChatToolName } from './tools';

/** A tool call the interpreter derived from the text, and why. */
export interface PlannedCall {
  tool: ChatToolName;
  args: Record<string, unknown>;
  because: string;
}

/**
 * Mood and tempo words the interpreter understands, each with the descriptor filter it implies
 * (energy is a rank within this library; tempo in BPM) and, when text search is available, the
 * words are also sent to it. Chosen by hand from everyday playlist requests; documented in
 * docs/architecture.md ("Instant playlists").
 */
const MOODS: Array<{ words: string[]; filter: Record<string, unknown>; label: string }> = [
  { words: ['calm', 'chill', 'chilled', 'relaxing', 'relaxed', 'mellow', 'peaceful', 'quiet', 'soft', 'gentle', 'sleep', 'sleepy', 'ambient', 'soothing', 'study', 'focus'], filter: { energy: 'low' }, label: 'calm' },
  { words: ['energetic', 'upbeat', 'party', 'dance', 'danceable', 'workout', 'gym', 'running', 'intense', 'powerful', 'loud', 'epic', 'aggressive', 'heavy', 'hype'], filter: { energy: 'high' }, label: 'energetic' },
  { words: ['slow'], filter: { tempo_max: 95 }, label: 'slow' },
  { words: ['fast', 'quick', 'rapid'], filter: { tempo_min: 125 }, label: 'fast' },
  { words: ['sad', 'melancholic', 'melancholy', 'dark', 'gloomy', 'somber', 'sombre', 'moody'], filter: { scale: 'minor' }, label: 'sad' },
  { words: ['happy', 'cheerful', 'joyful', 'bright', 'sunny', 'uplifting', 'feelgood'], filter: { scale: 'major' }, label: 'happy' },
];

/** Words that carry no request on their own (so "music" alone is not an artist or title query). */
const FILLER = new Set('a an the some me my i want give play make create build playlist playlists music songs song tracks track list of for with and or but like similar to sounds sound from by in that this please mix some any more less about around bpm'.split(' '));

/**
 * The rule-based instant-playlist interpreter used without an LLM (or when it fails): finds in the
 * text "like <song or artist>", "from <song> to <song>", artist names of the library, mood and tempo
 * words, BPM figures and years or decades, and turns them into the same tool calls an LLM would make.
 * Deterministic; the text never reaches SQL or a URL except as bound query parameters.
 */
export async function interpret(text: string, catalog: ChatCatalogPort, hasTextSearch: boolean): Promise<PlannedCall[]> {
  const plan: PlannedCall[] = [];
  const raw = text.replace(/\s+/g, ' ').trim();
  const folded = foldText(raw);

  // "from X to Y": a song path.
  const journey = /\bfrom\s+["']?(.+?)["']?\s+to\s+["']?(.+?)["']?\s*$/i.exec(raw);
  if (journey && !/^\d{4}$/.test(journey[1]!.trim())) plan.push({ tool: 'song_path', args: { start_title: journey[1]!.trim(), end_title: journey[2]!.trim() }, because: `a journey from "${journey[1]!.trim()}" to "${journey[2]!.trim()}"` });

  // "like X" / "similar to X" / "sounds like X": a song (or an artist) to start from.
  const like = /\b(?:sounds? like|similar to|like|in the style of)\s+["']?([^,.;!?"']+?)["']?(?:\s+(?:but|and|with|from|in)\b|[,.;!?]|$)/i.exec(raw);
  const likeTarget = like?.[1]?.trim();

  // Artists of the library named anywhere in the text (n-grams of 1-4 words).
  const words = folded.split(' ').filter(Boolean);
  const grams = new Set<string>();
  for (let size = 4; size >= 1; size--) for (let i = 0; i + size <= words.length; i++) {
    const g = words.slice(i, i + size);
    if (size === 1 && FILLER.has(g[0]!)) continue;
    grams.add(g.join(' '));
  }
  const artists = grams.size ? await catalog.artistsNamed([...grams].slice(0, 200)) : new Map<string, string>();
  const artistNames = [...artists.values()];

  if (likeTarget) {
    const targetArtist = artists.get(foldText(likeTarget));
    if (targetArtist) plan.push({ tool: 'artist_similarity', args: { artist: targetArtist }, because: `music like the artist ${targetArtist}` });
    else plan.push({ tool: 'song_similarity', args: { title: likeTarget }, because: `songs that sound like "${likeTarget}"` });
  }
  for (const a of artistNames.slice(0, 3)) if (!plan.some((p) => p.args.artist === a)) plan.push({ tool: 'artist_similarity', args: { artist: a }, because: `the artist ${a}` });

  // Moods, tempo, years: one descriptor search.
  const filter: Record<string, unknown> = {};
  const labels: string[] = [];
  const moodWords: string[] = [];
  for (const m of MOODS) {
    const hit = m.words.find((w) => words.includes(w));
    if (hit) {
      Object.assign(filter, m.filter);
      labels.push(m.label);
      moodWords.push(hit);
    }
  }
  const bpm = /\b(\d{2,3})\s*bpm\b/i.exec(raw);
  if (bpm) {
    const v = Number(bpm[1]);
    Object.assign(filter, { tempo_min: Math.max(20, v - 8), tempo_max: Math.min(300, v + 8) });
    labels.push(`${v} BPM`);
  }
  const years = yearRange(raw);
  if (years) {
    Object.assign(filter, { year_min: years[0], year_max: years[1] });
    labels.push(years[0] === years[1] ? `${years[0]}` : `${years[0]}-${years[1]}`);
  }
  if (Object.keys(filter).length) plan.push({ tool: 'search_database', args: filter, because: labels.join(', ') });
  if (hasTextSearch && moodWords.length) plan.push({ tool: 'text_search', args: { query: moodWords.join(' ') }, because: `songs described as ${moodWords.join(', ')}` });

  // Nothing understood: the meaningful words as a metadata search.
  if (!plan.length) {
    const meaningful = words.filter((w) => !FILLER.has(w));
    if (meaningful.length) plan.push({ tool: 'search_database', args: { title: meaningful.join(' ') }, because: `titles, artists or albums matching "${meaningful.join(' ')}"` });
  }
  return plan;
}

/** Year or decade range named in the text: "1990s", "90s", "2005", "2000-2010", "from 2001 to 2004". */
export function yearRange(text: string): [number, number] | null {
  const range = /\b((?:19|20)\d{2})\s*(?:-|–|to|until)\s*((?:19|20)\d{2})\b/i.exec(text);
  if (range) return [Math.min(+range[1]!, +range[2]!), Math.max(+range[1]!, +range[2]!)];
  const decade = /\b((?:19|20)\d)0'?s\b/i.exec(text);
  if (decade) return [+decade[1]! * 10, +decade[1]! * 10 + 9];
  const short = /\b([2-9]0|00|10)'?s\b/i.exec(text);
  if (short) {
    const d = +short[1]!;
    const start = d >= 20 && d <= 90 ? 1900 + d : 2000 + d;
    return [start, start + 9];
  }
  const single = /\b(?:in|from|of|year)\s+((?:19|20)\d{2})\b/i.exec(text);
  if (single) return [+single[1]!, +single[1]!];
  return null;
}
