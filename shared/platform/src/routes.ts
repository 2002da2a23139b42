import type { Express, Request, RequestHandler, Response } from 'express';
import { bySpecificity, compileRoute, routeKey, type RouteDef } from '@polyphony/contracts';
import type { z } from 'zod';
import { asyncRoute, parseOrThrow } from './http';
import { RequestPipeline } from './pipeline';

type Parsed<S> = S extends z.ZodTypeAny ? z.output<S> : undefined;

/** A request's path parameters, query and body, parsed with the route's schemas (undefined where it has none). */
export interface ParsedInput<R extends RouteDef> {
  params: Parsed<R['params']>;
  query: Parsed<R['query']>;
  body: Parsed<R['body']>;
}

/** A request's params, query and body parsed with `def`'s schemas (the ones it has). @throws ValidationError (400) */
function parseInput<R extends RouteDef>(def: R, req: Request): ParsedInput<R> {
  return {
    params: def.params ? parseOrThrow(def.params, req.params, 'path') : undefined,
    query: def.query ? parseOrThrow(def.query, req.query, 'query') : undefined,
    body: def.body && !def.uploadTypes ? parseOrThrow(def.body, req.body ?? {}, 'body') : undefined,
  } as ParsedInput<R>;
}

/** What `validateRequest` parsed, per request, so a `json` handler does not parse the same input again. */
const validatedInput = new WeakMap<Request, { def: RouteDef; input: ParsedInput<RouteDef> }>();

/** Options of a typed handler (`json`). */
export interface HandlerOptions {
  /** Middlewares run ahead of the route's validation and its handler (e.g. a body parser with another type or limit). */
  before?: RequestHandler[];
}

/**
 * The handlers of a service's routes, collected by route definition (from `@polyphony/contracts`'s
 * `api` table) instead of by path literal: `routeHandlers().on(api.features.similarTracks, handler)`.
 * Each routes module of a service returns one; the composition root hands them all to `mountRoutes`.
 */
export class RouteHandlers {
  readonly entries: Array<{ def: RouteDef; handlers: RequestHandler[] }> = [];

  /**
   * Adds the handler chain of one route (middlewares first, the route handler last). The route's
   * `access` (public, user, admin, bearer, internal) is decided by the request pipeline from the table
   * (`decideAccess`): no role middleware is needed here.
   */
  on(def: RouteDef, ...handlers: RequestHandler[]): this {
    if (handlers.length === 0) throw new Error(`No handler given for ${routeKey(def)}`);
    this.entries.push({ def, handlers });
    return this;
  }

  /**
   * Adds a typed route: `handle` gets the params, query and body parsed with the route's schemas (typed,
   * coerced, defaults applied), the request and the response; what it returns is sent as JSON with the route's
   * `status` (default 200). Errors it throws go to the error handler (4xx/5xx in the error envelope).
   * A handler that answers itself (a stream, 204 without a body, a status chosen at run time) writes to `res`: its
   * return value is then ignored; `res` also serves for what goes beside the body (a header).
   * `options.before`: middlewares run ahead of validation and the handler (e.g. a body parser with another limit).
   */
  json<R extends RouteDef>(def: R, handle: (input: ParsedInput<R>, req: Request, res: Response) => unknown, options: HandlerOptions = {}): this {
    return this.on(
      def,
      ...(options.before ?? []),
      asyncRoute(async (req, res) => {
        // Parsed once by `validateRequest` when mounted with `mountRoutes`; parsed here otherwise.
        const done = validatedInput.get(req);
        const input = done?.def === def ? (done.input as ParsedInput<R>) : parseInput(def, req);
        const out = await handle(input, req, res);
        if (!res.headersSent) res.status(def.status ?? 200).json(out);
      }),
    );
  }
}

export function routeHandlers(): RouteHandlers {
  return new RouteHandlers();
}

/**
 * Validates path parameters, query and JSON body against the route's schemas (400 `invalid_request`
 * in the error shape on failure). The parsed input is kept for the request: a `json` handler uses it instead of
 * parsing again; other handlers still read `req.params`/`req.query`/`req.body`.
 */
export function validateRequest(def: RouteDef): RequestHandler {
  return (req, _res, next) => {
    try {
      validatedInput.set(req, { def, input: parseInput(def, req) });
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** One route as `mountRoutes` wired it: the table's definition and its handler chain. */
export interface MountedRoute {
  def: RouteDef;
  /** The route's middlewares, schema validation, the handler (the pipeline runs identification and access first). */
  chain: RequestHandler[];
}

/**
 * Serves every route of `routes` (one service's slice of the table: `routesOf('index')`) with its handlers
 * on the request pipeline of `app` (made by `createServiceHttp`; `RequestPipeline`), which identifies the
 * caller and decides access from the table (`decideAccess`: 401/403) before the chain runs. Each chain is
 * the route's middlewares, then request validation from the route's schemas (`validateRequest`: 400), then
 * the handler; so a non-admin gets 403 before a 400.
 *
 * Throws (at startup, so the service's tests fail) when a route of `routes` has no handler, when a
 * handler is given for a route not in `routes` (another service's, or not in the table), or when a
 * route gets two handler chains. Returns the wired chains, most specific path first.
 */
export function mountRoutes(app: Express | RequestPipeline, routes: readonly RouteDef[], handlers: RouteHandlers | RouteHandlers[]): MountedRoute[] {
  const pipeline = app instanceof RequestPipeline ? app : RequestPipeline.of(app);
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
  const mounted: MountedRoute[] = [];
  for (const compiled of routes.map(compileRoute).sort(bySpecificity)) {
    const def = compiled.def;
    const chain = byDef.get(def)!;
    const wired = [...chain.slice(0, -1), validateRequest(def), chain[chain.length - 1]!];
    pipeline.add(def, wired);
    mounted.push({ def, chain: wired });
  }
  return mounted;
}
