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

/** Default largest age of a signed identity, ms: 5 minutes, enough for slow uploads, short enough to limit replay. */
export const IDENTITY_MAX_AGE_MS = 5 * 60_000;

/** The identity encoded in a header value, or undefined when it is not a well-formed one (no age check). */
function decodeIdentity(value: string): CallerIdentity | undefined {
  try {
    const identity = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as CallerIdentity;
    if (identity === null || typeof identity !== 'object' || typeof identity.iat !== 'number') return undefined;
    if (identity.role !== 'admin' && identity.role !== 'user') return undefined;
    return identity;
  } catch {
    return undefined;
  }
}

/** Constant-time comparison of two base64url signatures. */
function signatureMatches(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Verifies the headers; returns the identity or undefined when missing, forged or older than
 * `maxAgeMs` (default IDENTITY_MAX_AGE_MS).
 */
export function verifyIdentity(
  headers: Record<string, string | string[] | undefined>,
  secret: string,
  maxAgeMs = IDENTITY_MAX_AGE_MS,
): CallerIdentity | undefined {
  const value = headers[IDENTITY_HEADER];
  const signature = headers[SIGNATURE_HEADER];
  if (typeof value !== 'string' || typeof signature !== 'string') return undefined;
  if (!signatureMatches(sign(value, secret), signature)) return undefined;
  const identity = decodeIdentity(value);
  if (!identity || Date.now() - identity.iat > maxAgeMs) return undefined;
  return identity;
}

/**
 * `verifyIdentity` with the HMAC and the decoding of recently seen header values cached (issue 19 query
 * path: the gateway reuses one signed header per caller for up to a second, so a busy service would
 * otherwise compute the same HMAC-SHA256 and JSON parse thousands of times a second).
 * The cache maps a header value to its expected signature and decoded identity. What stays per request:
 * the constant-time comparison of the given signature with the expected one, and the age check against
 * `maxAgeMs` (a cached value is never accepted past its age; it is evicted then). At most `maxEntries`
 * values are kept (all dropped when full: header values change every second, so the set turns over).
 * The returned identity is a fresh copy (callers may add fields, e.g. the gateway's serverId).
 */
export class IdentityVerifier {
  private readonly cache = new Map<string, { signature: string; identity: CallerIdentity }>();

  constructor(
    private readonly secret: string,
    private readonly maxAgeMs = IDENTITY_MAX_AGE_MS,
    private readonly maxEntries = 1024,
  ) {}

  /** Same answer as `verifyIdentity(headers, secret, maxAgeMs)`. */
  verify(headers: Record<string, string | string[] | undefined>): CallerIdentity | undefined {
    const value = headers[IDENTITY_HEADER];
    const signature = headers[SIGNATURE_HEADER];
    if (typeof value !== 'string' || typeof signature !== 'string') return undefined;
    let hit = this.cache.get(value);
    if (!hit) {
      const identity = decodeIdentity(value);
      const expected = sign(value, this.secret);
      if (!signatureMatches(expected, signature) || !identity) return undefined;
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      hit = { signature: expected, identity };
      this.cache.set(value, hit);
    } else if (!signatureMatches(hit.signature, signature)) {
      return undefined;
    }
    if (Date.now() - hit.identity.iat > this.maxAgeMs) {
      this.cache.delete(value);
      return undefined;
    }
    return { ...hit.identity };
  }
}

/**
 * Signs identities for the gateway's forwarded requests, reusing one signed header pair per distinct
 * identity (sub, username, role, via, serverId) for up to `reuseMs` (default 1000 ms): the header's `iat`
 * is then at most that much older than the request, far inside the services' 5-minute window, and the
 * HMAC + JSON + base64 work happens about once a second per caller instead of per request.
 */
export class IdentitySigner {
  private readonly cache = new Map<string, { at: number; headers: Record<string, string> }>();

  constructor(
    private readonly secret: string,
    private readonly reuseMs = 1000,
    private readonly maxEntries = 1024,
  ) {}

  /** The two signed headers for `identity` (its own `iat` is replaced by the signing time). */
  headers(identity: Omit<CallerIdentity, 'iat'>): Record<string, string> {
    const key = `${identity.sub}\u0000${identity.username}\u0000${identity.role}\u0000${identity.via}\u0000${identity.serverId ?? ''}`;
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < this.reuseMs) return hit.headers;
    const { sub, username, role, via, serverId } = identity;
    const headers = signIdentity({ sub, username, role, via, ...(serverId !== undefined ? { serverId } : {}), iat: now }, this.secret);
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(key, { at: now, headers });
    return headers;
  }
}
