import { ChangePasswordBody, CreateUserBody, DeleteUserBody, IdParam, LoginBody, AuthAliasBody, api } from '@polyphony/contracts';
import { UnauthorizedError, asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { AuthService } from '../auth/auth.service';
import { SESSION_COOKIE, setSessionCookie } from '../auth/authenticate.middleware';

/** Login, logout and the `/auth` alias (public). */
export function loginRoutes(auth: AuthService): RouteHandlers {
  const r = routeHandlers();
  const doLogin = async (username: string, password: string, req: import('express').Request, res: import('express').Response) => {
    const { user, session } = await auth.login(username, password);
    setSessionCookie(res, session, req.secure);
    return user;
  };
  r.on(api.auth.login,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(LoginBody, req.body, 'login');
      const user = await doLogin(body.username, body.password, req, res);
      if (req.is('application/x-www-form-urlencoded')) {
        res.redirect(303, '/');
        return;
      }
      res.json({ ok: true, user: { username: user.username, role: user.role } });
    }),
  );
  r.on(api.auth.authAlias,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(AuthAliasBody, req.body, 'auth');
      const user = await doLogin(body.user, body.password, req, res);
      res.json({ ok: true, user: { username: user.username, role: user.role } });
    }),
  );
  r.on(api.auth.logout,
    asyncRoute(async (req, res) => {
      // Ends the server-side session, so a copy of the cookie is worthless afterwards.
      await auth.logout((req.cookies as Record<string, string> | undefined)?.[SESSION_COOKIE]);
      res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict' });
      res.json({ ok: true });
    }),
  );
  return r;
}

/** /api/me, /api/users and the first-run /api/setup/admin (after authentication). */
export function userRoutes(auth: AuthService): RouteHandlers {
  const r = routeHandlers();
  r.on(api.auth.me, (req, res) => {
    const id = req.identity!;
    res.json({ id: id.sub, username: id.username, role: id.role, via: id.via });
  });
  r.json(api.auth.listUsers, async () => ({ users: await auth.listUsers() }));
  r.on(api.auth.createUser,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(CreateUserBody, req.body, 'user');
      res.status(201).json(await auth.createUser(req.identity!, body));
    }),
  );
  r.on(api.auth.changePassword,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParam, req.params, 'path');
      const body = parseOrThrow(ChangePasswordBody, req.body, 'password change');
      const { fresh } = await auth.changePassword(req.identity!, id, body);
      if (fresh) setSessionCookie(res, fresh, req.secure);
      res.json({ ok: true });
    }),
  );
  r.on(api.auth.deleteUser,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(IdParam, req.params, 'path');
      const body = parseOrThrow(DeleteUserBody, req.body ?? {}, 'delete');
      await auth.deleteUser(req.identity!, id, body.current_password);
      res.json({ ok: true });
    }),
  );
  r.on(api.auth.setupAdmin,
    asyncRoute(async (req, res) => {
      if (req.identity?.via !== 'setup') throw new UnauthorizedError('The first-run window is closed');
      const body = parseOrThrow(LoginBody, req.body, 'admin');
      const { user, session } = await auth.createFirstAdmin(body.username, body.password);
      setSessionCookie(res, session, req.secure);
      res.status(201).json({ ok: true, user: { username: user.username, role: user.role } });
    }),
  );
  return r;
}
