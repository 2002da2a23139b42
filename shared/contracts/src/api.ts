import { accountInternalRoutes, accountRoutes } from './accounts';
import { albumRoutes } from './album';
import { savedAlchemyRoutes } from './anchors';
import { authRoutes } from './auth';
import { browseRoutes } from './browse';
import { chatRoutes } from './chat';
import { featureRoutes, parityRoutes } from './features';
import { hyperbolicRoutes } from './hyperbolic';
import { internalRoutes } from './internal';
import { opsRoutes } from './ops';
import { playlistRoutes } from './playlists';
import { portableRoutes } from './portable';
import { probeRoutes } from './probes';
import { recordingInternalRoutes, recordingRoutes } from './recording';
import { semanticRoutes } from './semantic';
import { serverRoutes } from './servers';
import { settingsRoutes } from './settings';
import { taskRoutes } from './tasks';

/**
 * The route table by area, for handlers (`mountRoutes`), peer clients and the browser client:
 * `api.features.similarTracks` is the definition of GET /api/similar_tracks. Importing this module
 * loads every contracts module, so `routeTable()` is complete.
 */
export const api = {
  accounts: accountRoutes,
  accountsInternal: accountInternalRoutes,
  album: albumRoutes,
  anchors: savedAlchemyRoutes,
  auth: authRoutes,
  browse: browseRoutes,
  chat: chatRoutes,
  features: featureRoutes,
  hyperbolic: hyperbolicRoutes,
  parity: parityRoutes,
  internal: internalRoutes,
  ops: opsRoutes,
  playlists: playlistRoutes,
  portable: portableRoutes,
  probes: probeRoutes,
  recording: recordingRoutes,
  recordingInternal: recordingInternalRoutes,
  semantic: semanticRoutes,
  servers: serverRoutes,
  settings: settingsRoutes,
  tasks: taskRoutes,
};
