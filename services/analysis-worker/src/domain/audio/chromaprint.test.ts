import { parseFpcalcJson } from './chromaprint';

describe(parseFpcalcJson.name, () => {
  it('When the output has unsigned and signed words, then both map to uint32', () => {
    const p = parseFpcalcJson('{"duration": 74.08, "fingerprint": [147046359, 3397621332, -1]}');
    expect(p.durationSeconds).toBe(74.08);
    expect(Array.from(p.fingerprint)).toEqual([147046359, 3397621332, 0xffffffff]);
  });

  it.each(['not json', '{"duration": 1}', '{"duration": 1, "fingerprint": [1.5]}', '{"duration": 1, "fingerprint": [4294967296]}'])(
    'When the output is %p, then parsing throws',
    (text) => {
      expect(() => parseFpcalcJson(text)).toThrow();
    },
  );
});
