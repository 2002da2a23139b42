import { parseFpcalcRaw } from './chromaprint';

describe(parseFpcalcRaw.name, () => {
  it('When given fpcalc -raw output, then items become signed 32-bit integers', () => {
    expect(Array.from(parseFpcalcRaw('DURATION=74\nFINGERPRINT=1,4294967295,2147483648\n'))).toEqual([1, -1, -2147483648]);
    expect(Array.from(parseFpcalcRaw('3,-4'))).toEqual([3, -4]);
  });

  it('When the output has no fingerprint or a bad item, then it throws', () => {
    expect(() => parseFpcalcRaw('DURATION=74\n')).toThrow(RangeError);
    expect(() => parseFpcalcRaw('FINGERPRINT=1,x,3')).toThrow(RangeError);
    expect(() => parseFpcalcRaw('FINGERPRINT=')).toThrow(RangeError);
  });
});
