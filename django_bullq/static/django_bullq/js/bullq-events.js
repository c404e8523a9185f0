/*
 * bullq-events.js: follow django_bullq queue events over WebSockets (no build step).
 *
 *   <script src="{% static 'django_bullq/js/bullq-events.js' %}"></script>
 *   const sub = BullqEvents.job("emails", "42", {
 *     onSnapshot(msg) { render(msg.job); },            // job sockets only, first message
 *     onEvent(ev) { console.log(ev.event, ev.fields); }, // {type, event, id, jobId, fields}
 *     on: { completed(ev) { done(ev.fields.returnvalue); } },  // per event name
 *     onGap(ev) { reload(); },                          // events were trimmed: refetch state
 *     onStatus(status, detail) {},                      // "open" | "closed" | "refused"
 *   });
 *   sub.close();
 *
 * BullqEvents.queue(name, handlers, options) follows every event of a queue. The client
 * remembers the id of the last event (or snapshot) and reconnects with ?last_id=<id> after
 * exponential backoff (options.minDelay ms, default 500, doubling to options.maxDelay, default
 * 30000, with jitter), so the server replays what was missed. Close codes 4403 (refused) and
 * 4400 (bad request) stop reconnecting. options.base overrides the URL root (default:
 * ws(s)://<this host>/ws/bullq/); options.lastId starts from a known id.
 * Wire protocol: docs/events.md, "Over WebSockets (Channels)".
 */
(function (root) {
  "use strict";

  function defaultBase() {
    var loc = root.location;
    return (loc.protocol === "https:" ? "wss://" : "ws://") + loc.host + "/ws/bullq/";
  }

  function Subscription(path, handlers, options) {
    this.path = path;
    this.handlers = handlers || {};
    this.options = options || {};
    this.lastId = this.options.lastId || null;
    this.delay = this.options.minDelay || 500;
    this.closed = false;
    this.socket = null;
    this.timer = null;
    this._connect();
  }

  Subscription.prototype._call = function (name) {
    var fn = this.handlers[name];
    if (typeof fn === "function") {
      try { fn.apply(null, Array.prototype.slice.call(arguments, 1)); }
      catch (err) { if (root.console) { root.console.error(err); } }
    }
  };

  Subscription.prototype._connect = function () {
    var self = this;
    var url = (this.options.base || defaultBase()) + this.path;
    if (this.lastId) { url += "?last_id=" + encodeURIComponent(this.lastId); }
    var socket = new root.WebSocket(url);
    this.socket = socket;
    socket.onopen = function () {
      self.delay = self.options.minDelay || 500;
      self._call("onStatus", "open");
    };
    socket.onmessage = function (message) {
      var data;
      try { data = JSON.parse(message.data); } catch (err) { return; }
      if (data.id) { self.lastId = data.id; }
      if (data.type === "snapshot") { self._call("onSnapshot", data); return; }
      if (data.event === "gap") { self._call("onGap", data); }
      self._call("onEvent", data);
      var named = self.handlers.on && self.handlers.on[data.event];
      if (typeof named === "function") { named(data); }
    };
    socket.onclose = function (event) {
      self.socket = null;
      if (self.closed) { return; }
      if (event.code === 4403 || event.code === 4400) {
        self.closed = true;
        self._call("onStatus", "refused", event.code);
        return;
      }
      self._call("onStatus", "closed", event.code);
      var max = self.options.maxDelay || 30000;
      var wait = Math.min(self.delay, max) * (0.75 + Math.random() * 0.5);
      self.delay = Math.min(self.delay * 2, max);
      self.timer = root.setTimeout(function () { self._connect(); }, wait);
    };
  };

  /** Stop following: close the socket and never reconnect. */
  Subscription.prototype.close = function () {
    this.closed = true;
    if (this.timer) { root.clearTimeout(this.timer); }
    if (this.socket) { this.socket.close(1000); }
  };

  root.BullqEvents = {
    /** Every event of queue `name` (any characters: percent-encoded here). */
    queue: function (name, handlers, options) {
      return new Subscription("queues/" + encodeURIComponent(name) + "/", handlers, options);
    },
    /** A snapshot of job `jobId` of queue `name`, then its events. */
    job: function (name, jobId, handlers, options) {
      return new Subscription("jobs/" + encodeURIComponent(name) + "/" +
        encodeURIComponent(jobId) + "/", handlers, options);
    },
    Subscription: Subscription,
  };
})(typeof window !== "undefined" ? window : globalThis);
