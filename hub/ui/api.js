// api.js — the hub's public query API with the session's bearer token.
// Only same-origin requests (the page's CSP forbids anything else).

export class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.error)) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export class Api {
  constructor(token, project) {
    this.token = token;
    this.project = project;
    this.features = {};
  }

  async request(method, path, params, body, token) {
    const qs = params ? '?' + new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
    const headers = { Authorization: 'Bearer ' + (token || this.token) };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(path + qs, { method, headers, body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)) });
    const text = await r.text();
    let js = null;
    try { js = text ? JSON.parse(text) : null; } catch { js = { error: 'bad_json', detail: text.slice(0, 200) }; }
    if (!r.ok) throw new ApiError(r.status, js);
    return js;
  }

  get(path, params, token) { return this.request('GET', path, params, undefined, token); }

  proj(sub) { return `/v1/projects/${encodeURIComponent(this.project)}${sub}`; }

  profiles(view, params) { return this.get(this.proj('/profiles/' + view), params); }

  // Feature detection: an endpoint exists unless it answers 404 (a 400 for
  // missing parameters, 401/403 for a token without the role still mean
  // the endpoint is there).
  async probe(name, path, params) {
    if (name in this.features) return this.features[name];
    let ok;
    try {
      await this.get(path, params);
      ok = true;
    } catch (e) {
      ok = !(e instanceof ApiError) ? false : e.status !== 404 && e.status !== 405;
    }
    this.features[name] = ok;
    return ok;
  }
}
