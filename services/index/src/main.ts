import 'reflect-metadata';
import { runServiceMain } from '@polyphony/platform';
import { buildIndex } from './app';
import { loadIndexConfig } from './config';

runServiceMain('index', () => buildIndex(loadIndexConfig()));
