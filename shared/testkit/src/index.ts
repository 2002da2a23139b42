export * from './pg';

// Fake media servers and the real-Subsonic launcher (media-server client tests).
export * as fakes from './fakes/all';
export {
  ArrayCatalogue,
  SyntheticCatalogue,
  syntheticCatalogue,
  wesnothTracks,
  wesnothFiles,
  WESNOTH_MUSIC_DIR,
  type FakeAlbum,
  type FakeArtist,
  type FakeCatalogue,
  type FakeLibrary,
  type FakeTrack,
} from './fakes/catalogue';
export { readOggVorbisInfo, type OggVorbisInfo } from './fakes/ogg';
export { type RecordedRequest, type StartedFake } from './fakes/common';
export { createFakeJellyfin, type FakeJellyfin, type FakeJellyfinOptions } from './fakes/jellyfin';
export { createFakeEmby, type FakeEmby, type FakeEmbyOptions } from './fakes/emby';
export { createFakeSubsonic, FakeSubsonic, type FakeSubsonicOptions } from './fakes/subsonic';
export { createFakeLyrion, FakeLyrion, type FakeLyrionOptions, type FakeLyrionPlayer } from './fakes/lyrion';
export { createFakePlex, FakePlex, type FakePlexOptions } from './fakes/plex';
export { createFakePlexTv, FakePlexTv, type FakePlexTvOptions, type FakePin, type FakePlexTvServer } from './fakes/plextv';
export { startSupysonic, type StartedSupysonic, type SupysonicOptions } from './supysonic';
export { createFakeLlm, FakeLlm, type FakeTurn } from './fakes/llm';
export * from './private-infra';
export * from './tmpfs';
export { collectText, sseDataFrames } from './sse';

// Synthetic vector data and map-quality metric (vector-engine and index tests, benchmarks).
export { DEFAULT_MIXTURE, SyntheticMixture, recall, type MixtureBatch, type MixtureOptions } from './synthetic-mixture';
export { mapNeighbourPurity } from './map-quality';
// The index's fake peers (catalogue + registry over HTTP) and the synthetic catalogue it serves (index tests, benchmarks).
export { FakePeers } from './fakes/peers';
export { syntheticItemId, syntheticLearned, syntheticSongs, toSnapshotTrack, type SyntheticSong } from './synthetic-catalogue';
// Text-search evaluation: tag-derived ground truth and P@10 (text-eval benchmarks).
export { EVAL_K, EVAL_QUERIES, evaluateTextSearch, formatEvalReport, precisionAt, relevantIds, type EvalReport, type EvalSong } from './text-eval/text-eval';
export { evaluateInstall } from './text-eval/evaluate-install';
export { addNoise, syntheticNotesPcm, wavBytes } from './synthetic-audio';
export { referenceSchemaSql, referenceVectorBytes, referenceChromaprintBytes, insertReferenceRows } from './reference-db';
export { migratedDataSource } from './service-db';
