// Jest test order: longest suites first, so the workers (CI: --maxWorkers=2) end together instead of
// one worker starting the fuzz suite while the other is nearly done (longest-processing-time-first).
//
// Jest's default sequencer orders by the durations in its cache (<cacheDirectory>/perf-cache-*) and,
// without a cache, by file size. CI runs on a clean machine without that cache, where file size put
// the 7-minute fuzz suite (277 lines) behind a hundred shorter suites. This sequencer keeps the
// default (previous failures first, then cached durations) and, for suites the cache does not know,
// uses KNOWN_SECONDS below before falling back to file size.
//
// KNOWN_SECONDS: wall seconds of the suites that take 15 s or more; relative sizes matter, not the
// exact figures. Measured 2026-11-26 with --maxWorkers=1 while the 2-core machine's load average was
// 10-24 (so about 1.5-2x a quiet run), except: wesnoth-audio.int, 3 min as its file documents (it
// timed out at that load), and fuzz, 1,000-case figure (741 s) scaled to its 400-case default.
// Re-measure with
//   npx jest --maxWorkers=1 --json --outputFile=out.json
// (perfStats per suite) when a suite's cost changes a lot or a new heavy suite appears; a suite
// missing here runs after the listed ones, in jest's default order (file size).
const path = require('node:path');
// The default sequencer, a dependency of @jest/core (hoisted to the root node_modules).
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Suite path (relative to the repository root) -> wall seconds of a run (see above).
 *
 * Refreshed 2026-12-05 from the last clean-clone `.ci/run` (2 workers, 241 suites, jest 1,619 s; the figures below
 * are that run's, the condition that matters): faults 266, analysis e2e 275, golden 198, wesnoth-audio 181, ui-pages
 * 162, fuzz 135, snapshot-feed 117, index.api 93 were its only suites over 90 s. The suites this table held above
 * 90 s but that run did not list (MusiCNN e2e, import-reference, backup, households, chat, the IVF and quantised
 * index units, auth.api, analysis-options, https) are set to 90: an upper bound from that run, not a measurement
 * (ties run in file-size order). The older comments below say where the other figures came from.
 */
const KNOWN_SECONDS = {
  // Measured 2026-12-04 one suite at a time (--maxWorkers=1, heavy lock): analysis e2e 261 s at a load average of
  // 3.5-6.5. sweep-copies was 421 s at 8-9.5 with 41 songs (64 analyses; its 1097 s of 2026-12-03, at load ~10, came
  // before its MUSICNN_PATCHES=2 change, which changed nothing: that stack has no MODELS_DIR); with 14 songs (24
  // analyses) 44 s at 1.6-3.3 (transcodes cached, as the 421 s run had them after its first minutes).
  'infra/standalone/test/sweep-copies.e2e.int.test.ts': 44,
  'infra/standalone/test/analysis.e2e.int.test.ts': 275,
  // Measured 2026-12-04 at a load average of 13-18: golden 400-475 s (87 s on a quiet machine), upgrade 53 s.
  'infra/standalone/test/golden/golden.e2e.int.test.ts': 198,
  'infra/standalone/test/upgrade/upgrade.e2e.int.test.ts': 55,
  'infra/standalone/test/faults.int.test.ts': 266,
  'infra/standalone/test/fuzz.api.test.ts': 135,
  // With the client calls of the former clients.api.test.ts (39 s alone at load ~5 on 2026-12-04, 0.4 s of it tests):
  // 33 s at a load average of 1.6-3.3 (2026-12-04, alone; 295 s was the semantic suite alone at a load of 10+).
  'infra/standalone/test/semantic.wesnoth.e2e.int.test.ts': 33,
  'infra/standalone/test/musicnn.e2e.int.test.ts': 90,
  // Import from the reference (issue 34): 718 s at a load average of 33-40 on 2026-12-04, most of it the analysis run
  // with MusiCNN that switches the imported catalogue (as musicnn.e2e); about a third of that on a quieter machine.
  'infra/standalone/test/import-reference.e2e.int.test.ts': 90,
  // +25 s for Recording search (10 s of fake microphone, three uploads, two widths): 245 s at a load average near 10 on 2026-12-04.
  'infra/standalone/test/ui-pages.browser.int.test.ts': 162,
  'infra/standalone/test/backup.e2e.int.test.ts': 90,
  // Households (issue 34): one stack, one supysonic with three accounts, a fake Jellyfin and Lyrion; 75-130 s at a load average of 17-31 on 2026-12-04.
  'infra/standalone/test/households.e2e.int.test.ts': 90,
  'services/catalogue-identity/test/wesnoth-audio.int.test.ts': 181,
  'infra/standalone/test/chat.e2e.int.test.ts': 90,
  'shared/vector-engine/src/ivf/ivf-index.test.ts': 90,
  'infra/standalone/test/auth.api.test.ts': 90,
  'shared/vector-engine/src/ivf/quantised-index.test.ts': 90,
  'infra/standalone/test/analysis-options.e2e.int.test.ts': 90,
  'services/analysis-worker/src/domain/musicnn/musicnn.int.test.ts': 88,
  'infra/standalone/test/ui.browser.int.test.ts': 87,
  // Measured 2026-12-04 beside other helpers' suites (two supysonic servers, 12 small files, DSP-only analysis).
  'infra/standalone/test/browse.e2e.int.test.ts': 86,
  'infra/standalone/test/registry.api.test.ts': 75,
  'infra/standalone/test/sweep.e2e.int.test.ts': 64,
  'services/index/test/index.api.test.ts': 93,
  'infra/standalone/test/auth-restart.api.test.ts': 60,
  // Measured 2026-12-04 at a load average near 18: two product starts with HTTPS=self-signed (~22 s of tests, the rest compiling).
  'infra/standalone/test/https.api.test.ts': 90,
  // issue 36 (measured at load 17-20, 2026-12-04): stack start dominates both.
  'infra/standalone/test/monitoring.api.test.ts': 62,
  'infra/standalone/test/db-outage.int.test.ts': 45,
  'infra/standalone/test/semantic.api.test.ts': 48,
  'infra/standalone/test/recording.api.test.ts': 65,
  'infra/standalone/test/analysis.distributed.int.test.ts': 48,
  'services/analysis-worker/src/domain/audio/embedder.int.test.ts': 46,
  'infra/standalone/test/parity.api.test.ts': 45,
  'infra/standalone/test/security.api.test.ts': 41,
  'shared/platform/src/bus/bus.contract.int.test.ts': 41,
  'shared/vector-engine/src/ivf/centroid-groups.test.ts': 37,
  'infra/standalone/test/ops.api.test.ts': 33,
  'services/catalogue-identity/test/embedding-switch.int.test.ts': 33,
  'services/analysis-worker/src/domain/audio/rhythm.test.ts': 32,
  'services/catalogue-identity/test/cleaning.int.test.ts': 31,
  'services/catalogue-identity/test/sweep.int.test.ts': 29,
  'infra/standalone/test/secret-rotation.api.test.ts': 26,
  'services/catalogue-identity/test/identity.int.test.ts': 25,
  'shared/vector-engine/src/ivf/parallel-build.test.ts': 22,
  'infra/standalone/test/index-replicas.int.test.ts': 21,
  // Measured 2026-12-04 in a clean-clone CI run at a load average of 5-9 (a soak and a benchmark beside it): suites the
  // table did not know yet.
  'services/index/test/snapshot-feed.api.test.ts': 117,
  'services/index/test/live-library.api.test.ts': 41,
  'infra/standalone/test/change-detection.e2e.int.test.ts': 60,
  'services/index/src/recording/recording-index.service.test.ts': 36,
  'shared/landmarks/src/matcher.test.ts': 30,
  'services/analysis-worker/src/domain/musicnn/reference-vector.int.test.ts': 27,
  'shared/vector-engine/src/storage/byte-log.test.ts': 25,
  'services/catalogue-identity/src/domain/sweep/sweep.test.ts': 20,
  'shared/testkit/src/fakes/fakes.test.ts': 19,
  'services/analysis-worker/src/domain/track-claims.int.test.ts': 18,
  'infra/standalone/test/navidrome-apikey.e2e.int.test.ts': 17,
  'shared/vector-engine/src/ivf/live-ivf-index.test.ts': 17,
};

class HeaviestFirstSequencer extends Sequencer {
  /** Estimated milliseconds of `test`: the cache's figure, else KNOWN_SECONDS, else undefined. */
  estimate(test) {
    const cached = this.time(test);
    if (cached != null) return cached;
    const known = KNOWN_SECONDS[path.relative(ROOT, test.path).split(path.sep).join('/')];
    return known == null ? undefined : known * 1000;
  }

  sort(tests) {
    const size = new Map();
    const fileSize = (test) => {
      if (!size.has(test.path)) size.set(test.path, test.context.hasteFS.getSize(test.path) ?? 0);
      return size.get(test.path);
    };
    for (const test of tests) test.duration = this.estimate(test);
    return [...tests].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      if ((a.duration != null) !== (b.duration != null)) return a.duration != null ? -1 : 1;
      if (a.duration != null && a.duration !== b.duration) return b.duration - a.duration;
      return fileSize(b) - fileSize(a);
    });
  }
}

module.exports = HeaviestFirstSequencer;
module.exports.KNOWN_SECONDS = KNOWN_SECONDS;
