import { api, type ServerUpdate, type z } from '@polyphony/contracts';
import { NotFoundError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { PlexLinkService } from '../domain/plex-link.service';
import type { MusicServer } from '../domain/server';
import { toView, type ServerService } from '../domain/server.service';

/**
 * Server registry endpoints (spec: Endpoints, server registry). Listing: any authenticated caller,
 * credentials masked, none at all for non-admins. Mutations: admin (the gateway enforces it too).
 */
export function serverRoutes(servers: ServerService, plex: PlexLinkService): RouteHandlers {
  const r = routeHandlers();

  r.json(api.servers.list, async (_input, req) => {
    const list = await servers.list();
    const isAdmin = req.identity?.role === 'admin';
    return { servers: list.map((s) => toView(s, isAdmin)), default_id: list.find((s) => s.isDefault)?.id ?? null, multi_server_enabled: true };
  });
  r.json(api.servers.create, async ({ body }) => toView(await servers.create({ ...body, creds: body.creds as Record<string, string> }), true));
  r.json(api.servers.test, ({ body }) => servers.test({ ...body, creds: body.creds as Record<string, string> }));
  // 201 for a new server, 200 when the token was stored on an existing one (`server_id`).
  r.json(api.servers.signIn, async ({ body }, _req, res) => {
    const saved = await servers.signIn(body);
    res.status(body.server_id ? 200 : 201).json(toView(saved, true));
  });
  r.json(api.servers.libraries, async ({ body }) => {
    const libs = await servers.libraries({ ...body, creds: body.creds as Record<string, string> });
    return { libraries: libs.map((l) => ({ id: l.id, name: l.name, path: l.path })) };
  });
  r.json(api.servers.align, async () => ({ enqueued: true, task_id: await servers.requestAlignment(false) }));
  // PUT and PATCH (the reference accepts both): a partial update either way.
  const update = async (id: string, body: z.infer<typeof ServerUpdate>) => toView(await servers.update(id, { ...body, creds: body.creds as Record<string, string> | undefined }), true);
  r.json(api.servers.update, ({ params: { id }, body }) => update(id, body));
  r.json(api.servers.patch, ({ params: { id }, body }) => update(id, body));
  r.json(api.servers.remove, async ({ params: { id } }) => {
    await servers.delete(id);
    return { deleted: id };
  });
  r.json(api.servers.makeDefault, async ({ params: { id } }) => toView(await servers.makeDefault(id), true));
  r.json(api.servers.sweep, async ({ params: { id } }) => ({ enqueued: true, task_id: await servers.requestSweep(id), server_id: id }));
  r.json(api.servers.plexPin, ({ body }) => plex.create(body.client_id));
  r.json(api.servers.plexPinPoll, async ({ params: { id }, query: { client_id } }, _req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json(await plex.poll(id, client_id));
  });

  // Internal (service callers only: the route table's `internal` access, enforced by mountRoutes).
  r.json(api.internal.serversResolve, async ({ query: { server } }) => {
    const s = await servers.resolve(server);
    return { server: s ? { id: s.id, name: s.name, server_type: s.type } : null };
  });
  r.json(api.internal.serversList, async () => {
    const list = await servers.list();
    return { servers: list.map((s) => toServerInfo(s, servers)) };
  });
  r.json(api.internal.serverGet, async ({ params: { id } }) => {
    const s = await servers.resolve(id);
    if (!s) throw new NotFoundError(`Server ${id} not found`);
    return toServerInfo(s, servers);
  });
  return r;
}

/** The internal ServerInfo of a server: decrypted connection and the change-detection setting (push token as its sha256 only). */
function toServerInfo(s: MusicServer, servers: ServerService) {
  const cd = s.changeDetection;
  return { id: s.id, name: s.name, type: s.type, isDefault: s.isDefault, connection: servers.connection(s), changeDetection: { mode: cd.mode, intervalSeconds: cd.intervalSeconds, pushTokenSha256: cd.pushTokenSha256 } };
}
