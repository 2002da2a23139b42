import { argon2id } from 'hash-wasm';
import { hashPassword, needsRehash, verifyPassword } from './password';

describe('password hashes', () => {
  it('When an Argon2id hash imported from the reference is checked, then the right password passes, a wrong one and a damaged hash fail, and it asks for a re-hash', async () => {
    const stored = await argon2id({ password: 'reference-pw', salt: Buffer.from('saltsaltsaltsalt'), parallelism: 1, iterations: 2, memorySize: 1024, hashLength: 32, outputType: 'encoded' });
    expect(stored).toMatch(/^\$argon2id\$v=19\$/);
    await expect(verifyPassword('reference-pw', stored)).resolves.toBe(true);
    await expect(verifyPassword('other-pw', stored)).resolves.toBe(false);
    await expect(verifyPassword('reference-pw', stored.slice(0, -4))).resolves.toBe(false);
    expect(needsRehash(stored)).toBe(true);
  });

  it('When our own scrypt hash is checked, then it verifies and needs no re-hash', async () => {
    const ours = await hashPassword('pw-123456');
    await expect(verifyPassword('pw-123456', ours)).resolves.toBe(true);
    expect(needsRehash(ours)).toBe(false);
  });
});
