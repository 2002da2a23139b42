import { DEFAULT_IDENTITY_CONFIG, IdentityConfig } from './constants';
import { InMemoryRelabelSource, applyRelabelPlans } from './in-memory-relabel-source';
import { RelabelChunkPlan, RelabelRow, RelabelSummary, isCurrentId, planRelabel, verifyGroup } from './relabel';
import { computeSignature, formatCanonicalId, nextCode, unsignableCanonicalId } from './signature';
import { mapping, perturb, randomEmbedding, rng, row, sameSignatureDifferentSong } from './__tests__/factories';

const config = (over: Partial<IdentityConfig> = {}): IdentityConfig => ({ ...DEFAULT_IDENTITY_CONFIG, ...over });

function sigOf(e: ArrayLike<number>): Uint32Array {
  const s = computeSignature(e);
  if (!s.ok) throw new Error('unsignable');
  return s.code;
}

async function run(
  rows: RelabelRow[],
  c: IdentityConfig = config(),
  chunkSize = 1000,
): Promise<{ plans: RelabelChunkPlan[]; summary: RelabelSummary; source: InMemoryRelabelSource; after: RelabelRow[] }> {
  const source = new InMemoryRelabelSource(rows);
  const plans: RelabelChunkPlan[] = [];
  const summary = await planRelabel(source, c, async (p) => void plans.push(p), { chunkSize });
  return { plans, summary, source, after: applyRelabelPlans(rows, plans) };
}

const relabelsOf = (plans: RelabelChunkPlan[]) => plans.flatMap((p) => p.relabels);
const detachedOf = (plans: RelabelChunkPlan[]) => plans.flatMap((p) => p.detached);

describe(isCurrentId.name, () => {
  it('When an id has the target version or is unsignable, then it is current; legacy and older ids are not', () => {
    const hex = '0'.repeat(50);
    expect(isCurrentId(`fp_4${hex}`, 4)).toBe(true);
    expect(isCurrentId(`fp_0${hex}`, 4)).toBe(true);
    expect(isCurrentId(`fp_3${hex}`, 4)).toBe(false);
    expect(isCurrentId('8f2c1a0d9e', 4)).toBe(false);
  });
});

describe(planRelabel.name, () => {
  it('When legacy provider-keyed rows are relabelled, then each gets its signature id and copies merge', async () => {
    const r = rng(1);
    const songs = Array.from({ length: 6 }, () => randomEmbedding(r));
    const rows = songs.map((e, i) => row(`jf-${i}`, e, 200 + i * 10, [mapping('jf', `jf-${i}`, `/m/a${i}/01.flac`, 200 + i * 10)]));
    // A pre-v3 duplicate: the same recording analysed again from another server.
    rows.push(row('nd-77', perturb(songs[2] as Float64Array, 0.01, r), 220.3, [mapping('nd', 'nd-77', '/n/a2/01.flac', 220.3)]));

    const { plans, summary, after } = await run(rows);
    const relabels = relabelsOf(plans);
    expect(relabels.filter((x) => x.kind === 'relabel').map((x) => x.newId)).toEqual(songs.map((e) => formatCanonicalId(4, sigOf(e))));
    expect(relabels.find((x) => x.oldId === 'nd-77')).toEqual({ oldId: 'nd-77', newId: formatCanonicalId(4, sigOf(songs[2] as Float64Array)), kind: 'merge' });
    expect(summary).toMatchObject({ currentRows: 0, legacyRows: 7, relabelled: 6, merged: 1, detachedMappings: 0 });
    expect(after).toHaveLength(6);
    expect(after[2]?.mappings.map((m) => m.providerId)).toEqual(['jf-2', 'nd-77']);
  });

  it('When run again on its own output, then nothing is planned (idempotent)', async () => {
    const r = rng(2);
    const rows = Array.from({ length: 20 }, (_, i) => {
      const e = randomEmbedding(r);
      return row(`legacy-${i}`, e, 180 + i, [mapping('jf', `legacy-${i}`, `/m/${i}/1.flac`, 180 + i), mapping('nd', `n${i}`, `/n/${i}/1.flac`, i % 4 === 0 ? 150 : 180 + i)]);
    });
    const first = await run(rows, config(), 7);
    expect(first.summary.relabelled).toBe(20);
    expect(first.summary.detachedMappings).toBe(5);
    const second = await run(first.after, config(), 7);
    expect(second.plans).toEqual([]);
    expect(second.summary).toMatchObject({ currentRows: 20, legacyRows: 0, relabelled: 0, merged: 0, detachedMappings: 0 });
    expect(second.after).toEqual(first.after);
  });

  it('When rows come in small chunks, then one plan per chunk is emitted and duplicates across chunks still merge', async () => {
    const r = rng(3);
    const songs = Array.from({ length: 9 }, () => randomEmbedding(r));
    const rows = songs.map((e, i) => row(`p${i}`, e, 200, [mapping('jf', `p${i}`, `/m/${i}/1.flac`, 200)]));
    rows.push(row('q0', perturb(songs[0] as Float64Array, 0.01, r), 200.5, [mapping('pl', 'q0', '/p/0/1.flac', 200.5)]));
    const { plans, summary, source } = await run(rows, config(), 3);
    expect(plans.map((p) => p.chunk)).toEqual([0, 1, 2, 3]);
    expect(plans.map((p) => p.relabels.length)).toEqual([3, 3, 3, 1]);
    expect(plans[3]?.relabels[0]).toMatchObject({ oldId: 'q0', kind: 'merge', newId: formatCanonicalId(4, sigOf(songs[0] as Float64Array)) });
    // The merge target lives in an earlier chunk, so it was fetched from the source, not kept in memory.
    expect(source.loadedRows).toBeGreaterThanOrEqual(1);
    expect(summary.loadedRows).toBe(source.loadedRows);
  });

  it('When fp_3 rows move to fp_4, then ids keep their hex, and a collision pair stays apart in the same order', async () => {
    const r = rng(4);
    const e = randomEmbedding(r);
    const twin = sameSignatureDifferentSong(e, r);
    const sig = sigOf(e);
    const rows = [
      row(formatCanonicalId(3, sig), e, 200, [mapping('jf', 'a', '/m/x/1.flac', 200)]),
      row(formatCanonicalId(3, nextCode(sig)), twin, 200, [mapping('jf', 'b', '/m/y/1.flac', 200)]),
    ];
    const { plans } = await run(rows);
    expect(relabelsOf(plans)).toEqual([
      { oldId: formatCanonicalId(3, sig), newId: formatCanonicalId(4, sig), kind: 'relabel' },
      { oldId: formatCanonicalId(3, nextCode(sig)), newId: formatCanonicalId(4, nextCode(sig)), kind: 'relabel' },
    ]);
  });

  it('When a legacy row has the signature of a current row but different audio, then it skips the taken id', async () => {
    const r = rng(5);
    const e = randomEmbedding(r);
    const sig = sigOf(e);
    const rows = [
      // Legacy row first in scan order: it must still not take the current row's id.
      row('legacy-1', sameSignatureDifferentSong(e, r), 200, [mapping('jf', 'legacy-1', '/m/y/1.flac', 200)]),
      row(formatCanonicalId(4, sig), e, 200, [mapping('jf', 'cur', '/m/x/1.flac', 200)]),
    ];
    const { plans, summary } = await run(rows);
    expect(relabelsOf(plans)).toEqual([{ oldId: 'legacy-1', newId: formatCanonicalId(4, nextCode(sig)), kind: 'relabel' }]);
    expect(summary).toMatchObject({ currentRows: 1, collisions: 1 });
  });

  it('When a legacy row is a copy of a current row, then it merges into the current row', async () => {
    const r = rng(6);
    const e = randomEmbedding(r);
    const current = formatCanonicalId(4, sigOf(e));
    const rows = [row(current, e, 200, [mapping('jf', 'cur', '/m/x/1.flac', 200)]), row('old-9', perturb(e, 0.01, r), 200.2, [mapping('nd', 'old-9', '/n/x/1.flac', 200.2)])];
    const { plans, after } = await run(rows);
    expect(relabelsOf(plans)).toEqual([{ oldId: 'old-9', newId: current, kind: 'merge' }]);
    expect(after).toHaveLength(1);
    expect(after[0]?.mappings.map((m) => m.serverId)).toEqual(['jf', 'nd']);
  });

  it('When fp_4 re-verifies a merged group, then files of another length, unknown length or the same folder are split off', async () => {
    const e = randomEmbedding(rng(7));
    const group = row(
      formatCanonicalId(3, sigOf(e)),
      e,
      241.2,
      [
        mapping('nd', 'n1', '/n/live/03.flac', 262.0), // listed first but another length
        mapping('jf', 'j1', '/m/studio/03.flac', 241.0), // the analysed file (path matches)
        mapping('pl', 'p1', '/p/studio/03.flac', 241.9), // same song elsewhere: stays
        mapping('pl', 'p2', '/p/comp/11.flac', null), // unknown duration: split
        mapping('jf', 'j2', '/m/studio/03 (alt take).flac', 241.5), // same folder as j1: split
      ],
      { filePath: '/m/studio/03.flac' },
    );
    const { plans, after } = await run([group]);
    expect(detachedOf(plans).map((d) => [d.providerId, d.reason])).toEqual([
      ['n1', 'duration-mismatch'],
      ['p2', 'unknown-duration'],
      ['j2', 'same-folder'],
    ]);
    expect(after[0]?.mappings.map((m) => m.providerId)).toEqual(['j1', 'p1']);
    expect(after[0]?.oldId).toBe(formatCanonicalId(4, sigOf(e)));
  });

  it('When the target is fp_3, then merged groups are relabelled but not split', async () => {
    const e = randomEmbedding(rng(8));
    const group = row(formatCanonicalId(2, sigOf(e)), e, 241, [mapping('jf', 'j1', '/m/a/1.flac', 241), mapping('nd', 'n1', '/n/b/1.flac', 300)]);
    const { plans, after } = await run([group], config({ schemeVersion: 3 }));
    expect(detachedOf(plans)).toEqual([]);
    expect(after[0]).toMatchObject({ oldId: formatCanonicalId(3, sigOf(e)) });
    expect(after[0]?.mappings).toHaveLength(2);
  });

  it('When a legacy row has no valid embedding, then it goes to fp_0 of its first file and, under fp_4, its other files are split off', async () => {
    const rows = [
      row('legacy-x', new Float64Array(200).fill(1), 200, [mapping('jf', 'x1', '/m/a/1.flac', 200), mapping('nd', 'x2', '/n/a/1.flac', 200)]),
      row('legacy-y', null, null, []),
    ];
    const { plans, summary } = await run(rows);
    expect(relabelsOf(plans)).toEqual([
      { oldId: 'legacy-x', newId: unsignableCanonicalId('jf', 'x1'), kind: 'unsignable' },
      { oldId: 'legacy-y', newId: expect.stringMatching(/^fp_0[0-9a-f]{50}$/), kind: 'unsignable' },
    ]);
    expect(detachedOf(plans)).toEqual([{ oldId: 'legacy-x', serverId: 'nd', providerId: 'x2', reason: 'unsignable-group' }]);
    expect(summary.unsignable).toBe(2);
  });

  it('When the source ignores the selection hint, then the plan is the same and the extra rows are counted', async () => {
    const r = rng(9);
    const e = randomEmbedding(r);
    const rows = [row(formatCanonicalId(4, sigOf(e)), e, 200, [mapping('jf', 'a', '/m/1.flac', 200)]), row('old', randomEmbedding(r), 190, [mapping('jf', 'b', '/m/x/2.flac', 190)])];
    const sloppy = new InMemoryRelabelSource(rows);
    sloppy.scan = async function* (): AsyncIterable<readonly RelabelRow[]> {
      yield rows;
    };
    const plans: RelabelChunkPlan[] = [];
    const summary = await planRelabel(sloppy, config(), async (p) => void plans.push(p));
    const strict = await run(rows);
    expect(plans).toEqual(strict.plans);
    expect(summary.ignoredRows).toBe(2);
  });

  it('When the same rows are planned twice, then the plans are identical (deterministic)', async () => {
    const r = rng(10);
    const base = Array.from({ length: 30 }, () => randomEmbedding(r));
    const rows = base.map((e, i) => row(`k${i}`, i % 3 === 0 ? sameSignatureDifferentSong(base[0] as Float64Array, r) : e, 200, [mapping('jf', `k${i}`, `/m/${i}/1.flac`, 200)]));
    const a = await run(rows, config(), 4);
    const b = await run(rows, config(), 4);
    expect(a.plans).toEqual(b.plans);
    expect(new Set(relabelsOf(a.plans).map((x) => x.newId)).size).toBe(30);
  });
});

describe(verifyGroup.name, () => {
  it('When nothing identifies the analysed file, then the first mapping anchors the group', () => {
    const g = verifyGroup(row('x', null, null, [mapping('jf', 'a', '/m/a/1.flac', 200), mapping('nd', 'b', '/n/a/1.flac', 200.4), mapping('nd', 'c', '/n/b/1.flac', 230)]), 1);
    expect(g.kept.map((m) => m.providerId)).toEqual(['a', 'b']);
    expect(g.detached.map((d) => [d.mapping.providerId, d.reason])).toEqual([['c', 'duration-mismatch']]);
    expect(g.durationSeconds).toBe(200);
  });

  it('When neither the row nor the anchor has a duration, then every other file is split off', () => {
    const g = verifyGroup(row('x', null, null, [mapping('jf', 'a', '/m/a/1.flac', null), mapping('nd', 'b', '/n/a/1.flac', 200)]), 1);
    expect(g.kept.map((m) => m.providerId)).toEqual(['a']);
    expect(g.detached[0]?.reason).toBe('unknown-duration');
  });

  it('When the row duration matches a later mapping, then that mapping anchors', () => {
    const g = verifyGroup(row('x', null, 300, [mapping('jf', 'a', '/m/a/1.flac', 250), mapping('nd', 'b', '/n/a/1.flac', 300.5)]), 1);
    expect(g.kept.map((m) => m.providerId)).toEqual(['b']);
    expect(g.detached.map((d) => d.mapping.providerId)).toEqual(['a']);
  });
});
