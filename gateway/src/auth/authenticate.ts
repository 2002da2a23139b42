import cookieParser from 'cookie-parser';
import type { Response } from 'express';
import type { RouteDef } from '@polyphony/contracts';
import { UnauthorizedError, type CallerIdentity, type IdentifyCaller } from '@polyphony/platform';
import type { AuthService, IssuedSession } from './auth.service';

export const SESSION_COOKIE = 'polyphony_session';
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Sets the HttpOnly, SameSite=Strict session cookie, expiring with the session; Secure when the
 * request came over HTTPS (directly, or per X-Forwarded-Proto from a TRUST_PROXY address).
 */
export function setSessionCookie(res: Response, session: IssuedSession, secure: boolean): void {
  res.cookie(SESSION_COOKIE, session.token, { httpOnly: true, sameSite: 'strict', secure, path: '/', expires: new Date(session.expiresAt) });
}

/**
 * The gateway's authentication, as the request pipeline's `identify` (the access decision that follows is the
 * platform's `decideAccess`, the same one every service runs). Cookies are parsed first (`req.cookies`, for
 * logout too). Then, for any route but a `public` one (and for an API path no route matches, so 404/405 go
 * to authenticated callers only):
 * 1. AUTH_ENABLED off: the anonymous admin-equivalent caller.
 * 2. An Authorization header must be `Bearer <API_TOKEN>`; anything else there is 401 (no fallback).
 * 3. Else the session cookie, re-validated against its session row and user (a refreshed cookie is set
 *    when the session was extended).
 * 4. Else, while no admin exists, a `firstRun` route is open to the `setup` caller (first-run window).
 * 5. Else 401.
 * Steps 1 and 2 answer in the same turn (no promise): the API token path of plugins stays the fast one.
 */
export function gatewayCaller(auth: AuthService): IdentifyCaller {
  const cookies = cookieParser();
  return (req, res, route) => {
    cookies(req, res, () => undefined);
    if (route?.access === 'public') return undefined;
    if (!auth.authEnabled) return { sub: 'anonymous', username: 'anonymous', role: 'admin', via: 'anonymous', iat: Date.now() };
    const header = req.headers.authorization;
    if (header !== undefined) {
      const m = BEARER.exec(header);
      const identity = m ? auth.authenticateBearer(m[1]!) : undefined;
      if (!identity) throw new UnauthorizedError('Invalid or malformed bearer token');
      return identity;
    }
    return fromCookie(auth, req, res, route);
  };
}

/** Steps 3-5 of `gatewayCaller` (a database look-up). */
async function fromCookie(auth: AuthService, req: import('express').Request, res: Response, route: RouteDef | undefined): Promise<CallerIdentity> {
  const cookie = (req.cookies as Record<string, string> | undefined)?.[SESSION_COOKIE];
  const checked = cookie ? await auth.authenticateCookie(cookie) : undefined;
  if (checked) {
    if (checked.refreshed) setSessionCookie(res, checked.refreshed, req.secure);
    return checked.identity;
  }
  if (route?.firstRun === true && (await auth.setupWindowOpen())) return { sub: 'setup', username: 'setup', role: 'admin', via: 'setup', iat: Date.now() };
  throw new UnauthorizedError(cookie ? 'Session expired or revoked; log in again' : 'Authentication required');
}
