import type { ProviderTrack } from '@polyphony/media-servers';
import { AMBIGUOUS, HASH, InternedColumn, KeyTable, NumberColumn, StringArena, hash64 } from './compact';
import { discTrackOf, exactMetaKey, normMetaKey, normalizePath, pathTail } from './normalize';

/** Matching tiers in order of confidence (spec: Setup-time alignment 1). */
export const TIERS = ['path', 'tail', 'exact_meta', 'norm_meta'] as const;
export type Tier = (typeof TIERS)[number];

/** The metadata tiers, where a tie between remote tracks may be broken by the file name's (disc, track). */
export type MetaTier = 'exact_meta' | 'norm_meta';

/** True for the metadata tiers. */
export function isMetaTier(tier: Tier): tier is MetaTier {
  return tier === 'exact_meta' || tier === 'norm_meta';
}

/** Something that answers membership (a Set, or a view over the index's flags). */
export interface HasLike {
  has(value: string): boolean;
}

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
  /** The library the listing found the file in (issue 34; undefined where the kind has none). */
  libraryId?: string;
  /** The file's stamp as listed (issue 35; undefined where the kind gives none). */
  fileStamp?: string;
}

/**
 * The fetched catalogue of one server condensed to a slim lookup index (spec "Setup-time alignment" 6).
 *
 * Per tier a sorted table of 64-bit key hashes -> the track's position (or AMBIGUOUS when several
 * tracks share the key); metadata keys also carry a table keyed by key + the file name's (disc, track),
 * the tie-break of a shared metadata key. Per track only what the sweep writes back is kept: provider
 * id and path packed as UTF-8 (compact.ts StringArena), repeating names interned to 32-bit codes, year,
 * rating and duration in typed columns. No title is kept (only its hashed keys). About 230 bytes per
 * track at 500k tracks (bench/src/catalogue-identity/sweep-500k.ts).
 *
 * Tracks are appended page by page with {@link add}; the first lookup sorts the tables (append the whole
 * listing before looking up: a lookup between appends sorts early, and a repeated provider id seen by
 * two sorts may leave its keys ambiguous). A provider id listed twice keeps its first record (the later
 * one is dropped when the tables are sorted).
 */
export class RemoteIndex {
  private readonly ids = new StringArena();
  private readonly paths = new StringArena();
  private readonly albums = new InternedColumn();
  private readonly albumArtists = new InternedColumn();
  private readonly artists = new InternedColumn();
  private readonly artistIds = new InternedColumn();
  /** Library of each track (few distinct values: interned). Issue 34. */
  private readonly libraryIds = new InternedColumn();
  /** File stamp of each track (issue 35). */
  private readonly stamps = new StringArena();
  private readonly years = new NumberColumn(true);
  private readonly ratings = new NumberColumn(true);
  private readonly durations = new NumberColumn();
  /** Provider id hash -> position (equal hashes kept apart; ids compared on lookup). */
  private readonly byId = new KeyTable(false);
  private readonly byTier: Record<Tier, KeyTable> = { path: new KeyTable(true), tail: new KeyTable(true), exact_meta: new KeyTable(true), norm_meta: new KeyTable(true) };
  /** Metadata key + (disc, track) of the file name -> position (or AMBIGUOUS). */
  private readonly byTierDiscTrack: Record<MetaTier, KeyTable> = { exact_meta: new KeyTable(true), norm_meta: new KeyTable(true) };
  /** Per position: 1 when the position repeats an earlier provider id (dropped). */
  private dead = new Uint8Array(0);
  private deadCount = 0;
  /** Per position: 1 when the provider id already has a mapping on the server (see {@link markMapped}). */
  private mapped = new Uint8Array(0);
  private sealedAt = 0;

  /** Appends a page of fetched tracks. */
  add(tracks: Iterable<ProviderTrack>): void {
    for (const t of tracks) {
      const i = this.ids.add(t.id);
      hash64(t.id);
      this.byId.add(HASH[0]!, HASH[1]!, i);
      this.paths.add(t.path);
      this.albums.add(t.album);
      this.albumArtists.add(t.albumArtist);
      this.artists.add(t.artist);
      this.artistIds.add(t.artistId);
      this.libraryIds.add(t.libraryId);
      this.stamps.add(t.fileStamp);
      this.years.add(t.year);
      this.ratings.add(t.rating);
      this.durations.add(t.durationSeconds);
      const path = normalizePath(t.path);
      this.put(this.byTier.path, path, i);
      this.put(this.byTier.tail, pathTail(path), i);
      const exact = exactMetaKey(t.title, t.artist, t.album);
      const norm = normMetaKey(t.title, t.artist, t.album);
      this.put(this.byTier.exact_meta, exact, i);
      this.put(this.byTier.norm_meta, norm, i);
      const dt = discTrackOf(path);
      if (dt) {
        if (exact) this.put(this.byTierDiscTrack.exact_meta, `${exact}\u0002${dt}`, i);
        if (norm) this.put(this.byTierDiscTrack.norm_meta, `${norm}\u0002${dt}`, i);
      }
    }
  }

  private put(table: KeyTable, key: string, i: number): void {
    if (!key) return;
    hash64(key);
    table.add(HASH[0]!, HASH[1]!, i);
  }

  /**
   * Sorts the tables once after appends: repeated provider ids are found (the first position wins) and
   * their later positions dropped from every tier.
   */
  private seal(): void {
    const total = this.ids.size;
    if (this.sealedAt === total) return;
    for (const c of [this.ids, this.paths, this.albums, this.albumArtists, this.artists, this.artistIds, this.libraryIds, this.stamps, this.years, this.ratings, this.durations]) c.trim();
    this.byId.seal();
    if (this.dead.length < total) {
      const d = new Uint8Array(total);
      d.set(this.dead);
      this.dead = d;
    }
    // Repeated provider ids share a 64-bit hash: only those (rare) runs are compared as strings.
    let newlyDead = false;
    for (const run of this.byId.repeatedKeys()) {
      for (let b = 1; b < run.length; b++) {
        const i = run[b]!;
        if (this.dead[i] === 1) continue;
        const id = this.ids.get(i)!;
        if (run.slice(0, b).some((j) => this.dead[j] === 0 && this.ids.equals(j, id))) {
          this.dead[i] = 1;
          this.deadCount++;
          newlyDead = true;
        }
      }
    }
    const drop = newlyDead ? this.dead : undefined;
    for (const t of TIERS) this.byTier[t].seal(drop);
    this.byTierDiscTrack.exact_meta.seal(drop);
    this.byTierDiscTrack.norm_meta.seal(drop);
    if (this.mapped.length < total) {
      const m = new Uint8Array(total);
      m.set(this.mapped);
      this.mapped = m;
    }
    this.sealedAt = total;
  }

  /** Distinct provider ids listed. */
  get size(): number {
    this.seal();
    return this.ids.size - this.deadCount;
  }

  /** Tracks received so far, repeats included (cheap: for progress while fetching). */
  get received(): number {
    return this.ids.size;
  }

  /** Positions in use (valid positions are 0 .. slots-1; a dropped repeat leaves its slot unused). */
  get slots(): number {
    return this.ids.size;
  }

  /** Provider id at position `i`. */
  providerId(i: number): string {
    return this.ids.get(i)!;
  }

  has(providerId: string): boolean {
    return this.position(providerId) !== undefined;
  }

  /** Position of the unique remote track with this key in `tier`; undefined when none or ambiguous. */
  lookup(tier: Tier, key: string): number | undefined {
    if (!key) return undefined;
    this.seal();
    hash64(key);
    const v = this.byTier[tier].get(HASH[0]!, HASH[1]!);
    return v === undefined || v === AMBIGUOUS ? undefined : v;
  }

  /** True when several remote tracks share the key (the sweep then writes nothing for it). */
  isAmbiguous(tier: Tier, key: string): boolean {
    if (!key) return false;
    this.seal();
    hash64(key);
    return this.byTier[tier].get(HASH[0]!, HASH[1]!) === AMBIGUOUS;
  }

  /**
   * Tie-break of an ambiguous metadata key: the unique remote track with this key whose file name
   * carries the (disc, track) `dt` (see {@link discTrackOf}); undefined when none or several.
   */
  lookupTieBreak(tier: MetaTier, key: string, dt: string): number | undefined {
    if (!key || !dt) return undefined;
    this.seal();
    hash64(`${key}\u0002${dt}`);
    const v = this.byTierDiscTrack[tier].get(HASH[0]!, HASH[1]!);
    return v === undefined || v === AMBIGUOUS ? undefined : v;
  }

  /** The (disc, track) of the file name of remote track `i` ('' when its name has none). */
  discTrack(i: number): string {
    return discTrackOf(normalizePath(this.paths.get(i)));
  }

  /**
   * Flags `providerId` as already mapped on the server (the matcher leaves it alone).
   * @returns false when the id is not in the fetched catalogue (a stale mapping).
   */
  markMapped(providerId: string): boolean {
    const i = this.position(providerId);
    if (i === undefined) return false;
    this.mapped[i] = 1;
    return true;
  }

  /** Whether {@link markMapped} flagged the provider id. */
  isMapped(providerId: string): boolean {
    const i = this.position(providerId);
    return i !== undefined && this.mapped[i] === 1;
  }

  /** Membership view over the mapped flags, for {@link SweepMatcher}'s `mappedProviderIds`. */
  mappedView(): HasLike {
    return { has: (providerId: string) => this.isMapped(providerId) };
  }

  /** Provider artist id -> artist name over the fetched tracks (first name seen per id). */
  artistLinks(): Map<string, string> {
    this.seal();
    const out = new Map<string, string>();
    for (let i = 0; i < this.ids.size; i++) {
      if (this.dead[i] === 1) continue;
      const id = this.artistIds.get(i);
      const name = this.artists.get(i);
      if (id && name && !out.has(id)) out.set(id, name);
    }
    return out;
  }

  /** The server's file path of remote track `i`. */
  path(i: number): string | undefined {
    return this.paths.get(i);
  }

  /** The provider artist id of remote track `i`. */
  artistId(i: number): string | undefined {
    return this.artistIds.get(i);
  }

  /** The file stamp of remote track `i` (undefined where the listing gave none). */
  fileStamp(i: number): string | undefined {
    return this.stamps.get(i);
  }

  /** The library of remote track `i` (undefined where the listing gave none). */
  libraryId(i: number): string | undefined {
    return this.libraryIds.get(i);
  }

  /** Listed duration of remote track `i`, seconds (undefined when the server gave none). */
  duration(i: number): number | undefined {
    return this.durations.get(i);
  }

  details(i: number): RemoteDetails {
    return {
      providerId: this.ids.get(i)!,
      album: this.albums.get(i),
      albumArtist: this.albumArtists.get(i),
      year: this.years.get(i),
      rating: this.ratings.get(i),
      path: this.paths.get(i),
      artistId: this.artistIds.get(i),
      artist: this.artists.get(i) ?? '',
      durationSeconds: this.durations.get(i),
      libraryId: this.libraryIds.get(i),
      fileStamp: this.stamps.get(i),
    };
  }

  /** Position of a listed provider id (its first listing), or undefined. */
  position(providerId: string): number | undefined {
    this.seal();
    hash64(providerId);
    for (const j of this.byId.values(HASH[0]!, HASH[1]!)) if (this.dead[j] === 0 && this.ids.equals(j, providerId)) return j;
    return undefined;
  }
}
