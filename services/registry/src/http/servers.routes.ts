import { Router } from 'express';
import { ServerInput, ServerSignInBody, ServerTestBody, ServerUpdate, z } from '@polyphony/contracts';
import { ForbiddenError, NotFoundError, asyncRoute, parseOrThrow, requireRole } from '@polyphony/platform';
import type { PlexLinkService } from '../domain/plex-link.service';
import { toView, type ServerService } from '../domain/server.service';

const IdParams = z.object({ id: z.string().min(1).max(100) });

/**
 * Server registry endpoints (spec: Endpoints, server registry). Listing: any authenticated caller,
 * credentials masked, none at all for non-admins. Mutations: admin (the gateway enforces it too).
 */
export function serverRoutes(servers: ServerService, plex: PlexLinkService): Router {
  const r = Router();
  const admin = requireRole('admin');

  r.get(
    '/api/servers',
    asyncRoute(async (req, res) => {
      const list = await servers.list();
      const isAdmin = req.identity?.role === 'admin';
      res.json({ servers: list.map((s) => toView(s, isAdmin)), default_id: list.find((s) => s.isDefault)?.id ?? null, multi_server_enabled: true });
    }),
  );
  r.post(
    '/api/servers',
    admin,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerInput, req.body, 'server');
      const created = await servers.create({ ...body, creds: body.creds as Record<string, string> });
      res.status(201).json(toView(created, true));
    }),
  );
  r.post(
    '/api/servers/test',
    admin,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerTestBody, req.body, 'connection test');
      res.json(await servers.test({ ...body, creds: body.creds as Record<string, string> }));
    }),
  );
  r.post(
    '/api/servers/signin',
    admin,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerSignInBody, req.body, 'sign-in');
      const saved = await servers.signIn(body);
      res.status(body.server_id ? 200 : 201).json(toView(saved, true));
    }),
  );
  r.post(
    '/api/servers/libraries',
    admin,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ServerTestBody, req.body, 'libraries request');
      const libs = await servers.libraries({ ...body, creds: body.creds as Record<string, string> });
      res.json({ libraries: libs.map((l) => ({ id: l.id, name: l.name, path: l.path })) });
    }),
  );
  r.post(
    '/api/servers/align',
    admin,
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
  r.put('/api/servers/:id', admin, updateServer);
  r.patch('/api/servers/:id', admin, updateServer);
  r.delete(
    '/api/servers/:id',
    admin,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParams, req.params, 'path');
      await servers.delete(id);
      res.json({ deleted: id });
    }),
  );
  r.post(
    '/api/servers/:id/default',
    admin,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParams, req.params, 'path');
      res.json(toView(await servers.makeDefault(id), true));
    }),
  );
  r.post(
    '/api/servers/:id/sweep',
    admin,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParams, req.params, 'path');
      const taskId = await servers.requestSweep(id);
      res.status(202).json({ enqueued: true, task_id: taskId, server_id: id });
    }),
  );
  r.post(
    '/api/plex/pin',
    admin,
    asyncRoute(async (req, res) => {
      const { client_id } = parseOrThrow(z.object({ client_id: z.string().min(1).max(200) }), req.body, 'PIN request');
      res.json(await plex.create(client_id));
    }),
  );
  r.get(
    '/api/plex/pin/:id',
    admin,
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
  r.get(
    '/internal/servers/resolve',
    internalOnly,
    asyncRoute(async (req, res) => {
      const value = typeof req.query.server === 'string' ? req.query.server : undefined;
      const s = await servers.resolve(value);
      res.json({ server: s ? { id: s.id, name: s.name, server_type: s.type } : null });
    }),
  );
  r.get(
    '/internal/servers',
    internalOnly,
    asyncRoute(async (_req, res) => {
      const list = await servers.list();
      res.json({ servers: list.map((s) => ({ id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: servers.connection(s) })) });
    }),
  );
  r.get(
    '/internal/servers/:id',
    internalOnly,
    asyncRoute(async (req, res) => {
      const s = await servers.resolve(String(req.params.id));
      if (!s) throw new NotFoundError(`Server ${req.params.id} not found`);
      res.json({ id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: servers.connection(s) });
    }),
  );
  return r;
}
