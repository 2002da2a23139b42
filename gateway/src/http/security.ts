import express, { type Request, type RequestHandler } from 'express';
import helmet from 'helmet';
import { DEFAULT_BODY_LIMIT, api, type RouteDef } from '@polyphony/contracts';
import { AppError, hasBody, jsonBody, rejectNulInBody } from '@polyphony/platform';

/**
 * Security headers (helmet) with a Content-Security-Policy the web UI passes: scripts and styles
 * only from this origin (no inline script anywhere in gateway/public or the docs page), no
 * plugins, no framing (frame-ancestors 'none' plus X-Frame-Options DENY), nosniff, no referrer
 * leaks. `upgrade-insecure-requests` and HSTS are left to the TLS-terminating proxy: a plain-HTTP
 * LAN install must keep working.
 */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    strictTransportSecurity: false,
    referrerPolicy: { policy: 'same-origin' },
  });
}

/**
 * Runs a header-setting middleware (helmet) once against a recording response and returns the headers it
 * set: helmet's headers depend only on its configuration, so the request pipeline sets the recorded list on
 * every answer instead of running helmet per request.
 * @throws Error when the middleware does not call `next` synchronously (its headers would depend on the request)
 */
export function staticHeadersOf(middleware: RequestHandler): Array<[string, string]> {
  const headers = new Map<string, string>();
  const res = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.set(name.toLowerCase(), Array.isArray(value) ? value.join(', ') : String(value)),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
    getHeader: (name: string) => headers.get(name.toLowerCase()),
  };
  let called = false;
  middleware({ headers: {}, method: 'GET', url: '/' } as never, res as never, () => {
    called = true;
  });
  if (!called) throw new Error('staticHeadersOf: the middleware did not call next synchronously');
  return [...headers.entries()];
}

/**
 * Request body limits come from the route table (`bodyLimit` of each route in shared/contracts:
 * credentials and settings are a few hundred bytes, 4 kB; an alchemy request holds at most 1000
 * items, 256 kB; an anchor up to 500 exclusion vectors, 2 MB; a playlist at most CREATE_PLAYLIST_MAX_TRACKS = 10,000 track references of
 * ~100-300 bytes, 4 MB; everything else DEFAULT_BODY_LIMIT, 16 kB). Anything larger is refused with
 * 413 before it is read.
 *
 * Routes with `uploadTypes` take a streamed upload of those media types: the gateway neither parses
 * nor buffers the body, the owning service enforces its own size limit while streaming (restore:
 * RESTORE_UPLOAD_LIMIT_BYTES, a recording clip: RECORDING_LIMITS). A cross-site page can send
 * multipart/form-data without a CORS preflight, so these uploads rely on csrfGuard's same-origin check
 * (Sec-Fetch-Site or Origin) for cookie callers; the other types need a preflight the gateway never grants.
 */
function isStreamedUpload(req: Request, route: RouteDef): boolean {
  if (!route.uploadTypes) return false;
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return route.uploadTypes.includes(type);
}

/**
 * The body stage of one route: JSON parsing with the route's limit (413 `payload_too_large` before reading,
 * from Content-Length), the depth limit and the NUL check. A body of any other media type is refused (415),
 * except a form on `POST /login` (the login page's no-script fallback), parsed with the same small limit, and
 * the route's streamed-upload types, passed through unread.
 * Run after authentication: an unauthenticated caller never gets a body parsed, except on the public
 * credential routes, which are rate-limited per address first.
 */
export function bodyParsing(route: RouteDef): RequestHandler {
  const limit = route.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const json = jsonBody(limit);
  const form = route === api.auth.login ? express.urlencoded({ extended: false, limit: 4 * 1024, parameterLimit: 20 }) : undefined;
  const nul = rejectNulInBody();
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    if (isStreamedUpload(req, route)) return next();
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      // Refuse at once and close the connection instead of draining a body we will not use.
      res.setHeader('Connection', 'close');
      return next(new AppError('payload_too_large', `Request body too large for this route (limit ${limit} bytes)`, 413));
    }
    let parser: RequestHandler;
    if (req.is('application/json')) parser = json;
    else if (form && req.is('application/x-www-form-urlencoded')) parser = form;
    else return next(new AppError('unsupported_media_type', 'Request bodies must be application/json', 415));
    parser(req, res, (err?: unknown) => (err ? next(err) : nul(req, res, next)));
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether the browser says this request comes from our own origin: `Sec-Fetch-Site` when present
 * (same-origin, or none for a typed URL), else `Origin` compared with the Host the request was
 * sent to (X-Forwarded-Host only from TRUST_PROXY peers). No header at all: not a browser (curl,
 * plugins), allowed.
 */
export function sameOrigin(req: Request): boolean {
  const site = req.header('sec-fetch-site');
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = req.header('origin');
  if (origin === undefined) return true;
  if (origin === 'null') return false;
  try {
    const forwardedHost = req.app.get('trust proxy fn')?.(req.socket.remoteAddress, 0) ? req.header('x-forwarded-host')?.split(',')[0]?.trim() : undefined;
    return new URL(origin).host === (forwardedHost ?? req.header('host'));
  } catch {
    return false;
  }
}

/**
 * CSRF defence for cookie-authenticated callers (bearer callers send no ambient credential and
 * are exempt): a mutation must come from our own origin (sameOrigin) and carry its body as
 * application/json (a cross-site form can only send urlencoded, multipart or text/plain). 403
 * `csrf_rejected` otherwise. Mount after authentication.
 */
export function csrfGuard(route: RouteDef): RequestHandler {
  return (req, _res, next) => {
    if (SAFE_METHODS.has(req.method) || req.identity?.via !== 'cookie') return next();
    if (!sameOrigin(req)) return next(new AppError('csrf_rejected', 'Cross-site request refused', 403));
    if (req.headers['content-type'] !== undefined && !req.is('application/json') && !isStreamedUpload(req, route)) {
      return next(new AppError('csrf_rejected', 'Cookie-authenticated changes must send application/json', 403));
    }
    next();
  };
}

/** The login routes' CSRF check (login CSRF): a browser posting credentials must do so from our own origin. */
export function loginOriginGuard(): RequestHandler {
  return (req, _res, next) => {
    if (req.method === 'POST' && !sameOrigin(req)) return next(new AppError('csrf_rejected', 'Cross-site login refused', 403));
    next();
  };
}
