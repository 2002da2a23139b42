/** Page registry and sidebar groups. Keys are the hash routes (`#/<key>`); '' is the dashboard. */
import type { Page } from '../page';
import analysis from './analysis';
import dashboard from './dashboard';
import path from './path';
import setup from './setup';
import similar from './similar';
import users from './users';

export const PAGES: Record<string, Page> = {
  '': dashboard,
  setup,
  analysis,
  similar,
  path,
  users,
};

/** Sidebar: groups of page keys, in order. Admin-only pages are hidden from other users. */
export const NAV: Array<{ title: string; keys: string[] }> = [
  { title: 'Library', keys: ['', 'analysis'] },
  { title: 'Discover', keys: ['similar', 'path'] },
  { title: 'Administration', keys: ['setup', 'users'] },
];
