import express, { type RequestHandler } from 'express';
import helmet from 'helmet';
import { AppError, jsonBody, rejectNulInBody } from '@polyphony/platform';
import { bodyLimitFor, uploadTypesFor } from '../proxy/routes';

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
 * Request body limits come from the route table (`bodyLimit` of each route in shared/contracts:
 * credentials and settings are a few hundred bytes, 4 kB; an alchemy request holds at most 1000
 * items, 256 kB; an anchor up to 500 exclusion vectors, 2 MB; a playlist at most CREATE_PLAYLIST_MAX_TRACKS = 10,000 track references of
 * ~100-300 bytes, 4 MB; everything else DEFAULT_BODY_LIMIT, 16 kB). Anything larger is refused with
 * 413 before it is read.
 *
 * Routes with `uploadTypes` take a streamed upload of those media types: the gateway neither parses
 * nor buffers the body, the owning service enforces its own size limit while streaming (restore:
 * RESTORE_UPLOAD_LIMIT_BYTES). None of these types can be sent cross-site without a CORS preflight,
 * which the gateway never grants.
 */
function isStreamedUpload(req: import('express').Request, path: string): boolean {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return uploadTypesFor(req.method, path).includes(type);
}

/** The request path from the app's root, without a trailing slash (middleware mounted at `/login` sees `/`). */
function fullPath(req: import('express').Request): string {
  const p = req.baseUrl + req.path;
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

function hasBody(req: import('express').Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * JSON body parsing with the per-route limit (413 `payload_too_large` before reading), the depth
 * limit and the NUL check. A body of any other media type is refused (415), except a form on
 * `/login` (the login page's no-script fallback), parsed with the same small limit, and the
 * STREAMED_UPLOADS, passed through unread.
 * Mount after authentication: an unauthenticated caller never gets a body parsed, except on the
 * public credential routes, which are rate-limited per address first.
 */
export function bodyParsing(): RequestHandler {
  const parsers = new Map<number, RequestHandler>();
  const jsonFor = (bytes: number) => {
    let p = parsers.get(bytes);
    if (!p) parsers.set(bytes, (p = jsonBody(bytes)));
    return p;
  };
  const form = express.urlencoded({ extended: false, limit: 4 * 1024, parameterLimit: 20 });
  const nul = rejectNulInBody();
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    const path = fullPath(req);
    if (isStreamedUpload(req, path)) return next();
    let parser: RequestHandler;
    const limit = bodyLimitFor(req.method, path);
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      // Refuse at once and close the connection instead of draining a body we will not use.
      res.setHeader('Connection', 'close');
      return next(new AppError('payload_too_large', `Request body too large for this route (limit ${limit} bytes)`, 413));
    }
    if (req.is('application/json')) parser = jsonFor(limit);
    else if (path === '/login' && req.is('application/x-www-form-urlencoded')) parser = form;
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
export function sameOrigin(req: import('express').Request): boolean {
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
export function csrfGuard(): RequestHandler {
  return (req, _res, next) => {
    if (SAFE_METHODS.has(req.method) || req.identity?.via !== 'cookie') return next();
    if (!sameOrigin(req)) return next(new AppError('csrf_rejected', 'Cross-site request refused', 403));
    if (req.headers['content-type'] !== undefined && !req.is('application/json') && !isStreamedUpload(req, fullPath(req))) {
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
