import { OpenAPIRegistry, OpenApiGeneratorV3, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from './zod';

/**
 * The public API, described once from the same zod schemas that validate it. Every contracts
 * module registers its routes here with `defineRoute`; the gateway serves the generated
 * document at `/api/openapi.json`.
 */
export const apiRegistry = new OpenAPIRegistry();

export const ErrorBody = z
  .object({ error: z.object({ code: z.string(), message: z.string(), requestId: z.string() }) })
  .openapi('Error');

/** The optional `server` selector every endpoint accepts: display name or internal id. */
export const ServerParam = z.string().min(1).max(200).optional().openapi({ description: 'Media server display name or internal id; default server when absent' });

apiRegistry.registerComponent('securitySchemes', 'cookieAuth', { type: 'apiKey', in: 'cookie', name: 'polyphony_session' });
apiRegistry.registerComponent('securitySchemes', 'bearerAuth', { type: 'http', scheme: 'bearer', description: 'API_TOKEN' });

type Method = RouteConfig['method'];

export interface RouteDef {
  method: Method;
  /** Express-style path (`/api/servers/:id`); converted to OpenAPI `{id}`. */
  path: string;
  summary: string;
  tags: string[];
  /** admin | user | public */
  access: 'admin' | 'user' | 'public';
  query?: z.AnyZodObject;
  params?: z.AnyZodObject;
  body?: z.ZodTypeAny;
  response?: z.ZodTypeAny;
  status?: number;
}

/** Registers a route in the OpenAPI registry and returns its definition (used by routers to validate). */
export function defineRoute<T extends RouteDef>(def: T): T {
  const status = def.status ?? 200;
  apiRegistry.registerPath({
    method: def.method,
    path: def.path.replace(/:(\w+)/g, '{$1}'),
    summary: def.summary,
    tags: def.tags,
    description: `Access: ${def.access}`,
    security: def.access === 'public' ? [] : [{ cookieAuth: [] }, { bearerAuth: [] }],
    request: {
      query: def.query,
      params: def.params,
      body: def.body ? { content: { 'application/json': { schema: def.body } } } : undefined,
    },
    responses: {
      [status]: { description: 'Success', content: def.response ? { 'application/json': { schema: def.response } } : undefined },
      '4XX': { description: 'Client error', content: { 'application/json': { schema: ErrorBody } } },
      '5XX': { description: 'Server error', content: { 'application/json': { schema: ErrorBody } } },
    },
  });
  return def;
}

/** The OpenAPI 3 document of everything registered so far. */
export function buildOpenApiDocument(version: string): ReturnType<OpenApiGeneratorV3['generateDocument']> {
  return new OpenApiGeneratorV3(apiRegistry.definitions).generateDocument({
    openapi: '3.0.3',
    info: { title: 'polyphony API', version, description: 'Music analysis, similarity and playlists over one or several media servers. Every endpoint accepts the optional `server` parameter.' },
    servers: [{ url: '/' }],
  });
}
