import http, { type IncomingHttpHeaders } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { IDENTITY_HEADER, IdentitySigner, REQUEST_ID_HEADER, SIGNATURE_HEADER, hasBody, sendError, setRetryAfter, type CallerIdentity, type Logger } from '@polyphony/platform';
import type { ServiceName } from '../config';
import { needsServerResolution } from './routes';
import type { ServerResolver } from './server-resolver';
import { UpstreamPool, isConnectionFailure } from './upstream-pool';

const noop = (): void => undefined;
/** Headers never forwarded to a service: the caller's secrets, a forged identity, hop-by-hop headers (RFC 9110 7.6.1), and the framing of a body that is re-sent. */
const DROPPED_REQUEST_HEADERS = new Set(['cookie', 'authorization', IDENTITY_HEADER, SIGNATURE_HEADER, 'host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']);
/** Hop-by-hop headers of a service's answer, not copied to the caller (Node sets its own connection headers). */
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);
/** A long query (a full rebuild answer) may take minutes. */
const UPSTREAM_TIMEOUT_MS = 10 * 60_000;

/**
 * The connections of the gateway to the services, used by the forwarder (`Forwarder`):
 * one keep-alive agent, the replica pools, and the signer of the identity header.
 */
export class Upstreams {
  // Keep-alive to the services: without an agent every request opens (and closes) a connection.
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
   * answer has ended or the attempt failed (idempotent). 
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

/**
 * Forwards a request of the route table to the service that owns the route: the request pipeline has
 * authenticated the caller, decided access and run the route's stages (CSRF, body limit and parsing), so this
 * is the route's whole handler. One `http.request` on the shared keep-alive agent per attempt:
 * - the `server` parameter (query, else a JSON body's `server`) resolved to the registry's id (`ServerResolver`;
 *   400 for an unknown server; in the same turn when resolved in the last 2 s); the registry's own routes are
 *   not resolved;
 * - the caller's cookie, Authorization and any identity headers dropped; the signed identity (with the
 *   resolved `serverId`) and the request id added;
 * - a JSON body the pipeline parsed is sent as its JSON text (new Content-Length); a streamed upload is piped
 *   through unread; the service's answer (status, headers without hop-by-hop ones, body) is piped back;
 * - a request that failed on a reused keep-alive socket before any answer (the service had closed it) is sent once
 *   more on a new connection; a connection refused or reset before any answer is retried once on another replica of
 *   a pooled service (never a streamed upload, which cannot be sent twice); when no replica answers, 503 `upstream_unavailable`
 *   in the error envelope, with `Retry-After`.
 */
export class Forwarder {
  private readonly targetsParsed = new Map<string, URL>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly resolver: ServerResolver,
    private readonly logger: Logger,
  ) {}

  /** The handler of every route `service` owns. */
  handler(service: ServiceName): RequestHandler {
    return (req, res, next) => {
      const identity = req.identity!;
      if (!needsServerResolution(service)) return this.forward(service, req, res, identity, new Set());
      const fromQuery = typeof req.query.server === 'string' ? req.query.server : undefined;
      const body = req.body as Record<string, unknown> | undefined;
      const fromBody = body && typeof body === 'object' && typeof body.server === 'string' ? body.server : undefined;
      const raw = fromQuery ?? fromBody;
      const given = raw === '' ? undefined : raw;
      const cached = this.resolver.peek(given);
      if (cached) return this.forward(service, req, res, cached.server ? { ...identity, serverId: cached.server.id } : identity, new Set());
      this.resolver.resolve(given).then((resolved) => this.forward(service, req, res, resolved ? { ...identity, serverId: resolved.id } : identity, new Set()), next);
    };
  }

  private urlOf(target: string): URL {
    let u = this.targetsParsed.get(target);
    if (!u) {
      u = new URL(target);
      if (this.targetsParsed.size > 64) this.targetsParsed.clear();
      this.targetsParsed.set(target, u);
    }
    return u;
  }

  /**
   * One attempt. `staleRetried`: this request was already sent again once because a kept-alive socket the service had
   * closed failed it (see the 'error' handler); it is not sent a third time.
   */
  private forward(service: ServiceName, req: Request, res: Response, caller: CallerIdentity, tried: Set<string>, staleRetried = false): void {
    const { upstreams, logger } = this;
    const { target, release } = upstreams.acquire(service, tried);
    const u = this.urlOf(target);
    const out: Record<string, string | string[]> = {};
    copyHeaders(req.headers, out, DROPPED_REQUEST_HEADERS);
    out.host = u.host;
    Object.assign(out, upstreams.signer.headers(caller));
    out[REQUEST_ID_HEADER] = req.requestId;
    // A body the pipeline parsed (body-parser marks it `_body`) is re-sent as JSON; anything else unread is streamed.
    const parsed = (req as { _body?: boolean })._body === true;
    const payload = parsed ? Buffer.from(JSON.stringify(req.body), 'utf8') : undefined;
    const streamed = !parsed && hasBody(req) && !req.readableEnded;
    if (payload) {
      out['content-length'] = String(payload.length);
    } else if (streamed && req.headers['transfer-encoding'] !== undefined) {
      delete out['content-length'];
      out['transfer-encoding'] = 'chunked';
    }
    const base = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
    // The time-out goes in the options (the agent gives the socket, new or reused, this time-out when it hands it over),
    // not through req.setTimeout: that replaced the agent's 4 s idle time-out only at 'connect', so an event loop that
    // stalled 4 s between the two (an analysis step in the one-process stack) fired it on a healthy connection
    // ("upstream timeout", a spurious 503). 'timeout' only reports the idle socket: the request is destroyed here.
    const up = http.request({ agent: upstreams.agent, hostname: u.hostname, port: u.port || 80, method: req.method, path: base + req.originalUrl, headers: out, timeout: UPSTREAM_TIMEOUT_MS });
    // The request leaves the replica's in-flight count when it is done: answer ended, or failed ('close' either way).
    up.once('close', release);
    up.on('timeout', () => up.destroy(Object.assign(new Error('upstream timeout'), { code: 'ETIMEDOUT' })));
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
      // A kept-alive socket that the service closed while it was idle (its keep-alive timeout raced the agent's, which
      // an event loop lagging under load makes likely) fails before the request was read: send it once more on a new
      // connection (the pattern Node's http docs give for `request.reusedSocket`), to the same service.
      if (!res.headersSent && !streamed && !staleRetried && up.reusedSocket && isConnectionFailure(err)) {
        logger.debug('kept-alive socket closed by the service; sending the request again', { service, err: err.message });
        this.forward(service, req, res, caller, tried, true);
        return;
      }
      if (!res.headersSent && !streamed && upstreams.retryAfter(service, target, tried, err)) {
        this.forward(service, req, res, caller, tried, staleRetried);
        return;
      }
      logger.error('upstream unavailable', { service, err: err.message });
      if (!res.headersSent) {
        setRetryAfter(res);
        sendError(res, 503, 'upstream_unavailable', `The ${service} service is unavailable`, req.requestId);
      }
      else res.destroy();
    });
    if (payload) up.end(payload);
    else if (streamed) req.pipe(up);
    else up.end();
  }
}

/** Copies `from` into `to` without the names in `dropped` (lower-case). */
function copyHeaders(from: IncomingHttpHeaders, to: Record<string, string | string[]>, dropped: ReadonlySet<string>): void {
  for (const name in from) {
    const value = from[name];
    if (value === undefined || dropped.has(name)) continue;
    to[name] = value;
  }
}
