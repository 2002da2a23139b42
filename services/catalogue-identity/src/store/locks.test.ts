import { bandLockKey, hash32, serverLockKey, sortLockKeys, unsignableLockKey } from './locks';

describe('advisory lock keys', () => {
  it('When keys are sorted, then the order is (k1, k2) ascending without duplicates', () => {
    expect(sortLockKeys([[3, 1], [1, 9], [3, 0], [1, 9]])).toEqual([[1, 9], [3, 0], [3, 1]]);
  });

  it('When band keys are built, then each band has its own namespace and values must fit int4', () => {
    expect(bandLockKey(0, 5)).not.toEqual(bandLockKey(1, 5));
    expect(() => bandLockKey(0, 2 ** 31)).toThrow(RangeError);
    expect(() => bandLockKey(256, 1)).toThrow(RangeError);
  });

  it('When text is hashed, then the value is a stable signed int4 and kinds do not collide', () => {
    const h = hash32('server-1');
    expect(h).toBe(hash32('server-1'));
    expect(Number.isInteger(h) && h >= -(2 ** 31) && h < 2 ** 31).toBe(true);
    expect(serverLockKey('x')[0]).not.toBe(unsignableLockKey('x')[0]);
  });
});
