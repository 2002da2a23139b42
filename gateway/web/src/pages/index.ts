/** Page registry and sidebar groups. Keys are the hash routes (`#/<key>`); '' is the dashboard. */
import type { Page } from '../page';
import accounts from './accounts';
import album from './album';
import alchemy from './alchemy';
import analysis from './analysis';
import artists from './artists';
import backup from './backup';
import browse from './browse';
import chat from './chat';
import cleaning from './cleaning';
import clustering from './clustering';
import dashboard from './dashboard';
import deadLetters from './dead-letters';
import fingerprint from './fingerprint';
import hyperbolic from './hyperbolic';
import lyrics from './lyrics';
import map from './map';
import path from './path';
import recording from './recording';
import schedules from './schedules';
import search from './search';
import settings from './settings';
import setup from './setup';
import similar from './similar';
import tasks from './tasks';
import users from './users';

export const PAGES: Record<string, Page> = {
  '': dashboard,
  browse,
  analysis,
  clustering,
  cleaning,
  schedules,
  backup,
  tasks,
  'dead-letters': deadLetters,
  similar,
  chat,
  path,
  alchemy,
  album,
  artists,
  fingerprint,
  recording,
  search,
  lyrics,
  map,
  hyperbolic,
  setup,
  settings,
  users,
  accounts,
};

/** Sidebar: groups of page keys, in order. Admin-only pages are hidden from other users. */
export const NAV: Array<{ title: string; keys: string[] }> = [
  { title: 'Library', keys: ['', 'browse', 'analysis', 'clustering', 'cleaning', 'schedules', 'backup', 'tasks', 'dead-letters'] },
  { title: 'Discover', keys: ['similar', 'chat', 'path', 'alchemy', 'album', 'artists', 'fingerprint', 'recording', 'search', 'lyrics', 'map', 'hyperbolic'] },
  { title: 'Administration', keys: ['setup', 'settings', 'users', 'accounts'] },
];
