import { ServerInput, ServerSignInBody, ServerTestBody, ServerUpdate, z, api } from '@polyphony/contracts';
import { ForbiddenError, NotFoundError, asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { PlexLinkService } from '../domain/plex-link.service';
import { toView, type ServerService } from '../domain/server.service';

const IdParams = z.object({ id: z.string().min(1).max(100) });

/**
 * Server registry endpoints (spec: Endpoints, server registry). Listing: any authenticated caller,
 * credentials masked, none at all for non-admins. Mutations: admin (the gateway enforces it too).
 */
export function serverRoutes(servers: ServerService, plex: PlexLinkService): RouteHandlers {
  const r = routeHandlers();

  r.on(api.servers.list,
    asyncRoute(async (req, res) => {
      const list = await servers.list();
      const isAdmin = req.identity?.role === 'admin';
      res.json({ servers: list.map((s) => toView(s, isAdmin)), default_id: list.find((s) => s.isDefault)?.id ?? null, multi_server_enabled: true });
    }),
  );
  r.on(api.servers.create,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerInput, req.body, 'server');
      const created = await servers.create({ ...body, creds: body.creds as Record<string, string> });
      res.status(201).json(toView(created, true));
    }),
  );
  r.json(api.servers.test, ({ body }) => servers.test({ ...body, creds: body.creds as Record<string, string> }));
  r.on(api.servers.signIn,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerSignInBody, req.body, 'sign-in');
      const saved = await servers.signIn(body);
      res.status(body.server_id ? 200 : 201).json(toView(saved, true));
    }),
  );
  r.on(api.servers.libraries,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerTestBody, req.body, 'libraries request');
      const libs = await servers.libraries({ ...body, creds: body.creds as Record<string, string> });
      res.json({ libraries: libs.map((l) => ({ id: l.id, name: l.name, path: l.path })) });
    }),
  );
  r.on(api.servers.align,
    asyncRoute(async (_req, res) => {
      const taskId = await servers.requestAlignment(false);
      res.status(202).json({ enqueued: true, task_id: taskId });
    }),
  );
  // PUT and PATCH (the reference accepts both) share one handler: a partial update either way.
  const updateServer = asyncRoute(async (req, res) => {
    const { id } = parseOrThrow(IdParams, req.params, 'path');
    const body = parseOrThrow(ServerUpdate, req.body, 'server');
    res.json(toView(await servers.update(id, { ...body, creds: body.creds as Record<string, string> | undefined }), true));
  });
  r.on(api.servers.update, updateServer);
  r.on(api.servers.patch, updateServer);
  r.on(api.servers.remove,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParams, req.params, 'path');
      await servers.delete(id);
      res.json({ deleted: id });
    }),
  );
  r.json(api.servers.makeDefault, async ({ params: { id } }) => toView(await servers.makeDefault(id), true));
  r.on(api.servers.sweep,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParams, req.params, 'path');
      const taskId = await servers.requestSweep(id);
      res.status(202).json({ enqueued: true, task_id: taskId, server_id: id });
    }),
  );
  r.on(api.servers.plexPin,
    asyncRoute(async (req, res) => {
      const { client_id } = parseOrThrow(z.object({ client_id: z.string().min(1).max(200) }), req.body, 'PIN request');
      res.json(await plex.create(client_id));
    }),
  );
  r.on(api.servers.plexPinPoll,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(z.object({ id: z.string().regex(/^\d+$/, 'numeric PIN id') }), req.params, 'path');
      const { client_id } = parseOrThrow(z.object({ client_id: z.string().min(1).max(200) }), req.query, 'query');
      res.setHeader('Cache-Control', 'no-store');
      res.json(await plex.poll(id, client_id));
    }),
  );

  // Internal (service-to-service only; the gateway never routes /internal).
  const internalOnly = asyncRoute(async (req, _res, next) => {
    if (req.identity?.via !== 'internal') throw new ForbiddenError('Internal endpoint');
    next();
  });
  r.on(api.internal.serversResolve,
    internalOnly,
    asyncRoute(async (req, res) => {
      const value = typeof req.query.server === 'string' ? req.query.server : undefined;
      const s = await servers.resolve(value);
      res.json({ server: s ? { id: s.id, name: s.name, server_type: s.type } : null });
    }),
  );
  r.on(api.internal.serversList,
    internalOnly,
    asyncRoute(async (_req, res) => {
      const list = await servers.list();
      res.json({ servers: list.map((s) => ({ id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: servers.connection(s) })) });
    }),
  );
  r.on(api.internal.serverGet,
    internalOnly,
    asyncRoute(async (req, res) => {
      const s = await servers.resolve(String(req.params.id));
      if (!s) throw new NotFoundError(`Server ${req.params.id} not found`);
      res.json({ id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: servers.connection(s) });
    }),
  );
  return r;
}
