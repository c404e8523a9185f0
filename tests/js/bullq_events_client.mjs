// Drives django_bullq/static/django_bullq/js/bullq-events.js with a fake WebSocket and timers.
import { readFileSync } from "node:fs";
import vm from "node:vm";
import assert from "node:assert/strict";

const sockets = [];
const timers = [];
class FakeSocket {
  constructor(url) { this.url = url; sockets.push(this); }
  close(code) { this.closedWith = code; }
}
const win = {
  location: { protocol: "https:", host: "example.org" },
  WebSocket: FakeSocket,
  setTimeout: (fn, ms) => { timers.push({ fn, ms }); return timers.length; },
  clearTimeout: () => {},
  console,
};
win.window = win;
vm.runInNewContext(readFileSync(process.argv[2], "utf8"), win);

const seen = [];
const sub = win.BullqEvents.job("test/transactions#ünï a", "7", {
  onSnapshot: (m) => seen.push(["snapshot", m.job.state]),
  onEvent: (e) => seen.push(["event", e.event, e.id]),
  onGap: (e) => seen.push(["gap", e.fields.first]),
  on: { completed: (e) => seen.push(["completed", e.fields.returnvalue]) },
});
const first = sockets[0];
assert.equal(first.url,
  "wss://example.org/ws/bullq/jobs/test%2Ftransactions%23%C3%BCn%C3%AF%20a/7/");
first.onopen();
const send = (s, obj) => s.onmessage({ data: JSON.stringify(obj) });
send(first, { type: "snapshot", id: "5-0", job: { state: "active" } });
send(first, { type: "event", event: "progress", id: "6-0", jobId: "7", fields: {} });
first.onclose({ code: 1006 });
assert.equal(timers.length, 1);
assert.ok(timers[0].ms >= 375 && timers[0].ms <= 625, String(timers[0].ms));
timers[0].fn();
const second = sockets[1];
assert.equal(second.url.split("?")[1], "last_id=6-0");
second.onclose({ code: 1006 });  // backoff doubles
assert.ok(timers[1].ms >= 750 && timers[1].ms <= 1250, String(timers[1].ms));
timers[1].fn();
const third = sockets[2];
send(third, { type: "event", event: "gap", id: "8-0", jobId: null, fields: { first: "7-0" } });
send(third, { type: "event", event: "completed", id: "9-0", jobId: "7",
  fields: { returnvalue: { ok: 1 } } });
third.onclose({ code: 4403 });   // refused: no reconnect
assert.equal(timers.length, 2);
sub.close();
assert.deepEqual(JSON.parse(JSON.stringify(seen)), [
  ["snapshot", "active"], ["event", "progress", "6-0"], ["gap", "7-0"],
  ["event", "gap", "8-0"], ["event", "completed", "9-0"], ["completed", { ok: 1 }],
]);
const q = win.BullqEvents.queue("a b", {}, { base: "ws://h/x/", lastId: "3-1" });
assert.equal(sockets[3].url, "ws://h/x/queues/a%20b/?last_id=3-1");
q.close();
assert.equal(sockets[3].closedWith, 1000);
const counted = [];
const c = win.BullqEvents.queue("a", { onCounts: (m) => counted.push(m.counts.waiting) },
  { base: "ws://h/x/", counts: true, lastId: "4-0" });
assert.equal(sockets[4].url, "ws://h/x/queues/a/?last_id=4-0&counts=1");
assert.equal(c.send({ type: "counts" }), false);  // not open yet: nothing sent
sockets[4].readyState = 1;
sockets[4].sent = [];
sockets[4].send = (text) => sockets[4].sent.push(text);
assert.equal(c.send({ type: "counts" }), true);
assert.deepEqual(sockets[4].sent, ['{"type":"counts"}']);
send(sockets[4], { type: "counts", counts: { waiting: 3 }, paused: false });
assert.deepEqual(counted, [3]);
assert.equal(win.bullqEvents, win.BullqEvents);  // the name the admin pages call attach on
c.close();
console.log("ok");
