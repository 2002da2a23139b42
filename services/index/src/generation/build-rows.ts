/**
 * The rows of a build in build order and their artists (index per distinct folded artist key, -1 = no artist),
 * filled batch by batch by the input that feeds the IVF build (the snapshot pages or the catalogue copy).
 */
export class BuildRows {
  count = 0;
  lastId: string | undefined;
  artistKeys: string[] = [];
  artistNames: string[] = [];
  private keyToArtist = new Map<string, number>();
  private artistOf = new Int32Array(1024);

  /** Appends one batch: canonical ids, folded artist keys and display names, same length. */
  add(ids: readonly string[], keys: readonly string[], names: readonly string[]): void {
    if (this.count + ids.length > this.artistOf.length) {
      const grown = new Int32Array(Math.max(this.count + ids.length, this.artistOf.length * 2));
      grown.set(this.artistOf.subarray(0, this.count));
      this.artistOf = grown;
    }
    keys.forEach((key, i) => {
      let a = this.keyToArtist.get(key);
      if (a === undefined) {
        a = this.artistKeys.length;
        this.keyToArtist.set(key, a);
        this.artistKeys.push(key);
        this.artistNames.push(names[i]!);
      }
      this.artistOf[this.count + i] = key ? a : -1;
    });
    this.count += ids.length;
    if (ids.length) this.lastId = ids[ids.length - 1];
  }

  /** Forgets every row (the build starts over from another input). */
  reset(): void {
    this.count = 0;
    this.lastId = undefined;
    this.artistKeys = [];
    this.artistNames = [];
    this.keyToArtist = new Map();
    this.artistOf = new Int32Array(1024);
  }

  /** Artist index of each row (`count` entries). */
  artistOfRow(): Int32Array {
    return this.artistOf.subarray(0, this.count);
  }
}
