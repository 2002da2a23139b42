import { exactMetaKey, normMetaKey, normalizePath, pathTail } from './normalize';
import { TIERS, type RemoteIndex, type Tier } from './remote-index';

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
 * Streams local songs through the remote index tier by tier (spec: Setup-time alignment 1-2, 6).
 * A local song takes the first tier that names exactly one remote track; a remote key shared by
 * several remote tracks is ambiguous and matches nothing; two local songs claiming one remote
 * track at the same tier are ambiguous and neither is written; a strictly better tier in a later
 * chunk takes the remote track over. Provider ids already mapped on this server and songs already
 * mapped there are left alone. Memory: one small entry per claimed remote track.
 */
export class SweepMatcher {
  /** remote position -> current claim. */
  private readonly claims = new Map<number, { itemId: string; tier: Tier; ambiguous: boolean }>();
  private readonly claimedItems = new Set<string>();

  constructor(
    private readonly remote: RemoteIndex,
    /** Provider ids that already have a mapping on this server (never re-mapped). */
    private readonly mappedProviderIds: Set<string>,
    /** Songs that already have a mapping on this server. */
    private readonly mappedItemIds: Set<string>,
  ) {}

  /**
   * Matches one chunk. Returns what changed: `write` pairs to upsert now, `retract` pairs written
   * earlier in this sweep that turned out ambiguous or lost to a better tier (to delete).
   */
  matchChunk(chunk: LocalSong[]): { write: Match[]; retract: Match[] } {
    const write = new Map<number, Match>();
    const retract: Match[] = [];
    for (const song of chunk) {
      if (this.mappedItemIds.has(song.itemId) || this.claimedItems.has(song.itemId)) continue;
      const found = this.find(song);
      if (!found) continue;
      const { remote, tier } = found;
      const providerId = this.remote.providerIds[remote]!;
      if (this.mappedProviderIds.has(providerId)) continue;
      const prev = this.claims.get(remote);
      if (!prev) {
        this.claims.set(remote, { itemId: song.itemId, tier, ambiguous: false });
        this.claimedItems.add(song.itemId);
        write.set(remote, { itemId: song.itemId, remote, providerId, tier });
        continue;
      }
      if (RANK[tier] < RANK[prev.tier]) {
        // Strictly better evidence takes the remote track over.
        if (!prev.ambiguous) {
          if (write.has(remote)) write.delete(remote);
          else retract.push({ itemId: prev.itemId, remote, providerId, tier: prev.tier });
        }
        this.claimedItems.delete(prev.itemId);
        this.claims.set(remote, { itemId: song.itemId, tier, ambiguous: false });
        this.claimedItems.add(song.itemId);
        write.set(remote, { itemId: song.itemId, remote, providerId, tier });
      } else if (tier === prev.tier && prev.itemId !== song.itemId) {
        // Two songs claim one remote track with equal evidence: when in doubt, write neither.
        if (!prev.ambiguous) {
          if (write.has(remote)) write.delete(remote);
          else retract.push({ itemId: prev.itemId, remote, providerId, tier: prev.tier });
          this.claimedItems.delete(prev.itemId);
        }
        this.claims.set(remote, { ...prev, ambiguous: true });
      }
    }
    return { write: [...write.values()], retract };
  }

  /** The first tier with a unique remote match for `song`. */
  private find(song: LocalSong): { remote: number; tier: Tier } | undefined {
    for (const tier of TIERS) {
      const keys = this.keys(song, tier);
      let hit: number | undefined;
      let conflict = false;
      for (const key of keys) {
        if (this.remote.isAmbiguous(tier, key)) conflict = true;
        const r = this.remote.lookup(tier, key);
        if (r === undefined) continue;
        if (hit !== undefined && hit !== r) conflict = true;
        hit = r;
      }
      if (conflict) return undefined;
      if (hit !== undefined) return { remote: hit, tier };
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

  /** Number of remote tracks currently matched (not ambiguous). */
  get matched(): number {
    let n = 0;
    for (const c of this.claims.values()) if (!c.ambiguous) n++;
    return n;
  }
}

/**
 * Pruning guard (spec: Setup-time alignment 4): a fetch holding fewer tracks than half of the
 * stored mappings looks partial, and nothing is pruned.
 */
export function pruneAllowed(fetchedCount: number, storedMappings: number): boolean {
  return fetchedCount >= storedMappings * 0.5;
}
