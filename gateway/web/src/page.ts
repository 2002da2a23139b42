/** The contract between the shell (main.ts) and a page module. */
export type Tag = 'CATALOGUE' | 'PER SERVER';

export interface PageContext {
  /** Reloads the server list and the sidebar dropdown. */
  refreshServers(): Promise<void>;
  /** Polls the task board now (after starting a task). */
  kickTasks(): void;
  isAdmin: boolean;
  /** Parameters after `?` in the hash route (`#/similar?item_id=…`). */
  params: URLSearchParams;
}

export interface Page {
  title: string;
  /** CATALOGUE pages act on every server; PER SERVER pages on the sidebar's selected server. */
  tag: Tag;
  /** Shown to admins only (the API refuses the calls to others anyway). */
  admin?: boolean;
  /** Renders into `root`; may return a cleanup run when the page is left. */
  render(root: HTMLElement, ctx: PageContext): void | (() => void);
}
