import { ArtistLinkCounter } from '../core/generation';
import { artistKey } from '../core/text';
import { LinkRecorder } from './snapshot-delta';

/** A song as the link recorder reads it: display artist and mappings (provider artist ids per server). */
const song = (itemId: string, artist: string, maps: Array<[string, string | null]>) => ({ itemId, artist, mappings: maps.map(([serverId, artistId], i) => ({ serverId, providerId: `${itemId}-${i}`, artistId })) });

describe('LinkRecorder (the delta snapshot keeps link counts, not majority links)', () => {
  it('When unchanged rows are copied from a base and changed ones recorded, then the counts give the links a full count gives', () => {
    const base = [song('a', 'Alpha', [['s1', 'x'], ['s2', 'y']]), song('b', 'Alpha', [['s1', 'x']]), song('c', 'Alpha', [['s1', 'z']]), song('d', 'Beta', [['s1', null]])];
    const skipped = song('e', 'Alpha', [['s1', 'z']]);
    const rec = new LinkRecorder();
    base.forEach((t) => rec.row(t));
    rec.skip(skipped);
    expect(rec.rows).toBe(4);

    // Rebuild: b changed to provider artist z (now z has 3 votes against x's 1), d removed, a kept, e still left out.
    const next = new LinkRecorder();
    next.copyRow(rec, 0);
    next.row(song('b', 'Alpha', [['s1', 'z']]));
    next.copyRow(rec, 2);
    for (const [id, refs] of rec.skipped) next.copySkipped(rec, id, refs);
    const delta = new ArtistLinkCounter();
    next.countInto(delta);

    const full = new ArtistLinkCounter();
    for (const t of [base[0]!, song('b', 'Alpha', [['s1', 'z']]), base[2]!, skipped]) for (const m of t.mappings) if (m.artistId) full.add(m.serverId, artistKey(t.artist), m.artistId);
    const entries = (c: ArtistLinkCounter) => [...c.finish().entries()].map((e) => `${e.serverId}|${e.providerId}`).sort();
    expect(entries(delta)).toEqual(entries(full));
    expect(entries(delta)).toEqual(['s1|z', 's2|y']);
  });

  it('When a recorder is stored (encode) and read back (decode), then copying from it gives the contributions copying from the original gives', () => {
    const rec = new LinkRecorder();
    rec.row(song('a', 'Alpha', [['s1', 'x'], ['s2', 'y']]));
    rec.row(song('b', 'Beta', [['s1', null]]));
    rec.row(song('c', 'Gamma \u00e9', [['s1', 'z'], ['s1', 'x']]));
    rec.skip(song('d', 'Alpha', [['s2', 'w']]));
    const back = LinkRecorder.decode(rec.encode());
    expect(back.rows).toBe(3);
    expect([...back.skipped.keys()]).toEqual(['d']);
    const copied = (from: LinkRecorder) => {
      const next = new LinkRecorder();
      for (let r = 0; r < from.rows; r++) next.copyRow(from, r);
      for (const [id, refs] of from.skipped) next.copySkipped(from, id, refs);
      const counts = new ArtistLinkCounter();
      next.countInto(counts);
      return [...counts.finish().entries()].map((e) => `${e.serverId}|${e.key}|${e.providerId}`).sort();
    };
    expect(copied(back)).toEqual(copied(rec));
    // Ties go to the smaller provider id (gamma: x over z; alpha on s2: the left-out song's w over y).
    const [alpha, gamma] = [artistKey('Alpha'), artistKey('Gamma \u00e9')];
    expect(copied(back)).toEqual([`s1|${alpha}|x`, `s1|${gamma}|x`, `s2|${alpha}|w`].sort());
    // Row 1 has no contribution, row 2 two: the row boundaries survive, not only the totals.
    const one = new LinkRecorder();
    one.copyRow(back, 2);
    const counts = new ArtistLinkCounter();
    one.countInto(counts);
    expect([...counts.finish().entries()].map((e) => e.providerId)).toEqual(['x']);
  });

  it('When stored bytes are cut short or of another format, then decode refuses them', () => {
    const rec = new LinkRecorder();
    rec.row(song('a', 'Alpha', [['s1', 'x']]));
    const bytes = rec.encode();
    expect(() => LinkRecorder.decode(bytes.subarray(0, bytes.length - 4))).toThrow(/lengths disagree|truncated/);
    const other = Buffer.from(bytes);
    other.writeUInt32LE(7, 0);
    expect(() => LinkRecorder.decode(other)).toThrow(/unknown format/);
  });
});
