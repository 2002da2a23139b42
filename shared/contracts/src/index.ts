export * from './zod';
export * from './openapi';
export * from './auth';
