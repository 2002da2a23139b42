/**
 * A dependency-free browsable page over /api/openapi.json: every path with its methods, summary,
 * access level, parameters and request schema. Script and style are files in gateway/public
 * (docs.js, docs.css): the Content-Security-Policy allows no inline script or style.
 */
export function docsPage(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>polyphony API</title>
<link rel="stylesheet" href="/docs.css"></head><body>
<h1>polyphony API</h1><p>Generated from the same zod schemas that validate requests: <a href="/api/openapi.json">openapi.json</a>. Every endpoint accepts the optional <code>server</code> parameter.</p>
<div id="paths">Loading…</div>
<script src="/docs.js"></script></body></html>`;
}
