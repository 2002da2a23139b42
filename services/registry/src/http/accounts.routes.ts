import { api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import { accountOwner, type AccountService } from '../domain/account.service';

/**
 * Households (issue 34): the caller's own media-server accounts under /api/me (any signed-in user; answers
 * never hold a secret), and the internal connection-for-user read of the playlist service.
 */
export function accountRoutes(accounts: AccountService): RouteHandlers {
  const r = routeHandlers();
  r.json(api.accounts.list, async (_input, req) => ({ accounts: await accounts.list(accountOwner(req.identity)) }));
  r.json(api.accounts.get, ({ params: { id } }, req) => accounts.get(accountOwner(req.identity), id));
  r.json(api.accounts.link, ({ params: { id }, body }, req) => accounts.link(accountOwner(req.identity), id, body));
  r.json(api.accounts.unlink, async ({ params: { id } }, req, res) => {
    await accounts.unlink(accountOwner(req.identity), id);
    res.status(204).end();
  });
  r.json(api.accounts.libraryScope, ({ params: { id }, body }, req) => accounts.setLibraryScope(accountOwner(req.identity), id, body.limit_to_libraries));
  r.json(api.accounts.plexPin, async ({ body }, _req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json(await accounts.plexPin(body.client_id));
  });
  r.json(api.accountsInternal.forgetUser, async ({ params: { userId } }) => ({ removed: await accounts.forgetUser(userId) }));
  r.json(api.accountsInternal.libraryScope, ({ params: { id }, query: { userId } }) => accounts.libraryScope(id, userId));
  r.json(api.accountsInternal.serverForUser, ({ params: { id }, query: { userId } }) => accounts.connectionFor(id, userId));
  return r;
}
