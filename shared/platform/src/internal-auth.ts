import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The gateway's signed internal header. The gateway authenticates the caller once and forwards
 * who it is to the owning service in `x-polyphony-identity` (base64url JSON) with an HMAC-SHA256
 * signature in `x-polyphony-signature` over that value, keyed by the deployment's internal secret.
 * A service reached directly without a valid signature refuses (defence in depth).
 */
export const IDENTITY_HEADER = 'x-polyphony-identity';
export const SIGNATURE_HEADER = 'x-polyphony-signature';

export type Role = 'admin' | 'user';

export interface CallerIdentity {
  /** User id (uuid), or 'api-token' for bearer callers, or 'setup' during the first-run window. */
  sub: string;
  username: string;
  role: Role;
  /** How the gateway authenticated: cookie, bearer, setup (first run, no admin yet), internal (service to service), anonymous (AUTH_ENABLED off). */
  via: 'cookie' | 'bearer' | 'setup' | 'internal' | 'anonymous';
  /** Resolved internal id of the selected media server (absent when none is configured). */
  serverId?: string;
  /** Issued-at, epoch milliseconds; signatures older than `maxAgeMs` are refused. */
  iat: number;
}

function sign(value: string, secret: string): string {
  return createHmac('sha256', secret).update(value).digest('base64url');
}

/** Builds the two headers carrying `identity`, signed with `secret`. */
export function signIdentity(identity: Omit<CallerIdentity, 'iat'> & { iat?: number }, secret: string): Record<string, string> {
  const value = Buffer.from(JSON.stringify({ ...identity, iat: identity.iat ?? Date.now() })).toString('base64url');
  return { [IDENTITY_HEADER]: value, [SIGNATURE_HEADER]: sign(value, secret) };
}

/**
 * Verifies the headers; returns the identity or undefined when missing, forged or older than
 * `maxAgeMs` (default 5 minutes, enough for slow uploads, short enough to limit replay).
 */
export function verifyIdentity(
  headers: Record<string, string | string[] | undefined>,
  secret: string,
  maxAgeMs = 5 * 60_000,
): CallerIdentity | undefined {
  const value = headers[IDENTITY_HEADER];
  const signature = headers[SIGNATURE_HEADER];
  if (typeof value !== 'string' || typeof signature !== 'string') return undefined;
  const expected = Buffer.from(sign(value, secret));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  try {
    const identity = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as CallerIdentity;
    if (typeof identity.iat !== 'number' || Date.now() - identity.iat > maxAgeMs) return undefined;
    if (identity.role !== 'admin' && identity.role !== 'user') return undefined;
    return identity;
  } catch {
    return undefined;
  }
}
