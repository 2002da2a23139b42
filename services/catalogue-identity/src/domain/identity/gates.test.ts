import { DEFAULT_IDENTITY_CONFIG, IdentityConfig } from './constants';
import {
  durationsAgree,
  evaluateGates,
  folderVeto,
  isSameFile,
  normalisePath,
  sameFolderDifferentFile,
} from './gates';
import type { TrackEvidence } from './identity-candidate-source';
import { file, perturb, randomEmbedding, rng } from './__tests__/factories';

describe(durationsAgree.name, () => {
  it.each([
    [200, 200.9, true],
    [200, 201, true],
    [200, 201.01, false],
    [200, 185, false],
    [null, 200, false],
    [200, null, false],
    [0, 0, false],
    [-3, -3, false],
    [NaN, 200, false],
    [Infinity, Infinity, false],
  ])('When durations are %p and %p with tolerance 1 s, then agreement is %p', (a, b, expected) => {
    expect(durationsAgree(a, b, 1)).toBe(expected);
  });
});

describe('folder veto', () => {
  it('When paths differ only in separators, case or dot segments, then they normalise alike', () => {
    expect(normalisePath('C:\\Music\\Album\\01.flac')).toBe('c:/music/album/01.flac');
    expect(normalisePath('/music//Album/./01.flac')).toBe('/music/album/01.flac');
    expect(normalisePath('')).toBeNull();
    expect(normalisePath(null)).toBeNull();
  });

  it('When two different files share a folder on one server, then they are vetoed', () => {
    expect(sameFolderDifferentFile(file('s1', 'a', '/m/Album/01.flac'), file('s1', 'b', '/m/album/02.flac'))).toBe(true);
  });

  it('When the files are on different servers, in different folders, the same file, or a path is unknown, then there is no veto', () => {
    expect(sameFolderDifferentFile(file('s1', 'a', '/m/album/01.flac'), file('s2', 'b', '/m/album/02.flac'))).toBe(false);
    expect(sameFolderDifferentFile(file('s1', 'a', '/m/album/01.flac'), file('s1', 'b', '/m/other/01.flac'))).toBe(false);
    expect(sameFolderDifferentFile(file('s1', 'a', '/m/album/01.flac'), file('s1', 'a', '/m/album/01-renamed.flac'))).toBe(false);
    expect(sameFolderDifferentFile(file('s1', 'a', '/m/album/01.flac'), file('s1', 'b', '/M/Album/01.FLAC'))).toBe(false);
    expect(sameFolderDifferentFile(file('s1', 'a', null), file('s1', 'b', '/m/album/02.flac'))).toBe(false);
    expect(isSameFile(file('s1', 'a', '/x/1.flac'), file('s1', 'b', '/X/1.flac'))).toBe(true);
  });

  it('When any pair of two file sets vetoes, then the sets veto', () => {
    const a = [file('s1', 'a', '/m/x/1.flac'), file('s2', 'c', '/n/y/1.flac')];
    expect(folderVeto(a, [file('s2', 'd', '/n/y/2.flac')])).toBe(true);
    expect(folderVeto(a, [file('s3', 'd', '/n/y/2.flac')])).toBe(false);
  });
});

describe(evaluateGates.name, () => {
  const r = rng(21);
  const e = randomEmbedding(r);
  const print = Int32Array.from({ length: 200 }, () => Math.floor(r() * 2 ** 32) | 0);
  const side = (over: Partial<TrackEvidence> = {}): TrackEvidence => ({
    embedding: e,
    durationSeconds: 200,
    chromaprint: null,
    files: [file('s1', 'a', '/m/album1/01.flac')],
    ...over,
  });
  const other = (over: Partial<TrackEvidence> = {}): TrackEvidence =>
    side({ embedding: perturb(e, 0.02, r), durationSeconds: 200.4, files: [file('s2', 'z', '/m/album1/01.flac')], ...over });
  const config = (over: Partial<IdentityConfig> = {}): IdentityConfig => ({ ...DEFAULT_IDENTITY_CONFIG, ...over });

  it('When every gate agrees, then the report says same with each gate passed', () => {
    const report = evaluateGates(side({ chromaprint: print }), other({ chromaprint: Int32Array.from(print) }), config());
    expect(report).toMatchObject({ folder: 'pass', duration: 'pass', cosine: 'pass', chromaprint: 'pass', chromaprintSimilarity: 1, same: true });
    expect(report.cosineDistance).toBeLessThan(0.01);
  });

  it('When the folder vetoes, then later gates are skipped and the answer is different', () => {
    const report = evaluateGates(side(), other({ files: [file('s1', 'b', '/m/album1/02.flac')] }), config());
    expect(report).toMatchObject({ folder: 'fail', duration: 'skipped', cosine: 'skipped', chromaprint: 'skipped', same: false });
  });

  it('When a duration is unknown, then scheme 4 splits but scheme 2 (no duration gate) does not', () => {
    expect(evaluateGates(side(), other({ durationSeconds: null }), config()).duration).toBe('fail');
    expect(evaluateGates(side(), other({ durationSeconds: null }), config()).same).toBe(false);
    const v2 = evaluateGates(side(), other({ durationSeconds: null }), config({ schemeVersion: 2 }));
    expect(v2).toMatchObject({ duration: 'off', cosine: 'pass', same: true });
  });

  it('When durations differ by more than the tolerance, then the answer is different', () => {
    expect(evaluateGates(side(), other({ durationSeconds: 202 }), config()).same).toBe(false);
    expect(evaluateGates(side(), other({ durationSeconds: 202 }), config({ durationToleranceSeconds: 3 })).same).toBe(true);
  });

  it('When the cosine distance exceeds the threshold, then the answer is different', () => {
    const report = evaluateGates(side(), other({ embedding: perturb(e, 0.3, r) }), config());
    expect(report.cosine).toBe('fail');
    expect(report.cosineDistance).toBeGreaterThan(0.01);
    expect(report.same).toBe(false);
  });

  it('When the fingerprints disagree, then the Chromaprint gate fails; when disabled it is off', () => {
    const foreign = Int32Array.from({ length: 200 }, () => Math.floor(r() * 2 ** 32) | 0);
    expect(evaluateGates(side({ chromaprint: print }), other({ chromaprint: foreign }), config())).toMatchObject({ chromaprint: 'fail', same: false });
    expect(evaluateGates(side({ chromaprint: print }), other({ chromaprint: foreign }), config({ chromaprintGateEnabled: false }))).toMatchObject({
      chromaprint: 'off',
      same: true,
    });
  });

  it('When a fingerprint is missing or too short to align, then the Chromaprint gate abstains', () => {
    expect(evaluateGates(side({ chromaprint: print }), other(), config())).toMatchObject({ chromaprint: 'abstain', same: true });
    expect(evaluateGates(side({ chromaprint: print.slice(0, 10) }), other({ chromaprint: print }), config())).toMatchObject({ chromaprint: 'abstain', same: true });
  });
});
