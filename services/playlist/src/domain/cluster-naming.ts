import { MSD_TAGS } from '@polyphony/contracts';

/**
 * Names of clustering playlists from the clusters' dominant descriptors (no AI naming): tempo band of
 * the median tempo, majority scale, and energy level of the mean energy, e.g. `Upbeat_Major_High`.
 * When two clusters get the same name, the later (smaller) one adds its majority key
 * (`Upbeat_A_Major_High`), and a numeric suffix (`_2`, `_3`) settles any remaining tie.
 */

/** Descriptors of one song as the catalogue stores them (null = not known). */
export interface SongDescriptors {
  /** BPM, folded into 40-200 by the analysis. */
  tempo: number | null;
  /** Pitch class name, `C` .. `B` with sharps. */
  key: string | null;
  scale: string | null;
  /** Mean clipped RMS level in [0, 1]. */
  energy: number | null;
}

/**
 * Tempo bands, upper bounds exclusive, BPM. Project convention loosely after the Italian tempo markings
 * (andante up to about 108, allegro from about 120): below 90 Slow, 90-115 Moderate, 115-140 Upbeat,
 * 140 and above Fast.
 */
export const TEMPO_BANDS: ReadonlyArray<{ below: number; name: string }> = [
  { below: 90, name: 'Slow' },
  { below: 115, name: 'Moderate' },
  { below: 140, name: 'Upbeat' },
  { below: Infinity, name: 'Fast' },
];

/** Energy range of real music under the analysis' energy descriptor (reference implementation config.py ENERGY_MIN / ENERGY_MAX). */
export const ENERGY_MIN = 0.3;
export const ENERGY_MAX = 0.95;

/** Tempo band name of a tempo in BPM. */
export function tempoBand(bpm: number): string {
  return TEMPO_BANDS.find((b) => bpm < b.below)!.name;
}

/** Low / Medium / High: thirds of the energy scaled from [ENERGY_MIN, ENERGY_MAX] to [0, 1] (clipped). */
export function energyLevel(energy: number): 'Low' | 'Medium' | 'High' {
  const x = Math.min(1, Math.max(0, (energy - ENERGY_MIN) / (ENERGY_MAX - ENERGY_MIN)));
  return x < 1 / 3 ? 'Low' : x < 2 / 3 ? 'Medium' : 'High';
}

/** The dominant descriptors of a cluster and the names derived from them. */
export interface ClusterProfile {
  /** Median tempo of the members that have one, BPM. */
  tempo: number | null;
  /** Majority key among members that have one. */
  key: string | null;
  /** Majority scale, capitalised (`Major` / `Minor`). */
  scale: string | null;
  /** Mean energy of the members that have one. */
  energy: number | null;
  /** Top learned tags of the cluster (mean MSD probability), best first; empty without tags. */
  tags: Array<{ label: string; score: number }>;
  /**
   * With tags: `<Tag>_<Tag>_<Tempo>` (e.g. `Chillout_Ambient_Slow`, the reference's fallback style);
   * without: `<Tempo>_<Scale>_<Energy>`. Parts without data are left out; `Mix` when nothing is known.
   */
  name: string;
  /** The name with the majority key before the scale, used to tell apart clusters of the same name. */
  keyedName: string;
}

/** Most frequent value; ties go to the alphabetically first, so the result does not depend on member order. */
function majority(values: string[]): string | null {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: string | null = null;
  let bestN = 0;
  for (const [v, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (n > bestN) {
      best = v;
      bestN = n;
    }
  }
  return best;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1).toLowerCase();

/**
 * MSD tags that describe a sound rather than an era or a listener (left out of names): decades and
 * vocalist gender tags say little about a playlist's mood.
 */
const UNNAMEABLE_TAGS = new Set(['00s', '90s', '80s', '70s', '60s', 'female vocalists', 'male vocalists', 'female vocalist', 'beautiful', 'sexy', 'catchy']);

/** Mean MSD tag probabilities over the members that have tags, best first (at most 8), nameable tags only. */
export function topClusterTags(memberTags: ReadonlyArray<readonly number[] | null>): Array<{ label: string; score: number }> {
  const rows = memberTags.filter((t): t is readonly number[] => Array.isArray(t) && t.length === MSD_TAGS.length);
  if (!rows.length) return [];
  const mean = MSD_TAGS.map((_l, i) => rows.reduce((s, r) => s + r[i]!, 0) / rows.length);
  return MSD_TAGS.map((label, i) => ({ label: label as string, score: mean[i]! }))
    .filter((t) => !UNNAMEABLE_TAGS.has(t.label))
    .sort((a, b) => b.score - a.score)
    .slice(0, 8);
}

const tagWord = (label: string) => label.split(/[\s-]+/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

/** Profile (dominant descriptors, top tags and names) of a cluster from its members' descriptors and tags. */
export function profileCluster(members: readonly SongDescriptors[], tags: Array<{ label: string; score: number }> = []): ClusterProfile {
  const tempos = members.map((m) => m.tempo).filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0);
  const energies = members.map((m) => m.energy).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const tempo = median(tempos);
  const energy = energies.length ? energies.reduce((a, b) => a + b, 0) / energies.length : null;
  const scaleRaw = majority(members.map((m) => m.scale?.trim().toLowerCase()).filter((v): v is string => v === 'major' || v === 'minor'));
  const scale = scaleRaw ? capitalise(scaleRaw) : null;
  const key = majority(members.map((m) => m.key?.trim()).filter((v): v is string => !!v && /^[A-G][#b]?$/.test(v)));
  const tempoPart = tempo === null ? null : tempoBand(tempo);
  const energyPart = energy === null ? null : energyLevel(energy);
  const join = (parts: Array<string | null>) => parts.filter((p): p is string => !!p).join('_') || 'Mix';
  if (tags.length >= 2) {
    const [a, b] = [tagWord(tags[0]!.label), tagWord(tags[1]!.label)];
    return { tempo, key, scale, energy, tags, name: join([a, b, tempoPart]), keyedName: join([a, b, tempoPart, energyPart, key && scale ? key : null]) };
  }
  return { tempo, key, scale, energy, tags, name: join([tempoPart, scale, energyPart]), keyedName: join([tempoPart, key && scale ? key : null, scale, energyPart]) };
}

/**
 * Unique names for profiles given in priority order (largest cluster first): the first holder of a
 * name keeps it, later ones take their keyed name, then a numeric suffix. Comparison ignores case,
 * since some servers treat playlist names case-insensitively.
 */
export function uniqueNames(profiles: readonly Pick<ClusterProfile, 'name' | 'keyedName'>[]): string[] {
  const taken = new Set<string>();
  const take = (n: string) => {
    taken.add(n.toLowerCase());
    return n;
  };
  return profiles.map((p) => {
    if (!taken.has(p.name.toLowerCase())) return take(p.name);
    if (!taken.has(p.keyedName.toLowerCase())) return take(p.keyedName);
    for (let i = 2; ; i++) {
      const candidate = `${p.name}_${i}`;
      if (!taken.has(candidate.toLowerCase())) return take(candidate);
    }
  });
}
