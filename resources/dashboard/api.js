// SPDX-License-Identifier: GPL-2.0-or-later
// The REST API (docs/protocol.md section 4) as the dashboard calls it: JSON
// in and out, the key in the same-origin cookie. What an answer says about
// the connection (no answer at all, a 401, an authorized answer) goes to the
// caller's hooks; the answer itself, or an Error with the server's words and
// `status`, to the caller of each request.

/**
 * @param {{
 *   onNoAnswer: () => void,            // the fetch failed: the server is out of reach
 *   onUnauthorized: (why: string) => void, // 401, with the server's reason ('' when none)
 *   onAuthorized: () => void,          // any other answer: the server knows the key
 * }} hooks
 * @returns {(method: string, path: string, body?: object) => Promise<object|null>}
 *   the parsed JSON answer (null for 204); rejects with Error('no key') on 401,
 *   with the fetch's error when there was no answer, else with an Error whose
 *   message is the server's `error` and whose `status` is the HTTP status.
 */
export function createApi(hooks) {
  return async function api(method, path, body) {
    const init = { method, credentials: 'same-origin', cache: 'no-store', headers: {} };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let r;
    try {
      r = await fetch(path, init);
    } catch (e) {
      hooks.onNoAnswer(); // no answer at all: the server is out of reach
      throw e;
    }
    if (r.status === 401) {
      // The server says why (a read-only link: revoked, or its session ended).
      let why = '';
      try { why = (await r.json()).error || ''; } catch { why = ''; }
      hooks.onUnauthorized(why);
      throw new Error('no key');
    }
    hooks.onAuthorized();
    let data = null;
    if (r.status !== 204) {
      try { data = await r.json(); } catch { data = null; }
    }
    if (!r.ok) {
      const err = new Error((data && data.error) || `${r.status} ${r.statusText}`);
      err.status = r.status;
      throw err;
    }
    return data;
  };
}
