import type { LlmProvider } from './provider';

/** What the namer knows of one cluster. */
export interface ClusterSummary {
  /** Top tags with their mean probability, best first. */
  tags: Array<{ label: string; score: number }>;
  /** Mean tempo (BPM) and energy of the cluster, when known. */
  tempo?: number | null;
  energy?: number | null;
  /** Up to 25 "title - artist" lines. */
  songs: string[];
}

/** Longest accepted name, and the characters a name may hold (letters, digits, space and - & ' ,). */
export const CLUSTER_NAME_MAX = 40;
const NAME_CHARS = /^[\p{L}\p{N} \-&',]+$/u;

/**
 * Asks the model for a short playlist name. The answer is untrusted: trimmed of quotes and a
 * trailing period, then accepted only when it is 3-40 characters of letters, digits, spaces and
 * `- & ' ,`, and not already used in this run (`taken`, case-insensitive). Returns null otherwise
 * (the caller falls back to a descriptive name).
 */
export async function nameClusterWithLlm(provider: LlmProvider, c: ClusterSummary, taken: ReadonlySet<string>): Promise<string | null> {
  const prompt = [
    'Name this music playlist in 2 to 4 words. Answer with the name only, no quotes, no explanation.',
    `Top tags: ${c.tags.slice(0, 8).map((t) => `${t.label} (${t.score.toFixed(2)})`).join(', ') || 'unknown'}`,
    c.tempo ? `Mean tempo: ${Math.round(c.tempo)} BPM` : '',
    c.energy !== undefined && c.energy !== null ? `Mean energy: ${c.energy.toFixed(2)}` : '',
    `Songs:\n${c.songs.slice(0, 25).join('\n')}`,
  ]
    .filter(Boolean)
    .join('\n');
  const res = await provider.chat([{ role: 'user', content: prompt }], [], { temperature: 0.7 });
  return validClusterName(res.content, taken);
}

/** The cleaned name when acceptable (see nameClusterWithLlm), else null. */
export function validClusterName(raw: string, taken: ReadonlySet<string>): string | null {
  const name = raw
    .split('\n')[0]!
    .trim()
    .replace(/^["'`*]+|["'`*]+$/g, '')
    .replace(/\.$/, '')
    .trim();
  if (name.length < 3 || name.length > CLUSTER_NAME_MAX || !NAME_CHARS.test(name)) return null;
  if ([...taken].some((t) => t.toLowerCase() === name.toLowerCase())) return null;
  return name;
}
