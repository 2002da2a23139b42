export * from './zod';
export * from './openapi';
export * from './auth';
export * from './events';
export * from './servers';
export * from './tasks';
export * from './catalogue';
