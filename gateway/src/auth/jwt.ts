import jwt from 'jsonwebtoken';

/** Claims of the session cookie. `iat_ms` has millisecond precision for the password_changed_at check. */
export interface SessionClaims {
  sub: string;
  role: 'admin' | 'user';
  iat_ms: number;
}

/** Signs a session token (HS256) valid for `ttlSeconds`. */
export function signSession(claims: SessionClaims, secret: string, ttlSeconds: number): string {
  return jwt.sign(claims, secret, { algorithm: 'HS256', expiresIn: ttlSeconds });
}

/**
 * Verifies a session token: HS256 only (so `alg: none` and algorithm confusion are refused),
 * signature, expiry and claim shape. Returns undefined for anything invalid.
 */
export function verifySession(token: string, secret: string): SessionClaims | undefined {
  try {
    const payload = jwt.verify(token, secret, { algorithms: ['HS256'] });
    if (typeof payload !== 'object' || payload === null) return undefined;
    const { sub, role, iat_ms } = payload as Record<string, unknown>;
    if (typeof sub !== 'string' || (role !== 'admin' && role !== 'user') || typeof iat_ms !== 'number') return undefined;
    return { sub, role, iat_ms };
  } catch {
    return undefined;
  }
}
