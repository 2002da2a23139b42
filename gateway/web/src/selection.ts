/**
 * Which music server the sidebar has selected (pure logic, unit-tested): the remembered choice when
 * that server still exists, else the default; the `server` parameter is sent only for a
 * non-default choice (the gateway resolves absence to the default).
 */
export interface ServerRef {
  id: string;
}

/** The selected server id: `stored` if it names an existing server, else the default (or null). */
export function resolveSelected(stored: string | null, servers: ServerRef[], defaultId: string | null): string | null {
  return stored && servers.some((s) => s.id === stored) ? stored : defaultId;
}

/** The `server` parameter for a selection: undefined while the default is selected. */
export function serverParamFor(selected: string | null, defaultId: string | null): string | undefined {
  return selected && selected !== defaultId ? selected : undefined;
}
