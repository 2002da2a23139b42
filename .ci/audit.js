#!/usr/bin/env node
/**
 * Dependency audit for CI: `npm audit --omit=dev --json`, failing on any advisory of severity high
 * or critical that is not in .ci/audit-allowlist.json (or whose allow-list entry is past its
 * `review_by` date). Allow-list entries: { "advisory": "GHSA-....", "package": "name",
 * "reason": "why it does not affect polyphony", "review_by": "YYYY-MM-DD" }.
 * When the registry's audit endpoint cannot be reached (an offline mirror or a proxy that refuses
 * the bulk advisory POST), it says so and exits 0 unless AUDIT_REQUIRED=1; the CI machine reaches
 * registry.npmjs.org, so the audit runs there. AUDIT_REPORT=<file> checks a saved report instead.
 */
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const path = require('node:path');

const SEVERE = new Set(['high', 'critical']);
const root = path.resolve(__dirname, '..');
const allow = JSON.parse(readFileSync(path.join(__dirname, 'audit-allowlist.json'), 'utf8'));
const today = new Date().toISOString().slice(0, 10);

let out;
if (process.env.AUDIT_REPORT) {
  out = readFileSync(process.env.AUDIT_REPORT, 'utf8'); // a saved `npm audit --json` (to check this script)
} else try {
  out = execFileSync('npm', ['audit', '--omit=dev', '--json'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
} catch (err) {
  out = err.stdout; // npm audit exits 1 when it finds anything
}
let report;
try {
  report = JSON.parse(out);
} catch {
  report = { error: { summary: String(out).slice(0, 300) } };
}
if (!report.vulnerabilities) {
  const why = report.message || (report.error && (report.error.summary || report.error.code)) || 'no report';
  console.error(`npm audit could not run: ${why}`);
  process.exit(process.env.AUDIT_REQUIRED === '1' ? 1 : 0);
}

const ghsa = (url) => (String(url || '').match(/GHSA-[\w-]+/) || [])[0];
const failures = [];
for (const [name, v] of Object.entries(report.vulnerabilities)) {
  for (const via of v.via) {
    if (typeof via !== 'object' || !SEVERE.has(via.severity)) continue; // strings: reported under the package they name
    const id = ghsa(via.url) || String(via.source);
    const entry = allow.find((a) => a.advisory === id && a.package === via.name);
    if (entry && entry.review_by >= today) continue;
    failures.push(`${via.severity} ${id} in ${via.name} (via ${name}): ${via.title}${entry ? ` [allow-list entry expired ${entry.review_by}]` : ''}`);
  }
}
const counts = report.metadata && report.metadata.vulnerabilities;
console.log(`npm audit (production dependencies): ${JSON.stringify(counts || {})}; allow-listed: ${allow.length}`);
if (failures.length) {
  console.error(`Advisories of high or critical severity not in .ci/audit-allowlist.json:\n  ${[...new Set(failures)].join('\n  ')}`);
  process.exit(1);
}
