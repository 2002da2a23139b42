import type { Request } from 'express';
import { savedAlchemyRoutes as routes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import { RADIO_RUN_WAIT_MS, RadioService } from './radio.service';
import type { AnchorService } from './saved-alchemy.service';
import { requestScope, type ScopeDeps } from '../core/scope';

/**
 * Anchors and radios (any authenticated caller, as in the reference; shapes shared/contracts/src/anchors.ts):
 *  GET /api/anchors -> {anchors}; GET /api/anchors/:id -> {anchor}; POST /api/anchors -> 200 {anchor} (items
 *  resolved on the selected server); PUT /api/anchors/:id {name} -> {anchor}; DELETE -> {deleted: true}.
 *  GET /api/radios -> {radios:[{id, anchor_id, name, temperature, n_results, enabled, playlist_name}]};
 *  POST /api/radios -> {radio}; PUT /api/radios/:id -> {radio}; DELETE -> {deleted: true};
 *  POST /api/radios/run {} -> 200 {playlists_created, radios_enabled, servers_enabled, message, failed,
 *  task_id, status} once the run ends (202 with the same fields so far when it takes longer than 170 s);
 *  `{wait: false}` -> 202 {task_id, task_type: 'radios', status: 'NEW'} at once.
 * Errors: 400 bad body or id, 404 unknown anchor/radio (or no ADD item in the index), 409 taken name, an
 * anchor that already has a radio, or a run already live.
 */
export function savedAlchemyRoutes(state: IndexState, scopeDeps: ScopeDeps, anchors: AnchorService, radios: RadioService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps, true);
  const userOf = (req: Request) => req.identity?.username ?? null;
  /** The signed-in caller's user id (households: whose account writes a radio's playlists); none for the API token. */
  const userIdOf = (req: Request) => (req.identity?.via === 'cookie' ? req.identity.sub : undefined);

  r.json(routes.listAnchors, async () => ({ anchors: await anchors.list() }));
  r.json(routes.getAnchor, async ({ params }) => ({ anchor: await anchors.get(params.id) }));
  r.json(routes.createAnchor, async ({ body }, req) => ({ anchor: await anchors.create((await scopeOf(req)), body, userOf(req)) }));
  r.json(routes.renameAnchor, async ({ params, body }) => ({ anchor: await anchors.rename(params.id, body.name) }));
  r.json(routes.deleteAnchor, async ({ params }) => {
    await anchors.remove(params.id);
    return { deleted: true };
  });

  r.json(routes.listRadios, async () => ({ radios: await radios.list() }));
  // Its status depends on how the run ended, so the handler answers itself (the body is the route's, parsed once).
  r.json(routes.runRadios, async ({ body }, _req, res) => {
    const run = await radios.start();
    if (body.wait === false) {
      res.status(202).json({ task_id: run.id, task_type: 'radios', status: 'NEW' });
      return;
    }
    const last = (await radios.waitFor(run.id, RADIO_RUN_WAIT_MS)) ?? run;
    res.status(last.state === 'NEW' || last.state === 'RUNNING' ? 202 : 200).json(RadioService.summary(last));
  });
  r.json(routes.createRadio, async ({ body }, req) => ({ radio: await radios.create((await scopeOf(req)), body, userOf(req), userIdOf(req)) }));
  r.json(routes.updateRadio, async ({ params, body }) => ({ radio: await radios.update(params.id, body) }));
  r.json(routes.deleteRadio, async ({ params }) => {
    await radios.remove(params.id);
    return { deleted: true };
  });
  return r;
}
