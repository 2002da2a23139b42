import { OpenAPIRegistry, OpenApiGeneratorV3, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from './zod';

/**
 * The public API, described once from the same zod schemas that validate it. Every contracts
 * module registers its routes here with `defineRoute`; the gateway serves the generated
 * document at `/api/openapi.json`.
 */
export const apiRegistry = new OpenAPIRegistry();

/**
 * The error envelope of every 4xx/5xx answer: `error` is the human-readable message (what clients print),
 * `code` the machine code, `request_id` the request's id (also in `x-request-id`); `details` only where
 * there are some (a validation failure: the schema's issues).
 */
export const ErrorBody = z
  .object({
    error: z.string().openapi({ description: 'Human-readable message', example: 'Invalid query: n: Number must be less than or equal to 500' }),
    code: z.string().openapi({ description: 'Machine code', example: 'validation_failed' }),
    request_id: z.string().openapi({ description: 'Request id (also the x-request-id header)' }),
    details: z.unknown().optional().openapi({ description: 'Details of the error: for validation_failed, the schema issues [{ path, message, code }]' }),
  })
  .openapi('Error');

/** The optional `server` selector every endpoint accepts: display name or internal id. */
export const ServerParam = z.string().min(1).max(200).optional().openapi({ description: 'Media server display name or internal id; default server when absent' });

apiRegistry.registerComponent('securitySchemes', 'cookieAuth', { type: 'apiKey', in: 'cookie', name: 'polyphony_session' });
apiRegistry.registerComponent('securitySchemes', 'bearerAuth', { type: 'http', scheme: 'bearer', description: 'API_TOKEN' });

type Method = RouteConfig['method'];

/** The unit that serves a route: one of the five services, or the gateway itself. */
export type RouteService = 'registry' | 'catalogue' | 'analysis' | 'index' | 'playlist' | 'gateway';
export const ROUTE_SERVICES: readonly RouteService[] = ['registry', 'catalogue', 'analysis', 'index', 'playlist', 'gateway'];

/**
 * Who may call a route:
 * - `public`: anyone, no authentication (login, health, the OpenAPI document);
 * - `user`: any authenticated caller (session cookie, API token, or AUTH_ENABLED off);
 * - `admin`: an authenticated caller with the admin role (403 otherwise); the gateway enforces it from this table;
 * - `bearer`: only the API token (`Authorization: Bearer`), never a session;
 * - `internal`: service-to-service only (signed internal identity); the gateway never routes it and the
 *   OpenAPI document leaves it out.
 */
export type RouteAccess = 'public' | 'user' | 'admin' | 'bearer' | 'internal';

export interface RouteDef {
  method: Method;
  /** Express-style path (`/api/servers/:id`); converted to OpenAPI `{id}`. */
  path: string;
  summary: string;
  tags: string[];
  /** The service that mounts the handler (the gateway proxies the route there). */
  service: RouteService;
  access: RouteAccess;
  /** Reachable without authentication while no admin exists (the first-run Setup window). */
  firstRun?: boolean;
  /** Largest JSON body in bytes the gateway reads for this route (default DEFAULT_BODY_LIMIT, 16 kB). */
  bodyLimit?: number;
  /** Media types of a streamed upload body the gateway passes through unread (the service bounds its size). */
  uploadTypes?: readonly string[];
  /** The fields of a `multipart/form-data` upload (documented in OpenAPI; the service reads the stream itself). */
  form?: z.AnyZodObject;
  query?: z.AnyZodObject;
  params?: z.AnyZodObject;
  body?: z.ZodTypeAny;
  response?: z.ZodTypeAny;
  /**
   * Other media types the route answers in when the caller's `Accept` asks for one of them (content negotiation:
   * the JSON `response` stays the default, for callers that ask for JSON or nothing). Each type documents its
   * own layout next to its codec (e.g. `SNAPSHOT_PAGE_BINARY_TYPE`).
   */
  alternateTypes?: readonly string[];
  status?: number;
}

/** Default JSON body limit at the gateway (server settings, searches, task starts): 16 kB. */
export const DEFAULT_BODY_LIMIT = 16 * 1024;

const table: RouteDef[] = [];

/** `GET /api/servers/:id`: the identity of a route in the table (method upper-case, Express path). */
export function routeKey(def: Pick<RouteDef, 'method' | 'path'>): string {
  return `${def.method.toUpperCase()} ${def.path}`;
}

/**
 * Adds a route to the one route table (and, unless internal, to the OpenAPI registry) and returns
 * its definition. The gateway's routing and authorization, each service's mounted handlers
 * (`mountRoutes`), the peer clients and the browser client are all read from this table.
 * Throws when the same method and path are defined twice.
 */
export function defineRoute<T extends RouteDef>(def: T): T {
  // Two services may each serve the same internal path (GET /internal/stats); a public path has one owner.
  if (table.some((d) => routeKey(d) === routeKey(def) && !(d.access === 'internal' && def.access === 'internal' && d.service !== def.service))) throw new Error(`Route ${routeKey(def)} is defined twice`);
  table.push(def);
  if (def.access === 'internal') return def;
  const status = def.status ?? 200;
  apiRegistry.registerPath({
    method: def.method,
    path: def.path.replace(/:(\w+)/g, '{$1}'),
    summary: def.summary,
    tags: def.tags,
    description: `Access: ${def.access}${def.firstRun ? ' (open without authentication while no admin exists)' : ''}`,
    security: def.access === 'public' ? [] : def.access === 'bearer' ? [{ bearerAuth: [] }] : [{ cookieAuth: [] }, { bearerAuth: [] }],
    request: {
      query: def.query,
      params: def.params,
      body: def.body ? { content: { 'application/json': { schema: def.body } } } : def.form ? { content: { 'multipart/form-data': { schema: def.form } } } : undefined,
    },
    responses: {
      [status]: { description: 'Success', content: def.response ? { 'application/json': { schema: def.response } } : undefined },
      '4XX': { description: 'Client error', content: { 'application/json': { schema: ErrorBody } } },
      '5XX': { description: 'Server error', content: { 'application/json': { schema: ErrorBody } } },
    },
  });
  return def;
}

/** Every route defined so far (all contracts modules are loaded by the package index). */
export function routeTable(): readonly RouteDef[] {
  return table;
}

/** The routes one service (or the gateway) serves. */
export function routesOf(service: RouteService): RouteDef[] {
  return table.filter((d) => d.service === service);
}

/** The OpenAPI 3 document of everything registered so far. */
export function buildOpenApiDocument(version: string): ReturnType<OpenApiGeneratorV3['generateDocument']> {
  return new OpenApiGeneratorV3(apiRegistry.definitions).generateDocument({
    openapi: '3.0.3',
    info: { title: 'polyphony API', version, description: 'Music analysis, similarity and playlists over one or several media servers. Every endpoint accepts the optional `server` parameter.' },
    servers: [{ url: '/' }],
  });
}
