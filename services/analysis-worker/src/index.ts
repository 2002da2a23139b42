export { buildAnalysis, type AnalysisService, type AnalysisDeps } from './app';
export { loadAnalysisConfig, type AnalysisConfig } from './config';
export { analysisMigrations } from './store/migrations';
