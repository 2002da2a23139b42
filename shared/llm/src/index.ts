export * from './provider';
export * from './adapters';
export * from './naming';
