// Drives BullqEvents.Feed (bullq-events.js): the live pages' modes. The socket closed: poll
// the page's JSON at once and every 2 s, "polling every 2 s"; the reads failing: "offline";
// the socket open again: "live", polling stopped (a read every 5 s for workers remains);
// refused: no more reads. Fake timers, fetch and DOM; run by tests/django/test_admin_live_json.py.
import { readFileSync } from "node:fs";
import vm from "node:vm";
import assert from "node:assert/strict";

let timers = [];
const live = { textContent: "connecting", attrs: {}, setAttribute(k, v) { this.attrs[k] = v; } };
const doc = { querySelectorAll: (sel) => (sel === "#bullq-live" ? [live] : []) };
const scope = {
  ownerDocument: doc,
  getAttribute: (name) => ({ "data-live-url": "/admin/x/live/?state=active" })[name] || null,
};
const fetched = [];
let answer = () => Promise.resolve({ ok: true, json: () => Promise.resolve({ n: fetched.length }) });
const win = {
  location: { protocol: "http:", host: "h" },
  WebSocket: class {},
  setTimeout: (fn, ms) => { timers.push({ fn, ms, live: true }); return timers.length; },
  clearTimeout: (id) => { if (timers[id - 1]) { timers[id - 1].live = false; } },
  fetch: (url, init) => { fetched.push([url, init.credentials]); return answer(); },
  console,
};
win.window = win;
vm.runInNewContext(readFileSync(process.argv[2], "utf8"), win);
const settle = () => new Promise((resolve) => setImmediate(resolve));
const pending = () => timers.filter((t) => t.live).map((t) => t.ms);
const fire = async (ms) => {
  const t = timers.find((x) => x.live && x.ms === ms);
  assert.ok(t, "no timer of " + ms + " ms in " + JSON.stringify(pending()));
  t.live = false;
  t.fn();
  await settle();
};
const mode = () => [live.attrs["data-status"], live.textContent];

const rendered = [];
const feed = new win.BullqEvents.Feed(scope, (data) => rendered.push(data.n));
assert.deepEqual(pending(), [4000]);  // the wait for a socket that neither opens nor fails
feed.socketStatus("closed");          // e.g. a WSGI server's 404 to the socket
await settle();
assert.deepEqual(fetched, [["/admin/x/live/?state=active", "same-origin"]]);
assert.deepEqual(rendered, [1]);
assert.deepEqual(mode(), ["polling", "polling every 2 s"]);
assert.deepEqual(pending().sort(), [2000, 4000]);
feed.socketStatus("closed");          // the socket's next failed retry: no extra read
await settle();
assert.equal(fetched.length, 1);
await fire(2000);                     // the next poll
assert.deepEqual(rendered, [1, 2]);
answer = () => Promise.reject(new Error("connection refused"));
await fire(2000);
assert.deepEqual(mode(), ["offline", "offline"]);
assert.deepEqual(rendered, [1, 2]);
answer = () => Promise.resolve({ ok: false, status: 502 });
await fire(2000);                     // still polling, still offline
assert.deepEqual(mode(), ["offline", "offline"]);
answer = () => Promise.resolve({ ok: true, json: () => Promise.resolve({ n: fetched.length }) });
feed.socketStatus("open");            // back to the socket: one read to catch up
await settle();
assert.deepEqual(mode(), ["open", "live"]);
assert.equal(rendered.at(-1), 5);
timers.filter((t) => t.ms === 4000).forEach((t) => { t.live = false; });
assert.deepEqual(pending(), [5000]);  // no polling: a read for workers every 5 s
feed.soon();                          // events: one read shortly
feed.soon();
assert.deepEqual(pending().sort(), [250, 5000]);
await fire(250);
assert.equal(fetched.length, 6);
feed.socketStatus("refused");
assert.deepEqual(pending(), []);
assert.deepEqual(mode(), ["refused", "refused"]);
console.log("ok");
