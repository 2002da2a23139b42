import { decodeEmbedding } from './codec';

const b64 = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString('base64');

describe('embedding vectors', () => {
  it('When base64 little-endian float32 is decoded, then the values come back', () => {
    expect([...decodeEmbedding(b64([1.5, -2, 0.25]))!]).toEqual([1.5, -2, 0.25]);
  });

  it('When the value is empty, misaligned or holds NaN, then it is refused', () => {
    expect(decodeEmbedding('')).toBeUndefined();
    expect(decodeEmbedding(Buffer.from([1, 2, 3]).toString('base64'))).toBeUndefined();
    expect(decodeEmbedding(b64([1, Number.NaN]))).toBeUndefined();
  });
});
