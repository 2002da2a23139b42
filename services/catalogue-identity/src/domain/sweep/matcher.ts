import { StringArena } from './compact';
import { discTrackOf, exactMetaKey, normMetaKey, normalizePath, pathTail } from './normalize';
import { TIERS, isMetaTier, type HasLike, type RemoteIndex, type Tier } from './remote-index';

/** A local catalogue song as the sweep streams it (one chunk of up to 20000 at a time). */
export interface LocalSong {
  itemId: string;
  title: string;
  artist: string;
  album?: string | null;
  /** Every file path known for the song, across all servers. */
  paths: string[];
}

export interface Match {
  itemId: string;
  /** Position in the RemoteIndex. */
  remote: number;
  providerId: string;
  tier: Tier;
}

const RANK: Record<Tier, number> = { path: 0, tail: 1, exact_meta: 2, norm_meta: 3 };

/**
 * Strength of a claim, lower is stronger: the tier first, then, within a metadata tier, whether the
 * (disc, track) of the local song's file name equals the remote file name's (the reference's tie-break
 * of metadata ties, reference-implementation.md section 5).
 */
function strength(tier: Tier, discTrackMatch: boolean): number {
  return RANK[tier] * 2 + (discTrackMatch ? 0 : 1);
}

/**
 * Streams local songs through the remote index tier by tier (spec: Setup-time alignment 1-2, 6).
 * A local song takes the first tier that names exactly one remote track; a remote key shared by
 * several remote tracks is ambiguous and matches nothing, unless (metadata tiers only) the (disc,
 * track) parsed from the song's file name picks exactly one of them; two local songs claiming one
 * remote track with equal evidence are ambiguous and neither is written; strictly better evidence
 * (a better tier, or the same metadata tier with a matching (disc, track)) in a later chunk takes the
 * remote track over. Provider ids already mapped on this server and songs already mapped there are
 * left alone. Memory: 6 bytes per remote track (typed claim columns) plus the claimed song ids packed
 * as UTF-8 (about 62 bytes per claim for fp_ ids).
 */
export class SweepMatcher {
  /** Per remote position: strength of the current claim (-1: none; see strength()). */
  private readonly claimStrength: Int8Array;
  /** Per remote position: 1 when equal claims made it ambiguous (nothing written). */
  private readonly claimAmbiguous: Uint8Array;
  /** Per remote position: the song of the current claim, as 1 + its index in `items` (0: none). */
  private readonly claimItem: Uint32Array;
  /** Song ids of the claims, packed (a claim taken over leaves its old entry unused). */
  private readonly items = new StringArena();
  private matchedCount = 0;
  /** Local songs left unmatched because their key named several remote tracks (or their paths disagreed). */
  conflicts = 0;

  /**
   * @param remote the fetched catalogue; complete before the matcher is built (its size fixes the claim arrays).
   * @param mappedProviderIds provider ids that already have a mapping on this server (never re-mapped).
   * @param mappedItemIds songs that already have a mapping on this server (left alone).
   */
  constructor(
    private readonly remote: RemoteIndex,
    private readonly mappedProviderIds: HasLike,
    private readonly mappedItemIds: HasLike,
  ) {
    const n = remote.slots;
    this.claimStrength = new Int8Array(n).fill(-1);
    this.claimAmbiguous = new Uint8Array(n);
    this.claimItem = new Uint32Array(n);
  }

  /**
   * Matches one chunk. Returns what changed: `write` pairs to upsert now, `retract` pairs written
   * earlier in this sweep that turned out ambiguous or lost to stronger evidence (to delete before
   * the writes: a retracted remote track may be written again to another song in the same result).
   * Each song is expected once across the whole stream (the keyset-paged local stream guarantees it);
   * a song repeated inside one chunk is taken once.
   */
  matchChunk(chunk: LocalSong[]): { write: Match[]; retract: Match[] } {
    const write = new Map<number, Match>();
    const retract: Match[] = [];
    const seen = new Set<string>();
    for (const song of chunk) {
      if (seen.has(song.itemId) || this.mappedItemIds.has(song.itemId)) continue;
      seen.add(song.itemId);
      const found = this.find(song);
      if (!found) continue;
      const { remote, tier } = found;
      const providerId = this.remote.providerId(remote);
      if (this.mappedProviderIds.has(providerId)) continue;
      const st = strength(tier, found.discTrackMatch);
      const prevStrength = this.claimStrength[remote]!;
      if (prevStrength < 0 || st < prevStrength) {
        // A first claim, or strictly better evidence taking the remote track over.
        if (prevStrength >= 0 && this.claimAmbiguous[remote] === 0) {
          if (write.has(remote)) write.delete(remote);
          else retract.push(this.claimOf(remote, providerId));
          this.matchedCount--;
        }
        this.claimStrength[remote] = st;
        this.claimAmbiguous[remote] = 0;
        this.claimItem[remote] = this.items.add(song.itemId) + 1;
        this.matchedCount++;
        write.set(remote, { itemId: song.itemId, remote, providerId, tier });
      } else if (st === prevStrength && this.claimAmbiguous[remote] === 0 && !this.items.equals(this.claimItem[remote]! - 1, song.itemId)) {
        // Two songs claim one remote track with equal evidence: when in doubt, write neither.
        if (write.has(remote)) write.delete(remote);
        else retract.push(this.claimOf(remote, providerId));
        this.claimAmbiguous[remote] = 1;
        this.matchedCount--;
      }
    }
    return { write: [...write.values()], retract };
  }

  /**
   * The first tier with a unique remote match for `song`, and whether (metadata tiers) the file
   * names' (disc, track) agree. A song whose keys of one tier name different remote tracks, or a
   * shared key no (disc, track) can settle, matches nothing (counted in {@link conflicts}).
   */
  private find(song: LocalSong): { remote: number; tier: Tier; discTrackMatch: boolean } | undefined {
    let songDt: string | undefined;
    for (const tier of TIERS) {
      const keys = this.keys(song, tier);
      let hit: number | undefined;
      let conflict = false;
      let viaTieBreak = false;
      for (const key of keys) {
        let r: number | undefined;
        if (this.remote.isAmbiguous(tier, key)) {
          if (isMetaTier(tier)) {
            songDt ??= localDiscTrack(song);
            r = songDt ? this.remote.lookupTieBreak(tier, key, songDt) : undefined;
            if (r === undefined) conflict = true;
            else viaTieBreak = true;
          } else conflict = true;
        } else r = this.remote.lookup(tier, key);
        if (r === undefined) continue;
        if (hit !== undefined && hit !== r) conflict = true;
        hit = r;
      }
      if (conflict) {
        this.conflicts++;
        return undefined;
      }
      if (hit !== undefined) {
        let discTrackMatch = viaTieBreak;
        if (!discTrackMatch && isMetaTier(tier)) {
          songDt ??= localDiscTrack(song);
          discTrackMatch = songDt !== '' && songDt === this.remote.discTrack(hit);
        }
        return { remote: hit, tier, discTrackMatch };
      }
    }
    return undefined;
  }

  private keys(song: LocalSong, tier: Tier): string[] {
    switch (tier) {
      case 'path':
        return song.paths.map(normalizePath).filter(Boolean);
      case 'tail':
        return song.paths.map((p) => pathTail(normalizePath(p))).filter(Boolean);
      case 'exact_meta':
        return [exactMetaKey(song.title, song.artist, song.album)].filter(Boolean);
      case 'norm_meta':
        return [normMetaKey(song.title, song.artist, song.album)].filter(Boolean);
    }
  }

  /** The current claim of a remote track as a Match (its tier follows from the claim's strength). */
  private claimOf(remote: number, providerId: string): Match {
    return { itemId: this.items.get(this.claimItem[remote]! - 1)!, remote, providerId, tier: TIERS[this.claimStrength[remote]! >> 1]! };
  }

  /** Number of remote tracks currently matched (not ambiguous). */
  get matched(): number {
    return this.matchedCount;
  }
}

/**
 * The (disc, track) of a local song's file names: the one its paths agree on, '' when none parses or
 * two paths disagree.
 */
function localDiscTrack(song: LocalSong): string {
  let dt = '';
  for (const p of song.paths) {
    const d = discTrackOf(normalizePath(p));
    if (!d) continue;
    if (dt && d !== dt) return '';
    dt = d;
  }
  return dt;
}

/**
 * Pruning guard (spec: Setup-time alignment 4): a fetch holding fewer tracks than half of the
 * stored mappings looks partial, and nothing is pruned.
 */
export function pruneAllowed(fetchedCount: number, storedMappings: number): boolean {
  return fetchedCount >= storedMappings * 0.5;
}
