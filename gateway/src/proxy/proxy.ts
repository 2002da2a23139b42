import http from 'node:http';
import type { RequestHandler } from 'express';
import { createProxyMiddleware, fixRequestBody } from 'http-proxy-middleware';
import { AppError, IDENTITY_HEADER, NotFoundError, REQUEST_ID_HEADER, SIGNATURE_HEADER, signIdentity, type Logger } from '@polyphony/platform';
import type { GatewayConfig, ServiceName } from '../config';
import { isApiPath, matchRoute, needsServerResolution } from './routes';
import type { ServerResolver } from './server-resolver';
import { UpstreamPool, isConnectionFailure } from './upstream-pool';

/** Per-request proxy state: replicas already tried (a pooled service retries on another replica). */
interface Attempt {
  service: ServiceName;
  tried: Set<string>;
  target?: string;
}
const ATTEMPT = Symbol('upstream-attempt');
type WithAttempt = import('express').Request & { [ATTEMPT]?: Attempt };

/**
 * Forwards /api, /external and /chat/api requests to the owning service of their route in the
 * contracts table with http-proxy-middleware (404 for a path not in the table, 405 with `Allow` for a
 * known path with another method).
 * The caller's cookie and Authorization header are stripped (services never see secrets);
 * the verified identity, with the resolved server id, travels in the signed internal header.
 */
export function proxyDispatcher(config: GatewayConfig, targets: () => Record<ServiceName, string>, resolver: ServerResolver, logger: Logger): RequestHandler {
  const proxies = new Map<ServiceName, RequestHandler>();
  // A service URL with commas is a list of replicas (e.g. INDEX_URL for several index replicas). The index
  // always gets a pool, so even behind one Kubernetes Service URL a request whose connection was refused or
  // reset (a pod stopping) is sent once more on a fresh connection, which the Service routes to a ready pod.
  const pools = new Map<string, UpstreamPool>();
  const poolFor = (service: ServiceName): UpstreamPool | undefined => {
    const value = targets()[service];
    if (!value.includes(',') && service !== 'index') return undefined;
    let pool = pools.get(value);
    if (!pool) {
      pool = new UpstreamPool(UpstreamPool.parse(value), logger.child({ component: 'UpstreamPool', service }));
      pool.start();
      pools.set(value, pool);
    }
    return pool;
  };
  const targetOf = (service: ServiceName, req: WithAttempt): string => {
    const pool = poolFor(service);
    if (!pool) return targets()[service];
    const attempt = (req[ATTEMPT] ??= { service, tried: new Set() });
    attempt.target = pool.pick(attempt.tried) ?? pool.urls[0]!;
    return attempt.target;
  };
  // Keep-alive to the services: without an agent http-proxy opens (and closes) a connection per request.
  // An idle socket is dropped after 4 s, before the services' 5 s keep-alive timeout (Node's default)
  // closes it from their side: reusing a socket the server is closing fails with "socket hang up"
  // (a spurious 503). Found by the fuzz suite. Requests in flight use proxyTimeout instead.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 4000 });
  const proxyFor = (service: ServiceName): RequestHandler => {
    let p = proxies.get(service);
    if (!p) {
      p = createProxyMiddleware({
        router: (req) => targetOf(service, req as WithAttempt),
        target: UpstreamPool.parse(targets()[service])[0],
        changeOrigin: true,
        agent,
        proxyTimeout: 10 * 60_000,
        on: {
          proxyReq: (proxyReq, req) => {
            const r = req as import('express').Request;
            proxyReq.removeHeader('cookie');
            proxyReq.removeHeader('authorization');
            proxyReq.removeHeader(IDENTITY_HEADER);
            proxyReq.removeHeader(SIGNATURE_HEADER);
            for (const [k, v] of Object.entries(signIdentity(r.identity!, config.internalSecret))) proxyReq.setHeader(k, v);
            proxyReq.setHeader(REQUEST_ID_HEADER, r.requestId);
            fixRequestBody(proxyReq, r);
          },
          error: (err, req, res) => {
            const r = req as WithAttempt;
            if (r.socket?.destroyed || (res as import('http').ServerResponse).destroyed) {
              // The caller went away (client abort): not a service failure.
              logger.debug('client aborted a proxied request', { service, err: (err as Error).message });
              return;
            }
            // A replica of a pooled service that refused or dropped the connection: mark it down and send the
            // request to the next replica (queries are read-only; the body is re-sent from req.body).
            const attempt = r[ATTEMPT];
            const pool = poolFor(service);
            const out0 = res as import('http').ServerResponse;
            if (pool && attempt?.target && !out0.headersSent && isConnectionFailure(err)) {
              pool.markDown(attempt.target);
              attempt.tried.add(attempt.target);
              if (attempt.tried.size < Math.max(2, pool.size)) {
                proxyFor(service)(r, res as import('express').Response, () => undefined);
                return;
              }
            }
            logger.error('upstream unavailable', { service, err: (err as Error).message });
            const out = res as import('http').ServerResponse;
            if (!out.headersSent && typeof out.writeHead === 'function') {
              out.writeHead(503, { 'content-type': 'application/json' });
              out.end(JSON.stringify({ error: { code: 'upstream_unavailable', message: `The ${service} service is unavailable`, requestId: r.requestId } }));
            }
          },
        },
      }) as RequestHandler;
      proxies.set(service, p);
    }
    return p;
  };

  return (req, res, next) => {
    const path = req.baseUrl + req.path;
    if (!isApiPath(path)) return next();
    // Default deny: only routes of the contracts table are forwarded (never an `internal` one).
    const match = matchRoute(req.method, path);
    if (match.kind === 'none') return next(new NotFoundError(`No route for ${req.method} ${path}`));
    if (match.kind === 'method') {
      res.setHeader('Allow', match.allow.join(', '));
      return next(new AppError('method_not_allowed', `${req.method} is not allowed on ${path} (allowed: ${match.allow.join(', ')})`, 405));
    }
    // The gateway's own routes are mounted before the dispatcher; nothing to forward.
    if (match.def.service === 'gateway') return next();
    const service = match.def.service;
    (async () => {
      if (needsServerResolution(service)) {
        const fromQuery = typeof req.query.server === 'string' ? req.query.server : undefined;
        const body = req.body as Record<string, unknown> | undefined;
        const fromBody = body && typeof body === 'object' && typeof body.server === 'string' ? body.server : undefined;
        const given = fromQuery ?? fromBody;
        const resolved = await resolver.resolve(given === '' ? undefined : given);
        if (resolved) req.identity = { ...req.identity!, serverId: resolved.id };
      }
    })().then(() => proxyFor(service)(req, res, next), next);
  };
}
