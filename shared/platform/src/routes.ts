import type { RequestHandler, Router } from 'express';
import { bySpecificity, compileRoute, routeKey, type RouteDef } from '@polyphony/contracts';
import { parseOrThrow } from './http';

/**
 * The handlers of a service's routes, collected by route definition (from `@polyphony/contracts`'s
 * `api` table) instead of by path literal: `routeHandlers().on(api.features.similarTracks, handler)`.
 * Each routes module of a service returns one; the composition root hands them all to `mountRoutes`.
 */
export class RouteHandlers {
  readonly entries: Array<{ def: RouteDef; handlers: RequestHandler[] }> = [];

  /** Adds the handler chain of one route (middlewares such as `requireRole` first, the route handler last). */
  on(def: RouteDef, ...handlers: RequestHandler[]): this {
    if (handlers.length === 0) throw new Error(`No handler given for ${routeKey(def)}`);
    this.entries.push({ def, handlers });
    return this;
  }
}

export function routeHandlers(): RouteHandlers {
  return new RouteHandlers();
}

/**
 * Validates path parameters, query and JSON body against the route's schemas (400 `invalid_request`
 * in the error shape on failure). It checks only; the handler still reads `req.params`/`req.query`/
 * `req.body` (and may parse them again into their typed form).
 */
export function validateRequest(def: RouteDef): RequestHandler {
  return (req, _res, next) => {
    try {
      if (def.params) parseOrThrow(def.params, req.params, 'path');
      if (def.query) parseOrThrow(def.query, req.query, 'query');
      if (def.body && !def.uploadTypes) parseOrThrow(def.body, req.body ?? {}, 'body');
      next();
    } catch (err) {
      next(err);
    }
  };
}

/**
 * Registers every route of `routes` (one service's slice of the table: `routesOf('index')`) on
 * `router` with its handlers, most specific path first (a literal segment before a `:param`).
 * Request validation from the route's schemas runs just before the last handler (after middlewares
 * such as `requireRole`, so a non-admin still gets 403 before a 400).
 *
 * Throws (at startup, so the service's tests fail) when a route of `routes` has no handler, when a
 * handler is given for a route not in `routes` (another service's, or not in the table), or when a
 * route gets two handler chains.
 */
export function mountRoutes(router: Pick<Router, 'get' | 'post' | 'put' | 'patch' | 'delete'>, routes: readonly RouteDef[], handlers: RouteHandlers | RouteHandlers[]): void {
  const sets = Array.isArray(handlers) ? handlers : [handlers];
  const byDef = new Map<RouteDef, RequestHandler[]>();
  for (const set of sets) {
    for (const { def, handlers: chain } of set.entries) {
      if (!routes.includes(def)) throw new Error(`Handler for ${routeKey(def)} (${def.service}) is not one of this service's routes`);
      if (byDef.has(def)) throw new Error(`Two handlers for ${routeKey(def)}`);
      byDef.set(def, chain);
    }
  }
  const missing = routes.filter((d) => !byDef.has(d)).map(routeKey);
  if (missing.length > 0) throw new Error(`No handler for route(s) of this service: ${missing.join(', ')}`);
  for (const compiled of routes.map(compileRoute).sort(bySpecificity)) {
    const def = compiled.def;
    const chain = byDef.get(def)!;
    const wired = [...chain.slice(0, -1), validateRequest(def), chain[chain.length - 1]!];
    router[def.method as 'get' | 'post' | 'put' | 'patch' | 'delete'](def.path, ...wired);
  }
}
