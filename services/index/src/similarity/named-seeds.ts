import { ValidationError } from '@polyphony/platform';
import type { Generation } from '../core/generation';
import type { NamedSeedSource } from '../core/ports';
import type { PathEnd } from './similarity.service';

/** The three ways a path end can be given (`find_path?start_song_id|start_mood|start_anchor`, same for end). */
export interface PathEndQuery {
  songId?: string;
  mood?: string;
  anchor?: string;
}

/**
 * Turns one side of a find_path query into a path end: exactly one of song id, mood or anchor.
 * @throws ValidationError when none or several are given, or when that seed kind is not available here
 */
export async function pathEndOf(side: 'start' | 'end', q: PathEndQuery, gen: Generation, seeds: NamedSeedSource): Promise<PathEnd> {
  const given = [q.songId, q.mood, q.anchor].filter((v) => v !== undefined).length;
  if (given !== 1) throw new ValidationError(`Give exactly one of ${side}_song_id, ${side}_mood or ${side}_anchor`);
  if (q.songId !== undefined) return { songId: q.songId };
  if (q.mood !== undefined) {
    if (!seeds.mood) throw new ValidationError('Mood seeds are not available: no mood centroids in this deployment');
    return { vector: await seeds.mood(gen, q.mood), label: `mood "${q.mood}"` };
  }
  if (!seeds.anchor) throw new ValidationError('Anchor seeds are not available: no anchors in this deployment');
  const a = await seeds.anchor(q.anchor!, gen);
  return { vector: a.vector, label: `anchor "${a.name}"` };
}
