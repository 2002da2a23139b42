import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Express, RequestHandler } from 'express';
import { IDENTITY_HEADER, REQUEST_ID_HEADER, SIGNATURE_HEADER, answerError, requestIdOf, runWithContext, splitSimpleUrl, trackLeanRequest, type CallerIdentity, type Logger, type Metrics, type RequestContext } from '@polyphony/platform';
import type { AuthService } from '../auth/auth.service';
import type { ServiceName } from '../config';
import { upstreamUnavailableBody, type Upstreams } from './proxy';
import { isApiPath, matchRoute, needsServerResolution } from './routes';
import type { ServerResolver } from './server-resolver';

/** Headers never forwarded to a service: the caller's secrets, a forged identity, and hop-by-hop headers (RFC 9110 7.6.1). */
const DROPPED_REQUEST_HEADERS = new Set(['cookie', 'authorization', IDENTITY_HEADER, SIGNATURE_HEADER, 'host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
/** Hop-by-hop headers of a service's answer, not copied to the caller (Node sets its own connection headers). */
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);
/** Same as the express dispatcher's proxyTimeout: a long query (a full rebuild answer) may take minutes. */
const UPSTREAM_TIMEOUT_MS = 10 * 60_000;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** What the lean proxy needs from the gateway's composition root. */
export interface LeanProxyOptions {
  /** The gateway's express app: error answers go through its error handler (same shape, same mapping). */
  app: Express;
  auth: AuthService;
  upstreams: Upstreams;
  resolver: ServerResolver;
  /** The security headers every gateway answer carries (helmet), as captured by `staticHeadersOf`. */
  headers: ReadonlyArray<[string, string]>;
  logger: Logger;
  metrics: Metrics;
  /** ACCESS_LOG_SAMPLE (default 1). */
  accessLogSample?: number;
}

/**
 * Runs a header-setting middleware (helmet) once against a recording response and returns the headers it
 * set: helmet's headers depend only on its configuration, so the lean path applies the recorded list.
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
 * The gateway's lean dispatch path (issue 19): an authenticated GET of a service's route, without a body,
 * is forwarded with one `http.request` on the shared keep-alive agent and the answer piped back, without the
 * express stack, helmet's per-request work, http-proxy(-middleware) or a second walk of the route table.
 *
 * Taken only when every check of the express path is known to pass, so that the answer is the same:
 * - GET, no Content-Length / Transfer-Encoding (no body to authenticate before), an /api, /external or
 *   /chat/api path of the contracts table whose owner is a service (the gateway's own routes, unknown paths
 *   (404) and other methods (405 with Allow) stay on the express path); the path and query parse as plainly
 *   as `qs` would read them (else express: 400 for a malformed escape or a NUL);
 * - the caller is authenticated by the API token (`Authorization: Bearer`, checked by AuthService exactly as
 *   the express middleware does), or authentication is off (anonymous); a cookie caller, a bad token (401)
 *   and a failed access rule of the table (admin, bearer: 403) are left to the express path;
 * then it does what the express path does: request id (taken or made, echoed, forwarded), access log,
 * latency histogram, security headers, the `server` parameter resolved to the registry id (400 for an
 * unknown server), cookie/Authorization/forged identity headers stripped, the signed identity header added,
 * a refused or reset connection retried once on another replica of a pooled service (UpstreamPool), and
 * 503 `upstream_unavailable` in the error shape when no replica answers.
 * Returns true when it took the request.
 */
export function leanProxy(options: LeanProxyOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { app, auth, upstreams, resolver, headers, logger, metrics } = options;
  const targetsParsed = new Map<string, URL>();
  const urlOf = (target: string): URL => {
    let u = targetsParsed.get(target);
    if (!u) {
      u = new URL(target);
      if (targetsParsed.size > 64) targetsParsed.clear();
      targetsParsed.set(target, u);
    }
    return u;
  };

  return (req, res) => {
    if (req.method !== 'GET' || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return false;
    const raw = req.url ?? '/';
    if (!isApiPath(raw)) return false;
    const url = splitSimpleUrl(raw);
    if (!url) return false;
    const match = matchRoute('GET', url.path);
    if (match.kind !== 'found' || match.def.service === 'gateway') return false;
    const def = match.def;
    const service = def.service as ServiceName;
    let identity: CallerIdentity | undefined;
    if (!auth.authEnabled) {
      identity = { sub: 'anonymous', username: 'anonymous', role: 'admin', via: 'anonymous', iat: Date.now() };
    } else {
      const header = req.headers.authorization;
      const m = header === undefined ? null : BEARER.exec(header);
      identity = m ? auth.authenticateBearer(m[1]!) : undefined;
    }
    if (!identity) return false;
    if (def.access === 'admin' && identity.role !== 'admin') return false;
    if (def.access === 'bearer' && identity.via !== 'bearer' && identity.via !== 'anonymous') return false;
    if (def.access === 'internal' || def.access === 'public') return false;
    if (!upstreams.targets()[service]?.startsWith('http://')) return false;

    const requestId = requestIdOf(req);
    const ctx: RequestContext = { requestId, userId: identity.sub };
    trackLeanRequest(req, res, requestId, def.path, logger, metrics, () => ctx.userId, options.accessLogSample);
    for (const [name, value] of headers) res.setHeader(name, value);

    const forward = (caller: CallerIdentity, tried: Set<string>): void => {
      const { target, release } = upstreams.acquire(service, tried);
      const u = urlOf(target);
      const out: Record<string, string | string[]> = {};
      copyHeaders(req.headers, out, DROPPED_REQUEST_HEADERS);
      out.host = u.host;
      Object.assign(out, upstreams.signer.headers(caller));
      out[REQUEST_ID_HEADER] = requestId;
      const base = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
      const up = http.request({ agent: upstreams.agent, hostname: u.hostname, port: u.port || 80, method: 'GET', path: base + raw, headers: out });
      // The request leaves the replica's in-flight count when it is done: answer ended, or failed ('close' either way).
      up.once('close', release);
      up.setTimeout(UPSTREAM_TIMEOUT_MS, () => up.destroy(Object.assign(new Error('upstream timeout'), { code: 'ETIMEDOUT' })));
      const onClose = () => {
        if (!res.writableFinished) up.destroy();
      };
      res.once('close', onClose);
      up.on('response', (answer) => {
        if (res.destroyed) {
          answer.resume();
          return;
        }
        const copied: Record<string, string | string[]> = {};
        copyHeaders(answer.headers, copied, DROPPED_RESPONSE_HEADERS);
        res.writeHead(answer.statusCode ?? 502, copied);
        answer.on('error', () => res.destroy());
        answer.pipe(res);
      });
      up.on('error', (err) => {
        res.off('close', onClose);
        if (req.socket?.destroyed || res.destroyed) {
          logger.debug('client aborted a proxied request', { service, err: err.message });
          return;
        }
        if (!res.headersSent && upstreams.retryAfter(service, target, tried, err)) {
          forward(caller, tried);
          return;
        }
        logger.error('upstream unavailable', { service, err: err.message });
        if (!res.headersSent) {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end(upstreamUnavailableBody(service, requestId));
        } else {
          res.destroy();
        }
      });
      up.end();
    };

    runWithContext(ctx, () => {
      if (!needsServerResolution(service)) return forward(identity, new Set());
      const given = url.query.server === '' ? undefined : url.query.server;
      // A server resolved in the last seconds: forwarded in this turn (same answer as `resolve`, without a promise).
      const cached = resolver.peek(given);
      if (cached) return forward(cached.server ? { ...identity, serverId: cached.server.id } : identity, new Set());
      resolver.resolve(given).then(
        (resolved) => forward(resolved ? { ...identity, serverId: resolved.id } : identity, new Set()),
        (err: unknown) => answerError(app, req, res, requestId, err, logger),
      );
    });
    return true;
  };
}

/** Copies `from` into `to` without the names in `dropped` (lower-case). */
function copyHeaders(from: IncomingHttpHeaders, to: Record<string, string | string[]>, dropped: ReadonlySet<string>): void {
  for (const name in from) {
    const value = from[name];
    if (value === undefined || dropped.has(name)) continue;
    to[name] = value;
  }
}
