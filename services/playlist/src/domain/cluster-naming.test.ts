import { energyLevel, profileCluster, tempoBand, uniqueNames, type SongDescriptors } from './cluster-naming';

const song = (tempo: number | null, key: string | null, scale: string | null, energy: number | null): SongDescriptors => ({ tempo, key, scale, energy });

describe('cluster naming', () => {
  it.each([
    [60, 'Slow'],
    [89.9, 'Slow'],
    [90, 'Moderate'],
    [114, 'Moderate'],
    [115, 'Upbeat'],
    [139, 'Upbeat'],
    [140, 'Fast'],
    [200, 'Fast'],
  ])('When the tempo is %d BPM, then the band is %s', (bpm, band) => {
    expect(tempoBand(bpm)).toBe(band);
  });

  it.each([
    [0.1, 'Low'],
    [0.3, 'Low'],
    [0.5, 'Low'],
    [0.52, 'Medium'],
    [0.73, 'Medium'],
    [0.74, 'High'],
    [1, 'High'],
  ])('When the energy is %d, then the level is %s', (e, level) => {
    expect(energyLevel(e)).toBe(level);
  });

  it('When members agree mostly, then the name comes from median tempo, majority scale and mean energy', () => {
    const p = profileCluster([song(120, 'A', 'major', 0.9), song(130, 'A', 'major', 0.85), song(200, 'D', 'minor', 0.95), song(null, null, null, null)]);
    expect(p.tempo).toBe(130);
    expect(p.scale).toBe('Major');
    expect(p.key).toBe('A');
    expect(p.energy).toBeCloseTo(0.9, 6);
    expect(p.name).toBe('Upbeat_Major_High');
    expect(p.keyedName).toBe('Upbeat_A_Major_High');
  });

  it('When descriptors are missing, then their parts are left out, and Mix names a cluster without any', () => {
    expect(profileCluster([song(70, null, null, null)]).name).toBe('Slow');
    expect(profileCluster([song(null, 'C', 'minor', 0.2)]).name).toBe('Minor_Low');
    expect(profileCluster([song(null, null, null, null)]).name).toBe('Mix');
    expect(profileCluster([song(null, 'bogus', 'weird', Number.NaN)]).name).toBe('Mix');
  });

  it('When votes tie, then the result does not depend on member order', () => {
    const members = [song(100, 'E', 'minor', 0.5), song(100, 'C', 'major', 0.5)];
    const a = profileCluster(members);
    const b = profileCluster([...members].reverse());
    expect(a).toEqual(b);
    expect(a.scale).toBe('Major');
    expect(a.key).toBe('C');
  });

  it('When names collide, then later clusters take the keyed name and then a numeric suffix (case-insensitively)', () => {
    const names = uniqueNames([
      { name: 'Fast_Major_High', keyedName: 'Fast_A_Major_High' },
      { name: 'Fast_Major_High', keyedName: 'Fast_D_Major_High' },
      { name: 'fast_major_high', keyedName: 'Fast_D_Major_High' },
      { name: 'Slow', keyedName: 'Slow' },
      { name: 'Slow', keyedName: 'Slow' },
    ]);
    expect(names).toEqual(['Fast_Major_High', 'Fast_D_Major_High', 'fast_major_high_2', 'Slow', 'Slow_2']);
  });
});
