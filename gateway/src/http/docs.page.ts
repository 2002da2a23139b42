/**
 * A dependency-free browsable page over /api/openapi.json: every path with its methods, summary,
 * access level, parameters and request schema.
 */
export function docsPage(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>polyphony API</title>
<style>body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}code{background:#f3f3f3;padding:0 .3em}
details{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.4em .8em}summary{cursor:pointer}.m{font-weight:bold;text-transform:uppercase;display:inline-block;width:4.5em}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:12px}</style></head><body>
<h1>polyphony API</h1><p>Generated from the same zod schemas that validate requests: <a href="/api/openapi.json">openapi.json</a>. Every endpoint accepts the optional <code>server</code> parameter.</p>
<div id="paths">Loading…</div>
<script>
fetch('/api/openapi.json').then(r=>r.json()).then(doc=>{
  const el=document.getElementById('paths'); el.textContent='';
  for (const [p, ops] of Object.entries(doc.paths)) for (const [m, op] of Object.entries(ops)) {
    const d=document.createElement('details'); const s=document.createElement('summary');
    s.innerHTML='<span class="m"></span><code></code> <span></span>';
    s.children[0].textContent=m; s.children[1].textContent=p; s.children[2].textContent=(op.summary||'')+' ('+(op.description||'')+')';
    d.appendChild(s); const pre=document.createElement('pre');
    pre.textContent=JSON.stringify({parameters:op.parameters,requestBody:op.requestBody,responses:op.responses},null,1); d.appendChild(pre); el.appendChild(d);
  }
});
</script></body></html>`;
}
