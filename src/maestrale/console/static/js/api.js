// The console's client of the public API, through the same-origin proxy at /console/api.
//
// Paths are the public API's (`/v1/models`); this module prefixes `/console/api`. The session
// cookie (HttpOnly, never readable here) goes along by itself; every call adds the CSRF header
// from `<meta name="csrf-token">`. The proxy adds the key: the page never sees it.
// A 401 (session expired, key revoked) sends the browser back to sign-in with the message.

const PREFIX = '/console/api';
const SIGN_IN_EXPIRED = '/console/sign-in?expired=1';

export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute('content') || '' : '';
}

/** An error the API (or the network) returned: `status` (0 for a network error), the parsed
 * `body` as returned, and a human `message` taken from the body's own fields. */
export class ApiError extends Error {
  constructor(status, body, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }

  /** The machine code of the error body when it has one (`code`, `error_code`). */
  get code() {
    const b = this.body;
    if (b && typeof b === 'object') {
      if (typeof b.code === 'string') return b.code;
      if (b.detail && typeof b.detail === 'object' && typeof b.detail.error_code === 'string') {
        return b.detail.error_code;
      }
    }
    return null;
  }
}

/** The message an API error body carries, in each of the API's error shapes. */
export function messageOf(status, body) {
  if (body && typeof body === 'object') {
    if (typeof body.message === 'string' && body.message) return body.message;
    const detail = body.detail;
    if (typeof detail === 'string' && detail) return detail;
    if (detail && typeof detail === 'object' && !Array.isArray(detail) && detail.message) {
      return String(detail.message);
    }
    if (Array.isArray(detail) && detail.length) {
      return detail
        .map((d) => {
          const loc = Array.isArray(d.loc) ? d.loc.filter((p) => p !== 'body').join('.') : '';
          return loc ? `${loc}: ${d.msg}` : String(d.msg);
        })
        .join('; ');
    }
  }
  if (typeof body === 'string' && body.trim()) return body.trim().slice(0, 500);
  return `HTTP ${status}`;
}

function signInAgain() {
  window.location.assign(SIGN_IN_EXPIRED);
}

function url(path) {
  if (!path.startsWith('/v1/')) throw new Error(`not an API path: ${path}`);
  return PREFIX + path;
}

function requestInit(method, body, headers, signal) {
  const h = new Headers(headers || {});
  h.set('X-CSRF-Token', csrfToken());
  if (!h.has('Accept')) h.set('Accept', 'application/json');
  let payload = body;
  const raw =
    body === undefined ||
    body === null ||
    body instanceof FormData ||
    body instanceof Blob ||
    body instanceof URLSearchParams ||
    typeof body === 'string';
  if (!raw) {
    h.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  return { method, headers: h, body: payload ?? undefined, signal, credentials: 'same-origin' };
}

async function parseBody(response) {
  if (response.status === 204) return null;
  const text = await response.text();
  if (!text) return null;
  const type = response.headers.get('content-type') || '';
  if (type.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

async function failure(response) {
  const body = await parseBody(response).catch(() => null);
  if (response.status === 401) signInAgain();
  return new ApiError(response.status, body, messageOf(response.status, body));
}

async function send(path, { method = 'GET', body, headers, signal } = {}) {
  let response;
  try {
    response = await fetch(url(path), requestInit(method, body, headers, signal));
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, null, `network error: ${err && err.message ? err.message : err}`);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

/** Calls the API; resolves to the parsed JSON (null for an empty body), throws ApiError.
 * `body`: an object (sent as JSON), FormData, Blob, URLSearchParams or a string.
 * `admin` is accepted for readability: the proxy picks the admin key for /v1/admin/ paths. */
export async function api(path, { method = 'GET', body, headers, signal, admin } = {}) {
  void admin;
  const response = await send(path, { method, body, headers, signal });
  return parseBody(response);
}

/** The raw Response of a successful call (for bodies that are not JSON). */
export async function apiResponse(path, options = {}) {
  return send(path, options);
}

/** Fetches a file through the proxy and hands it to the browser as a download. */
export async function download(path, filename) {
  const response = await send(path, { headers: { Accept: 'application/octet-stream, */*' } });
  const blob = await response.blob();
  let name = filename;
  if (!name) {
    const disposition = response.headers.get('content-disposition') || '';
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    name = match ? decodeURIComponent(match[1]) : 'download';
  }
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** Splits a server-sent event stream into events: `{event, data}` where `data` is the parsed
 * JSON of the `data:` lines (or their text when not JSON, e.g. `[DONE]`). */
export function sseParser(onEvent) {
  let buffer = '';
  let event = null;
  let data = [];
  const dispatch = () => {
    if (data.length) {
      const text = data.join('\n');
      let parsed = text;
      if (text !== '[DONE]') {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      onEvent({ event, data: parsed });
    }
    event = null;
    data = [];
  };
  return {
    push(chunk) {
      buffer += chunk;
      let index;
      while ((index = buffer.search(/\r?\n/)) >= 0) {
        const line = buffer.slice(0, index);
        buffer = buffer.slice(index + (buffer[index] === '\r' ? 2 : 1));
        if (line === '') dispatch();
        else if (line.startsWith(':')) continue;
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('event:')) event = line.slice(6).trim();
      }
    },
    end() {
      if (buffer) this.push('\n');
      dispatch();
    },
  };
}

/** POSTs `body` as JSON and reads the server-sent events of the answer, calling `onEvent` with
 * each `{event, data}`; resolves when the stream ends. Abort with `signal` (a Stop button). */
export async function apiStream(path, body, { signal, onEvent } = {}) {
  const response = await send(path, {
    method: 'POST',
    body,
    headers: { Accept: 'text/event-stream' },
    signal,
  });
  const parser = sseParser(onEvent || (() => {}));
  // Bytes read and decoded here (no pipeThrough): an aborted fetch then ends the loop at once.
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
  } catch (err) {
    // A handler that threw (an error event) ends the request too; not awaited: a stream that
    // the abort errored already may never settle its cancel.
    reader.cancel().catch(() => {});
    throw err;
  }
}

/** Uploads a FormData with progress: `onProgress(fraction)` from 0 to 1 (null when the size is
 * unknown). Resolves to the parsed JSON answer, rejects with ApiError. `signal` aborts. */
export function upload(path, formData, onProgress, { signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url(path));
    xhr.setRequestHeader('X-CSRF-Token', csrfToken());
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (e) => {
      if (onProgress) onProgress(e.lengthComputable ? e.loaded / e.total : null);
    });
    xhr.addEventListener('load', () => {
      let body = xhr.responseText;
      if ((xhr.getResponseHeader('content-type') || '').includes('json')) {
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          /* keep the text */
        }
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        if (onProgress) onProgress(1);
        resolve(body || null);
        return;
      }
      if (xhr.status === 401) signInAgain();
      reject(new ApiError(xhr.status, body, messageOf(xhr.status, body)));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, null, 'network error')));
    xhr.addEventListener('abort', () => reject(new DOMException('upload aborted', 'AbortError')));
    if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(formData);
  });
}

/** A query string from an object, leaving out empty values: `?a=1&b=x` or ''. */
export function query(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((item) => s.append(k, String(item)));
    else s.set(k, String(v));
  }
  const text = s.toString();
  return text ? `?${text}` : '';
}
