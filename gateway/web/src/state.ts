/**
 * App-wide state of the web UI: who is signed in, the servers, the sidebar's selection. Pages read
 * it; the shell (main.ts) fills it. `setupMode` is the first-run window (no admin exists yet): only
 * the Setup page is shown and the API is reached without a session.
 */
import type { z } from 'zod';
import { serverRoutes, type ServerDto, authRoutes } from '@polyphony/contracts';
import { call, type CallOutput } from './api';
import { resolveSelected, serverParamFor } from './selection';

export type Server = z.infer<typeof ServerDto>;
export type Me = CallOutput<typeof authRoutes.me>;

export const state: { me: Me | null; servers: Server[]; defaultId: string | null; setupMode: boolean } = {
  me: null,
  servers: [],
  defaultId: null,
  setupMode: false,
};

const SERVER_KEY = 'polyphony.server';

/** The server chosen in the sidebar (id), or the default when none was chosen or it no longer exists. */
export function selectedServerId(): string | null {
  return resolveSelected(localStorage.getItem(SERVER_KEY), state.servers, state.defaultId);
}

/** The selected server's record (or undefined before any server exists). */
export function selectedServer(): Server | undefined {
  const id = selectedServerId();
  return state.servers.find((s) => s.id === id);
}

/** Remembers the sidebar choice in this browser. */
export function selectServer(id: string): void {
  localStorage.setItem(SERVER_KEY, id);
}

/** The value of the `server` parameter for PER SERVER calls: undefined while the default server is selected. */
export function serverParam(): string | undefined {
  return serverParamFor(selectedServerId(), state.defaultId);
}

/** Reloads the server list (GET /api/servers); fires `servers-changed`. */
export async function loadServers(): Promise<Server[]> {
  const data = await call(serverRoutes.list, {}, { allow401: true });
  state.servers = data?.servers ?? [];
  state.defaultId = data?.default_id ?? null;
  window.dispatchEvent(new CustomEvent('servers-changed'));
  return state.servers;
}

/** True for an admin session, and in the first-run window. */
export const isAdmin = (): boolean => state.setupMode || state.me?.role === 'admin';
