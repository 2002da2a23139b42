export { buildGateway, type Gateway, type GatewayDeps } from './app';
export { loadGatewayConfig, type GatewayConfig, type ServiceName } from './config';
export { authMigrations } from './store/migrations';
export { matchRoute, serviceFor, isAdminOnly, isSetupPath, bodyLimitFor, gatewayRoutes } from './proxy/routes';
