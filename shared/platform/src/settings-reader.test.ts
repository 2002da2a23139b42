import { SettingsReader } from './settings-reader';

describe('SettingsReader', () => {
  it('When values are read within the cache time, then the registry is asked once; after it, again', async () => {
    let t = 0;
    let calls = 0;
    const reader = new SettingsReader(async () => ({ A: ++calls }), { A: 0, B: 'x' }, undefined, 5_000, () => t);
    expect(await Promise.all([reader.all(), reader.all()])).toEqual([{ A: 1, B: 'x' }, { A: 1, B: 'x' }]);
    t = 4_999;
    expect(await reader.number('A', -1)).toBe(1);
    t = 5_000;
    expect(await reader.number('A', -1)).toBe(2);
    expect(calls).toBe(2);
  });

  it('When the registry fails, then the defaults (or the last values) stay in effect and one warning is logged per failure streak', async () => {
    let t = 0;
    let fail = true;
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) } as never;
    const reader = new SettingsReader(async () => {
      if (fail) throw new Error('ECONNREFUSED');
      return { A: 7 };
    }, { A: 3 }, logger, 1_000, () => t);
    expect(await reader.number('A', -1)).toBe(3);
    t = 1_000;
    expect(await reader.number('A', -1)).toBe(3);
    expect(warnings).toHaveLength(1);
    fail = false;
    t = 2_000;
    expect(await reader.number('A', -1)).toBe(7);
    fail = true;
    t = 3_000;
    expect(await reader.number('A', -1)).toBe(7);
    expect(warnings).toHaveLength(2);
  });

  it('When a value is not a finite number, then number() answers the fallback', async () => {
    const reader = new SettingsReader(async () => ({ A: 'abc', B: null, C: '4' }), {});
    expect(await reader.number('A', 9)).toBe(9);
    expect(await reader.number('B', 8)).toBe(8);
    expect(await reader.number('C', 0)).toBe(4);
  });
});
