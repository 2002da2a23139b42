// The API docs page (/api/docs): lists every path of /api/openapi.json.
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
