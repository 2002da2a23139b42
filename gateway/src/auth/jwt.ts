import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';

/** Claims of the session cookie: the user, the server-side session row, and the standard `exp`. */
export interface SessionClaims {
  sub: string;
  /** auth.sessions id, looked up on every request (logout and credential changes delete it). */
  sid: string;
  role: 'admin' | 'user';
}

/** Signs a session token (HS256) expiring at `expiresAtMs` (epoch milliseconds). */
export function signSession(claims: SessionClaims, secret: string, expiresAtMs: number): string {
  return jwt.sign({ ...claims, exp: Math.floor(expiresAtMs / 1000) }, secret, { algorithm: 'HS256' });
}

/**
 * The HMAC key object of each secret, made once. Given a string, jsonwebtoken first tries to parse
 * it as a PEM public key (createPublicKey, which throws) before making a secret key, on every call:
 * about 1 ms of CPU per cookie-authenticated request. Bounded: secrets change only on rotation.
 */
const secretKeys = new Map<string, KeyObject>();
function secretKey(secret: string): KeyObject {
  let key = secretKeys.get(secret);
  if (!key) {
    if (secretKeys.size >= 16) secretKeys.clear();
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    secretKeys.set(secret, key);
  }
  return key;
}

/**
 * Verifies a session token against each of `secrets` (the current key first, then verify-only
 * previous keys): HS256 only (so `alg: none` and algorithm confusion are refused), signature,
 * a mandatory numeric `exp` in the future, and the claim shape. Returns undefined for anything invalid.
 */
export function verifySession(token: string, secrets: readonly string[]): SessionClaims | undefined {
  for (const secret of secrets) {
    let payload: unknown;
    try {
      payload = jwt.verify(token, secretKey(secret), { algorithms: ['HS256'] });
    } catch {
      continue;
    }
    if (typeof payload !== 'object' || payload === null) return undefined;
    const { sub, sid, role, exp } = payload as Record<string, unknown>;
    if (typeof exp !== 'number') return undefined;
    if (typeof sub !== 'string' || typeof sid !== 'string' || (role !== 'admin' && role !== 'user')) return undefined;
    return { sub, sid, role };
  }
  return undefined;
}
