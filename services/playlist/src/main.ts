import 'reflect-metadata';
import { runServiceMain } from '@polyphony/platform';
import { buildPlaylist } from './app';
import { loadPlaylistConfig } from './config';

runServiceMain('playlist', () => buildPlaylist(loadPlaylistConfig()));
