import { api } from '@polyphony/contracts';
import { UnauthorizedError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { Request, Response } from 'express';
import type { AuthService } from '../auth/auth.service';
import { SESSION_COOKIE, setSessionCookie } from '../auth/authenticate';

/**
 * Login, logout and the `/auth` alias (public). Bodies are validated with the routes' schemas before the
 * handlers run (400 `validation_failed` with the issues in `details`).
 * - `POST /login` `{ username, password }` (JSON, or a form from the login page, which is redirected 303 to `/`):
 *   `{ ok: true, user: { username, role } }` and the session cookie; 401 on a wrong username or password.
 * - `POST /auth` `{ user, password }`: the same answer (alias used by existing clients).
 * - `POST /logout`: ends the cookie's session, clears the cookie, `{ ok: true }`.
 */
export function loginRoutes(auth: AuthService): RouteHandlers {
  const doLogin = async (username: string, password: string, req: Request, res: Response) => {
    const { user, session } = await auth.login(username, password);
    setSessionCookie(res, session, req.secure);
    return { ok: true as const, user: { username: user.username, role: user.role } };
  };
  return routeHandlers()
    .json(api.auth.login, async ({ body }, req, res) => {
      const answer = await doLogin(body.username, body.password, req, res);
      if (req.is('application/x-www-form-urlencoded')) return res.redirect(303, '/');
      return answer;
    })
    .json(api.auth.authAlias, ({ body }, req, res) => doLogin(body.user, body.password, req, res))
    .json(api.auth.logout, async (_input, req, res) => {
      // Ends the server-side session, so a copy of the cookie is worthless afterwards.
      await auth.logout((req.cookies as Record<string, string> | undefined)?.[SESSION_COOKIE]);
      res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict' });
      return { ok: true };
    });
}

/**
 * /api/me, /api/users and the first-run /api/setup/admin (after authentication; access from the table).
 * - `GET /api/me`: `{ id, username, role, via }` of the caller.
 * - `GET /api/users` (admin): `{ users: [{ id, username, role, created_at, password_changed_at }] }`.
 * - `POST /api/users` (admin) `{ username, password, role, current_password? }`: 201 with the user; 409 on a
 *   duplicate username; 403 on a wrong `current_password` (cookie callers).
 * - `PUT /api/users/:id/password` `{ password, current_password? }`: `{ ok: true }`; a fresh cookie for one's own.
 * - `DELETE /api/users/:id` (admin) `{ current_password? }`: `{ ok: true }`; 409 for the last admin.
 * - `POST /api/setup/admin` `{ username, password }`: first-run window only (401 otherwise): 201 and a session.
 */
export function userRoutes(auth: AuthService, forgetAccounts: (userId: string) => Promise<void> = async () => undefined): RouteHandlers {
  return routeHandlers()
    .json(api.auth.me, (_input, req) => {
      const id = req.identity!;
      return { id: id.sub, username: id.username, role: id.role, via: id.via };
    })
    .json(api.auth.listUsers, async () => ({ users: await auth.listUsers() }))
    .json(api.auth.createUser, ({ body }, req) => auth.createUser(req.identity!, body))
    .json(api.auth.changePassword, async ({ params, body }, req, res) => {
      const { fresh } = await auth.changePassword(req.identity!, params.id, body);
      if (fresh) setSessionCookie(res, fresh, req.secure);
      return { ok: true };
    })
    .json(api.auth.deleteUser, async ({ params, body }, req) => {
      await auth.deleteUser(req.identity!, params.id, body.current_password);
      // Households: the user's own media-server accounts (secrets) go with the user (best effort: logged on failure).
      await forgetAccounts(params.id);
      return { ok: true };
    })
    .json(api.auth.setupAdmin, async ({ body }, req, res) => {
      if (req.identity?.via !== 'setup') throw new UnauthorizedError('The first-run window is closed');
      const { user, session } = await auth.createFirstAdmin(body.username, body.password);
      setSessionCookie(res, session, req.secure);
      return { ok: true, user: { username: user.username, role: user.role } };
    });
}
