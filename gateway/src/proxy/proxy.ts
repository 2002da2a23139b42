import http from 'node:http';
import type { RequestHandler } from 'express';
import { createProxyMiddleware, fixRequestBody } from 'http-proxy-middleware';
import { IDENTITY_HEADER, REQUEST_ID_HEADER, SIGNATURE_HEADER, signIdentity, type Logger } from '@polyphony/platform';
import type { GatewayConfig, ServiceName } from '../config';
import { needsServerResolution, serviceFor } from './routes';
import type { ServerResolver } from './server-resolver';

/**
 * Forwards /api and /external requests to their owning service with http-proxy-middleware.
 * The caller's cookie and Authorization header are stripped (services never see secrets);
 * the verified identity, with the resolved server id, travels in the signed internal header.
 */
export function proxyDispatcher(config: GatewayConfig, targets: () => Record<ServiceName, string>, resolver: ServerResolver, logger: Logger): RequestHandler {
  const proxies = new Map<ServiceName, RequestHandler>();
  // Keep-alive to the services: without an agent http-proxy opens (and closes) a connection per request.
  // An idle socket is dropped after 4 s, before the services' 5 s keep-alive timeout (Node's default)
  // closes it from their side: reusing a socket the server is closing fails with "socket hang up"
  // (a spurious 503). Found by the fuzz suite. Requests in flight use proxyTimeout instead.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 4000 });
  const proxyFor = (service: ServiceName): RequestHandler => {
    let p = proxies.get(service);
    if (!p) {
      p = createProxyMiddleware({
        router: () => targets()[service],
        target: targets()[service],
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
            const r = req as import('express').Request;
            if (r.socket?.destroyed || (res as import('http').ServerResponse).destroyed) {
              // The caller went away (client abort): not a service failure.
              logger.debug('client aborted a proxied request', { service, err: (err as Error).message });
              return;
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
    const service = serviceFor(req.path);
    if (!service) {
      next();
      return;
    }
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
