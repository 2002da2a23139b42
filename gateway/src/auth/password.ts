import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { argon2Verify } from 'hash-wasm';

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/**
 * Password hashing with scrypt (RFC 7914), a memory-hard slow KDF built into Node.
 * Parameters N=2^15, r=8, p=1 (32 MiB, ~50-100 ms per hash), the OWASP Password Storage
 * Cheat Sheet's scrypt recommendation. Format: `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`.
 */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEYLEN = 32;
const MAXMEM = 64 * 1024 * 1024;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r: R, p: P, maxmem: MAXMEM });
  return ['scrypt', N, R, P, salt.toString('base64'), key.toString('base64')].join('$');
}

/** The encoded Argon2 hashes (PHC strings) of accounts imported from the reference (`$argon2id$v=19$m=...`). */
const ARGON2_HASH = /^\$argon2(id|i|d)\$/;

/**
 * Whether a stored hash is not of our scheme (an Argon2 hash imported from the reference, issue 34): after a
 * successful login with it the password is hashed again with {@link hashPassword}.
 */
export function needsRehash(stored: string): boolean {
  return !stored.startsWith('scrypt$');
}

/**
 * Constant-time check of `password` against a stored hash: our scrypt format, or an Argon2 PHC string imported
 * from the reference (verified with hash-wasm's Argon2, pure WebAssembly, MIT). False for any malformed hash.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (ARGON2_HASH.test(stored)) {
    try {
      return await argon2Verify({ password, hash: stored });
    } catch {
      return false;
    }
  }
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, keyB64] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(keyB64, 'base64');
  const key = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: MAXMEM });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** Constant-time string comparison (for API tokens): compares SHA-independent lengths safely. */
export function constantTimeEquals(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ba.length !== bb.length) {
    timingSafeEqual(ba, ba);
    return false;
  }
  return timingSafeEqual(ba, bb);
}
