/**
 * Everything under `fakes/`, re-exported as the `fakes` namespace of @polyphony/testkit
 * (`import { fakes } from '@polyphony/testkit'`). Not a service barrel: testkit's root index
 * re-exports it as one named group.
 */
export * from './catalogue';
export * from './ogg';
export * from './common';
export * from './mediabrowser';
export * from './jellyfin';
export * from './emby';
export * from './subsonic';
export * from './lyrion';
export * from './plex';
export * from './plextv';
