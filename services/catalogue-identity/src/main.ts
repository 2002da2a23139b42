import 'reflect-metadata';
import { runServiceMain } from '@polyphony/platform';
import { buildCatalogue } from './app';
import { loadCatalogueConfig } from './config';

runServiceMain('catalogue-identity', () => buildCatalogue(loadCatalogueConfig()));
