import type { ProviderTrack } from '@polyphony/media-servers';
import { exactMetaKey, hashKey, normMetaKey, normalizePath, pathTail } from './normalize';

/** Matching tiers in order of confidence (spec: Setup-time alignment 1). */
export const TIERS = ['path', 'tail', 'exact_meta', 'norm_meta'] as const;
export type Tier = (typeof TIERS)[number];

/** Marks a key that several remote tracks share: never matched on (ambiguous). */
const AMBIGUOUS = -1;

/** What the sweep refreshes on mapped rows (spec: Setup-time alignment 3). */
export interface RemoteDetails {
  providerId: string;
  album?: string;
  albumArtist?: string;
  year?: number;
  rating?: number;
  path?: string;
  artistId?: string;
  artist: string;
  durationSeconds?: number;
}

/**
 * The fetched catalogue of one server condensed to a slim lookup index: per tier a Map from a
 * 53-bit key hash to the track's position (or AMBIGUOUS), plus compact per-track columns for the
 * metadata refresh. Strings that repeat (albums, artists) are interned. Memory is roughly
 * 4 maps x N entries + the columns: about 150 bytes per track plus its strings.
 */
export class RemoteIndex {
  readonly providerIds: string[] = [];
  private readonly byTier: Record<Tier, Map<number, number>> = { path: new Map(), tail: new Map(), exact_meta: new Map(), norm_meta: new Map() };
  private readonly albums: Array<string | undefined> = [];
  private readonly albumArtists: Array<string | undefined> = [];
  private readonly artists: string[] = [];
  private readonly artistIds: Array<string | undefined> = [];
  private readonly paths: Array<string | undefined> = [];
  private readonly years: Array<number | undefined> = [];
  private readonly ratings: Array<number | undefined> = [];
  private readonly durations: Array<number | undefined> = [];
  private readonly intern = new Map<string, string>();
  private readonly positions = new Map<string, number>();

  /** Adds a page of fetched tracks. A provider id seen twice keeps its first record. */
  add(tracks: Iterable<ProviderTrack>): void {
    for (const t of tracks) {
      if (this.positions.has(t.id)) continue;
      const i = this.providerIds.length;
      this.providerIds.push(t.id);
      this.positions.set(t.id, i);
      this.albums.push(this.s(t.album));
      this.albumArtists.push(this.s(t.albumArtist));
      this.artists.push(this.s(t.artist) ?? '');
      this.artistIds.push(this.s(t.artistId));
      this.paths.push(t.path);
      this.years.push(t.year);
      this.ratings.push(t.rating);
      this.durations.push(t.durationSeconds);
      const path = normalizePath(t.path);
      this.put('path', path, i);
      this.put('tail', pathTail(path), i);
      this.put('exact_meta', exactMetaKey(t.title, t.artist, t.album), i);
      this.put('norm_meta', normMetaKey(t.title, t.artist, t.album), i);
    }
  }

  private s(v: string | undefined): string | undefined {
    if (v === undefined) return undefined;
    let hit = this.intern.get(v);
    if (hit === undefined) {
      hit = v;
      this.intern.set(v, v);
    }
    return hit;
  }

  private put(tier: Tier, key: string, i: number): void {
    if (!key) return;
    const h = hashKey(key);
    const map = this.byTier[tier];
    const prev = map.get(h);
    map.set(h, prev === undefined ? i : prev === i ? i : AMBIGUOUS);
  }

  get size(): number {
    return this.providerIds.length;
  }

  has(providerId: string): boolean {
    return this.positions.has(providerId);
  }

  /** Position of the unique remote track with this key in `tier`; undefined when none or ambiguous. */
  lookup(tier: Tier, key: string): number | undefined {
    if (!key) return undefined;
    const v = this.byTier[tier].get(hashKey(key));
    return v === undefined || v === AMBIGUOUS ? undefined : v;
  }

  /** True when several remote tracks share the key (the sweep then writes nothing for it). */
  isAmbiguous(tier: Tier, key: string): boolean {
    return Boolean(key) && this.byTier[tier].get(hashKey(key)) === AMBIGUOUS;
  }

  details(i: number): RemoteDetails {
    return {
      providerId: this.providerIds[i]!,
      album: this.albums[i],
      albumArtist: this.albumArtists[i],
      year: this.years[i],
      rating: this.ratings[i],
      path: this.paths[i],
      artistId: this.artistIds[i],
      artist: this.artists[i]!,
      durationSeconds: this.durations[i],
    };
  }

  position(providerId: string): number | undefined {
    return this.positions.get(providerId);
  }
}
