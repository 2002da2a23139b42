import { defineRoute } from './openapi';
import { z } from './zod';

export const Role = z.enum(['admin', 'user']);

export const LoginBody = z
  .object({ username: z.string().min(1).max(200), password: z.string().min(1).max(1000) })
  .openapi('LoginBody');
/** `/auth` alias used by existing clients: `user` / `password`. */
export const AuthAliasBody = z.object({ user: z.string().min(1).max(200), password: z.string().min(1).max(1000) });

export const UserDto = z
  .object({ id: z.string(), username: z.string(), role: Role, created_at: z.string(), password_changed_at: z.string() })
  .openapi('User');

export const CreateUserBody = z
  .object({
    username: z.string().trim().min(1).max(100).regex(/^[\w.@-]+$/, 'letters, digits, _ . @ - only'),
    password: z.string().min(8, 'at least 8 characters').max(1000),
    role: Role.default('user'),
    current_password: z.string().max(1000).optional(),
  })
  .openapi('CreateUserBody');

export const ChangePasswordBody = z
  .object({ password: z.string().min(8, 'at least 8 characters').max(1000), current_password: z.string().max(1000).optional() })
  .openapi('ChangePasswordBody');

export const DeleteUserBody = z.object({ current_password: z.string().max(1000).optional() }).openapi('DeleteUserBody');
/** A user id: the UUID of auth.service_users (anything else is a 400, never a database error). */
export const IdParam = z.object({ id: z.string().uuid('a user id (UUID)') });

export const authRoutes = {
  login: defineRoute({ method: 'post', path: '/login', summary: 'Log in (JSON or form); sets the HttpOnly session cookie', tags: ['auth'], access: 'public', service: 'gateway', bodyLimit: 4096, body: LoginBody, response: z.object({ ok: z.literal(true), user: UserDto.pick({ username: true, role: true }) }) }),
  authAlias: defineRoute({ method: 'post', path: '/auth', summary: 'Log in with user/password (alias used by existing clients)', tags: ['auth'], access: 'public', service: 'gateway', bodyLimit: 4096, body: AuthAliasBody }),
  logout: defineRoute({ method: 'post', path: '/logout', summary: 'Clear the session cookie', tags: ['auth'], access: 'public', service: 'gateway', bodyLimit: 4096 }),
  me: defineRoute({ method: 'get', path: '/api/me', summary: 'The authenticated caller', tags: ['auth'], access: 'user', service: 'gateway', response: z.object({ id: z.string().openapi({ description: 'User id (for PUT /api/users/:id/password); the API token caller has a fixed id' }), username: z.string(), role: Role, via: z.string() }) }),
  listUsers: defineRoute({ method: 'get', path: '/api/users', summary: 'List users', tags: ['users'], access: 'admin', service: 'gateway', response: z.object({ users: z.array(UserDto) }) }),
  createUser: defineRoute({ method: 'post', path: '/api/users', summary: 'Create a user (current_password required for cookie callers)', tags: ['users'], access: 'admin', service: 'gateway', bodyLimit: 4096, body: CreateUserBody, response: UserDto, status: 201 }),
  changePassword: defineRoute({ method: 'put', path: '/api/users/:id/password', summary: "Change a password (own, or any as admin); current_password required for cookie callers", tags: ['users'], access: 'user', service: 'gateway', bodyLimit: 4096, params: IdParam, body: ChangePasswordBody }),
  deleteUser: defineRoute({ method: 'delete', path: '/api/users/:id', summary: 'Delete a user; the last admin cannot be deleted', tags: ['users'], access: 'admin', service: 'gateway', bodyLimit: 4096, params: IdParam, body: DeleteUserBody }),
  health: defineRoute({ method: 'get', path: '/api/health', summary: 'Liveness of the gateway (no authentication)', tags: ['ops'], access: 'public', service: 'gateway', response: z.object({ status: z.string() }) }),
  openapi: defineRoute({ method: 'get', path: '/api/openapi.json', summary: 'This OpenAPI document (public and user routes; internal routes are left out)', tags: ['ops'], access: 'public', service: 'gateway' }),
  docs: defineRoute({ method: 'get', path: '/api/docs', summary: 'The API reference page rendered from the OpenAPI document', tags: ['ops'], access: 'public', service: 'gateway' }),
  setupAdmin: defineRoute({ method: 'post', path: '/api/setup/admin', summary: 'First run only (no admin exists): create the first admin and sign in (201; 409 once an admin exists; reachable without a session only in that window)', tags: ['auth'], access: 'user', service: 'gateway', firstRun: true, bodyLimit: 4096, body: LoginBody, response: z.object({ ok: z.literal(true), user: UserDto.pick({ username: true, role: true }) }), status: 201 }),
};
