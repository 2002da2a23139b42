import 'reflect-metadata';
import { runServiceMain } from '@polyphony/platform';
import { buildAnalysis } from './app';
import { loadAnalysisConfig } from './config';

runServiceMain('analysis-worker', () => buildAnalysis(loadAnalysisConfig()));
