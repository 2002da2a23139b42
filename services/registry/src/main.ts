import 'reflect-metadata';
import { runServiceMain } from '@polyphony/platform';
import { buildRegistry } from './app';
import { loadRegistryConfig } from './config';

runServiceMain('registry', () => buildRegistry(loadRegistryConfig()));
