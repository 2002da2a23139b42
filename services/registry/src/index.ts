export { buildRegistry, type Registry, type RegistryDeps } from './app';
export { loadRegistryConfig, type RegistryConfig } from './config';
export { registryMigrations } from './store/migrations';
