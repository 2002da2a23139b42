import type { RequestHandler, Response } from 'express';
import { ForbiddenError, UnauthorizedError, currentContext } from '@polyphony/platform';
import type { AuthService, IssuedSession } from './auth.service';
import { isAdminOnly, isBearerOnly, isSetupPath } from '../proxy/routes';

export const SESSION_COOKIE = 'polyphony_session';

/**
 * Sets the HttpOnly, SameSite=Strict session cookie, expiring with the session; Secure when the
 * request came over HTTPS (directly, or per X-Forwarded-Proto from a TRUST_PROXY address).
 */
export function setSessionCookie(res: Response, session: IssuedSession, secure: boolean): void {
  res.cookie(SESSION_COOKIE, session.token, { httpOnly: true, sameSite: 'strict', secure, path: '/', expires: new Date(session.expiresAt) });
}

/**
 * Authenticates every /api and /external request (public paths are mounted before it):
 * 1. AUTH_ENABLED off: anonymous admin-equivalent caller.
 * 2. An Authorization header must be `Bearer <API_TOKEN>`; anything else there is 401 (no fallback).
 * 3. Else the session cookie, re-validated against its session row and user (a refreshed cookie
 *    is set when the session was extended).
 * 4. Else, while no admin exists, the Setup paths are open (first-run window).
 * Then the route's access from the contracts route table is enforced (403): admin routes need the
 * admin role, bearer routes the API token. Unknown routes pass here and are answered 404/405 by the dispatcher.
 */
export function authenticate(auth: AuthService): RequestHandler {
  return (req, res, next) => {
    // Mounted under /api and /external: req.path is relative to the mount point.
    const fullPath = req.baseUrl + req.path;
    (async () => {
      if (!auth.authEnabled) {
        req.identity = { sub: 'anonymous', username: 'anonymous', role: 'admin', via: 'anonymous', iat: Date.now() };
      } else {
        const header = req.header('authorization');
        if (header !== undefined) {
          const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
          const identity = m ? auth.authenticateBearer(m[1]!) : undefined;
          if (!identity) throw new UnauthorizedError('Invalid or malformed bearer token');
          req.identity = identity;
        } else {
          const cookie = (req.cookies as Record<string, string> | undefined)?.[SESSION_COOKIE];
          const checked = cookie ? await auth.authenticateCookie(cookie) : undefined;
          if (checked) {
            req.identity = checked.identity;
            if (checked.refreshed) setSessionCookie(res, checked.refreshed, req.secure);
          }
          if (!req.identity && isSetupPath(req.method, fullPath) && (await auth.setupWindowOpen())) {
            req.identity = { sub: 'setup', username: 'setup', role: 'admin', via: 'setup', iat: Date.now() };
          }
          if (!req.identity) throw new UnauthorizedError(cookie ? 'Session expired or revoked; log in again' : 'Authentication required');
        }
      }
      const ctx = currentContext();
      if (ctx) ctx.userId = req.identity.sub;
      // Access from the route table (shared/contracts): admin routes need the admin role, bearer routes the API token.
      if (req.identity.role !== 'admin' && isAdminOnly(req.method, fullPath)) throw new ForbiddenError('Admin role required');
      if (isBearerOnly(req.method, fullPath) && req.identity.via !== 'bearer' && req.identity.via !== 'anonymous') throw new ForbiddenError('This route takes the API token (Authorization: Bearer)');
    })().then(() => next(), next);
  };
}
