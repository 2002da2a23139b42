import { computeSignature, signatureToHex } from '../domain/identity/signature';
import { chromaprintParam, decodeVector, encodeVector, signatureFromBits, signatureParam } from './codec';

describe('column codecs', () => {
  it('When a vector is encoded, then it is float32 little-endian and decodes to the float32 rounding', () => {
    const buf = encodeVector([1, -2.5, 0.1]);
    expect(buf.length).toBe(12);
    expect(buf.readFloatLE(4)).toBe(-2.5);
    expect(Array.from(decodeVector(buf))).toEqual(Array.from(Float32Array.from([1, -2.5, 0.1])));
    expect(() => decodeVector(Buffer.alloc(5))).toThrow(RangeError);
  });

  it('When a signature goes to bit(200) and back, then the code is unchanged (dimension 0 first)', () => {
    const e = Array.from({ length: 200 }, (_, i) => Math.sin(i * 1.7));
    const s = computeSignature(e);
    if (!s.ok) throw new Error('unsignable');
    const param = signatureParam(s.code);
    expect(param).toBe(`x${signatureToHex(s.code)}`);
    const bits = Array.from({ length: 200 }, (_, d) => ((e[d] as number) > e.reduce((a, b) => a + b, 0) / 200 ? '1' : '0')).join('');
    expect(signatureToHex(signatureFromBits(bits))).toBe(signatureToHex(s.code));
    expect(() => signatureFromBits('01')).toThrow(RangeError);
  });

  it('When Chromaprint words exceed 2^31, then they are stored as their signed twins', () => {
    expect(chromaprintParam([0, 0xffffffff, 0x80000000, 5])).toEqual([0, -1, -2147483648, 5]);
  });
});
