import http from 'node:http';
import type { RequestHandler } from 'express';
import { createProxyMiddleware, fixRequestBody } from 'http-proxy-middleware';
import { AppError, IDENTITY_HEADER, IdentitySigner, NotFoundError, REQUEST_ID_HEADER, SIGNATURE_HEADER, type Logger } from '@polyphony/platform';
import type { GatewayConfig, ServiceName } from '../config';
import { isApiPath, matchRoute, needsServerResolution } from './routes';
import type { ServerResolver } from './server-resolver';
import { UpstreamPool, isConnectionFailure } from './upstream-pool';

const noop = (): void => undefined;

/** Per-request proxy state: replicas already tried (a pooled service retries on another replica). */
interface Attempt {
  service: ServiceName;
  tried: Set<string>;
  target?: string;
  /** Ends the attempt's in-flight count on its replica (`Upstreams.acquire`; idempotent). */
  release?: () => void;
}
const ATTEMPT = Symbol('upstream-attempt');
type WithAttempt = import('express').Request & { [ATTEMPT]?: Attempt };

/**
 * The connections of the gateway to the services, shared by the express dispatcher and the lean path:
 * one keep-alive agent, the replica pools, and the signer of the identity header.
 */
export class Upstreams {
  // Keep-alive to the services: without an agent http-proxy opens (and closes) a connection per request.
  // An idle socket is dropped after 4 s, before the services' 5 s keep-alive timeout (Node's default)
  // closes it from their side: reusing a socket the server is closing fails with "socket hang up"
  // (a spurious 503). Found by the fuzz suite. Requests in flight use the proxy timeout instead.
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 4000 });
  readonly signer: IdentitySigner;
  private readonly pools = new Map<string, UpstreamPool>();

  constructor(
    readonly targets: () => Record<ServiceName, string>,
    internalSecret: string,
    private readonly logger: Logger,
  ) {
    this.signer = new IdentitySigner(internalSecret);
  }

  /**
   * The replica pool of `service`, or undefined for a single-URL service. A service URL with commas is a
   * list of replicas (e.g. INDEX_URL for several index replicas). The index always gets a pool, so even
   * behind one Kubernetes Service URL a request whose connection was refused or reset (a pod stopping) is
   * sent once more on a fresh connection, which the Service routes to a ready pod.
   */
  poolFor(service: ServiceName): UpstreamPool | undefined {
    const value = this.targets()[service];
    if (!value.includes(',') && service !== 'index') return undefined;
    let pool = this.pools.get(value);
    if (!pool) {
      pool = new UpstreamPool(UpstreamPool.parse(value), this.logger.child({ component: 'UpstreamPool', service }));
      pool.start();
      this.pools.set(value, pool);
    }
    return pool;
  }

  /**
   * The replica for the next attempt of a request (skipping `tried`; the service's single URL without a pool), counted
   * as in flight on it (least-in-flight balancing, `UpstreamPool`): call the returned `release` when the attempt's
   * answer has ended or the attempt failed (idempotent). Used by both the lean path and the generic proxy.
   */
  acquire(service: ServiceName, tried: ReadonlySet<string>): { target: string; release: () => void } {
    const pool = this.poolFor(service);
    if (!pool) return { target: this.targets()[service], release: noop };
    const counted = pool.acquire(tried);
    if (counted === undefined) return { target: pool.urls[0]!, release: noop };
    let done = false;
    return {
      target: counted,
      release: () => {
        if (done) return;
        done = true;
        pool.release(counted);
      },
    };
  }

  /**
   * After a failed attempt on `target`: whether the request may go to another replica (a connection
   * refused or reset before any answer, on a pooled service, with a replica left untried). Marks the
   * replica down and records it in `tried`.
   */
  retryAfter(service: ServiceName, target: string, tried: Set<string>, err: unknown): boolean {
    const pool = this.poolFor(service);
    if (!pool || !isConnectionFailure(err)) return false;
    pool.markDown(target);
    tried.add(target);
    return tried.size < Math.max(2, pool.size);
  }

  /** Stops the pools' readiness probes. */
  stop(): void {
    for (const pool of this.pools.values()) pool.stop();
  }
}

/** Body of the 503 answered when no replica of `service` took the request. */
export function upstreamUnavailableBody(service: ServiceName, requestId: string): string {
  return JSON.stringify({ error: { code: 'upstream_unavailable', message: `The ${service} service is unavailable`, requestId } });
}

/**
 * Forwards /api, /external and /chat/api requests to the owning service of their route in the
 * contracts table with http-proxy-middleware (404 for a path not in the table, 405 with `Allow` for a
 * known path with another method).
 * The caller's cookie and Authorization header are stripped (services never see secrets);
 * the verified identity, with the resolved server id, travels in the signed internal header.
 * Authenticated GET requests without a body are usually answered by the lean path first (lean-proxy.ts).
 */
export function proxyDispatcher(
  config: Pick<GatewayConfig, 'internalSecret'>,
  targets: () => Record<ServiceName, string>,
  resolver: ServerResolver,
  logger: Logger,
  /** Shared with the lean path (the gateway passes its own); made here when absent. */
  upstreams: Upstreams = new Upstreams(targets, config.internalSecret, logger),
): RequestHandler {
  const proxies = new Map<ServiceName, RequestHandler>();
  const { agent } = upstreams;
  const targetOf = (service: ServiceName, req: WithAttempt): string => {
    const attempt = (req[ATTEMPT] ??= { service, tried: new Set() });
    // Counted in flight on the replica like the lean path's requests, so both paths inform the balancing; released
    // when the upstream request closes (answer ended or failed), or with the caller's response at the latest.
    attempt.release?.();
    const { target, release } = upstreams.acquire(service, attempt.tried);
    attempt.target = target;
    attempt.release = release;
    req.res?.once('close', release);
    return target;
  };
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
            const release = (req as WithAttempt)[ATTEMPT]?.release;
            if (release) proxyReq.once('close', release);
            const r = req as import('express').Request;
            proxyReq.removeHeader('cookie');
            proxyReq.removeHeader('authorization');
            proxyReq.removeHeader(IDENTITY_HEADER);
            proxyReq.removeHeader(SIGNATURE_HEADER);
            for (const [k, v] of Object.entries(upstreams.signer.headers(r.identity!))) proxyReq.setHeader(k, v);
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
            const out = res as import('http').ServerResponse;
            if (attempt?.target && !out.headersSent && upstreams.retryAfter(service, attempt.target, attempt.tried, err)) {
              proxyFor(service)(r, res as import('express').Response, () => undefined);
              return;
            }
            logger.error('upstream unavailable', { service, err: (err as Error).message });
            if (!out.headersSent && typeof out.writeHead === 'function') {
              out.writeHead(503, { 'content-type': 'application/json' });
              out.end(upstreamUnavailableBody(service, r.requestId));
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
