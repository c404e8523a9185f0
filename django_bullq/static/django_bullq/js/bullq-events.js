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
 * ws(s)://<this host>/ws/bullq/); options.lastId starts from a known id; options.counts (queue
 * sockets) asks for {type: "counts", counts, paused} frames, passed to handlers.onCounts.
 * sub.send({type: "snapshot"}) / sub.send({type: "counts"}) asks the server for a fresh one.
 *
 * BullqEvents.attach(root) makes a django_bullq admin page live: root is #bullq-root with
 * data-queue / data-job / data-state / data-live-url; elements marked data-bullq-count="<state>",
 * data-bullq-paused, data-bullq-field="<snapshot field>", data-bullq-workers,
 * data-bullq-latency, the job list's tbody and the job page's action forms
 * (data-bullq-states) are patched in place, and #bullq-live says the mode. Returns the
 * subscriptions. Fields marked data-bullq-format="time" / "duration" are written as the
 * server writes them (django_bullq/admin/display.py), in the zone of root's data-tz and with
 * its data-decimal.
 *
 * Modes (BullqEvents.Feed): "live" while the socket is open: events patch the page, a job
 * list is redrawn from data-live-url (the admin's JSON) a quarter second after events, and
 * that URL is read every 5 s for the workers (which send no events). Without a socket (a
 * WSGI-only site, a proxy without WebSockets: it fails, or is unanswered for 4 s) the page
 * polls data-live-url every 2 s ("polling every 2 s"), "offline" while that fails too; the
 * socket keeps retrying with its backoff and, once open, the polling stops.
 *
 * BullqEvents.format.duration(ms, decimalSeparator) -> "10.25 s", "1 min 3 s";
 * BullqEvents.format.time(ms, timeZone) -> [local "2026-03-01 13:00:00 UTC+01:00", UTC text].
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
    var query = [];
    if (this.lastId) { query.push("last_id=" + encodeURIComponent(this.lastId)); }
    if (this.options.counts) { query.push("counts=1"); }
    if (query.length) { url += "?" + query.join("&"); }
    var socket = new root.WebSocket(url);
    this.socket = socket;
    var openedAt = null;
    socket.onopen = function () {
      openedAt = Date.now();
      self._call("onStatus", "open");
    };
    socket.onmessage = function (message) {
      var data;
      try { data = JSON.parse(message.data); } catch (err) { return; }
      if (data.id) { self.lastId = data.id; }
      if (data.type === "snapshot") { self._call("onSnapshot", data); return; }
      if (data.type === "counts") { self._call("onCounts", data); return; }
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
      // the backoff restarts only after a socket that lived: one the server closes at once
      // (again and again) keeps backing off
      if (openedAt !== null && Date.now() - openedAt > 10000) {
        self.delay = self.options.minDelay || 500;
      }
      var max = self.options.maxDelay || 30000;
      var wait = Math.min(self.delay, max) * (0.75 + Math.random() * 0.5);
      self.delay = Math.min(self.delay * 2, max);
      self.timer = root.setTimeout(function () { self._connect(); }, wait);
    };
  };

  /** Send a request frame (e.g. {type: "snapshot"}); false when the socket is not open. */
  Subscription.prototype.send = function (message) {
    if (!this.socket || this.socket.readyState !== 1) { return false; }
    this.socket.send(JSON.stringify(message));
    return true;
  };

  /** Stop following: close the socket and never reconnect. */
  Subscription.prototype.close = function () {
    this.closed = true;
    if (this.timer) { root.clearTimeout(this.timer); }
    if (this.socket) { this.socket.close(1000); }
  };


  // --- live admin pages ------------------------------------------------------------------

  var STATE_OF_EVENT = {
    active: "active", completed: "completed", failed: "failed", delayed: "delayed",
    waiting: "waiting", "waiting-children": "waiting-children", removed: "removed",
    prioritized: "prioritized",
  };

  function each(scope, selector, fn) {
    var found = scope.querySelectorAll(selector);
    for (var i = 0; i < found.length; i++) { fn(found[i]); }
  }

  function pretty(value) {
    if (value === null || value === undefined) { return "null"; }
    try { return JSON.stringify(value, null, 2); } catch (err) { return String(value); }
  }

  function pad(n, width) {
    var text = String(n);
    while (text.length < (width || 2)) { text = "0" + text; }
    return text;
  }

  function isTime(ms) { return typeof ms === "number" && isFinite(ms) && ms > 0; }

  /** ms in units, as display.duration_text: "250 ms", "10.25 s", "1 min 3 s", "2 h 5 min". */
  function formatDuration(ms, decimal) {
    if (typeof ms !== "number" || !isFinite(ms) || ms < 0) { return "\u2013"; }
    ms = Math.floor(ms);
    if (ms < 1000) { return ms + " ms"; }
    var hundredths = Math.floor((ms + 5) / 10);
    if (hundredths < 6000) {
      var text = Math.floor(hundredths / 100) + "." + pad(hundredths % 100, 2);
      text = text.replace(/0+$/, "").replace(/\.$/, "");
      return text.replace(".", decimal || ".") + " s";
    }
    var seconds = Math.floor(hundredths / 100);
    var steps = [[86400, "d", 3600, "h"], [3600, "h", 60, "min"], [60, "min", 1, "s"]];
    for (var i = 0; i < steps.length; i++) {
      var big = steps[i][0], small = steps[i][2];
      if (seconds >= big) {
        var rest = Math.floor((seconds % big) / small);
        var tail = rest ? " " + rest + " " + steps[i][3] : "";
        return Math.floor(seconds / big) + " " + steps[i][1] + tail;
      }
    }
    return "\u2013";
  }

  /** [local text in `zone`, UTC text], as display.local_text / utc_text. */
  function formatTime(ms, zone) {
    if (!isTime(ms)) { return ["\u2013", "\u2013"]; }
    ms = Math.floor(ms);
    var d = new Date(ms);
    var utcWall = d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) +
      " " + pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
    var utc = utcWall + "." + pad(ms % 1000, 3) + " UTC";
    var local = utcWall, minutes = 0;
    try {
      var parts = new Intl.DateTimeFormat("en-US", {
        timeZone: zone || "UTC", hourCycle: "h23", year: "numeric", month: "2-digit",
        day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
      }).formatToParts(d);
      var p = {};
      for (var i = 0; i < parts.length; i++) { p[parts[i].type] = parts[i].value; }
      var hour = Number(p.hour) % 24;
      var wall = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), hour,
        Number(p.minute), Number(p.second));
      minutes = Math.round((wall - Math.floor(ms / 1000) * 1000) / 60000);
      local = pad(p.year, 4) + "-" + p.month + "-" + p.day + " " + pad(hour) + ":" + p.minute +
        ":" + p.second;
    } catch (err) { /* a zone this browser does not know: UTC */ }
    var abs = Math.abs(minutes);
    var label = minutes ? "UTC" + (minutes < 0 ? "-" : "+") + pad(Math.floor(abs / 60)) + ":" +
      pad(abs % 60) : "UTC";
    return [local + " " + label, utc];
  }

  function renderFormatted(scope, el, format, value) {
    if (format === "time") {
      var texts = formatTime(value, scope.getAttribute("data-tz"));
      el.textContent = texts[0];
      if (isTime(value)) {
        el.title = texts[1];
        el.setAttribute("datetime", new Date(Math.floor(value)).toISOString());
      } else {
        el.removeAttribute("title");
        el.removeAttribute("datetime");
      }
      return;
    }
    el.textContent = formatDuration(value, scope.getAttribute("data-decimal"));
    el.title = typeof value === "number" && value >= 0 ? Math.floor(value) + " ms" : "";
  }

  function setLive(scope, status, text) {
    each(scope.ownerDocument || root.document, "#bullq-live", function (el) {
      el.textContent = text || (status === "open" ? "live" : status);
      el.setAttribute("data-status", status);
    });
  }

  // --- modes: live (the socket), polling (the page's JSON endpoint), offline -------------

  /** ms between polls without a socket, between JSON reads of a live page (workers), the
   *  wait for a socket before polling starts, and the debounce of a redraw after events. */
  var POLL_MS = 2000, HEARTBEAT_MS = 5000, CONNECT_WAIT_MS = 4000, SOON_MS = 250;

  /**
   * The data of one page: from the socket while it is open ("live"), else by polling
   * root's data-live-url every data-poll-ms (default 2 s; "polling every 2 s"), "offline"
   * while that fails too. A live page still reads the URL every heartbeatMs (workers send no
   * events) and soon() after events. The socket keeps reconnecting with its backoff; once it
   * opens the polling stops.
   */
  function Feed(scope, render, options) {
    options = options || {};
    this.scope = scope;
    this.url = scope.getAttribute("data-live-url");
    this.render = render;
    this.pollMs = Number(scope.getAttribute("data-poll-ms")) || POLL_MS;
    this.heartbeatMs = options.heartbeatMs === undefined ? HEARTBEAT_MS : options.heartbeatMs;
    this.socket = "connecting";
    this.fetched = null;  // null: never read; true / false: the last read worked / failed
    this.timer = null;
    this.soonTimer = null;
    this.inflight = false;
    this.again = false;
    var self = this;
    // a socket a proxy holds open unanswered: poll meanwhile
    this.waitTimer = root.setTimeout(function () {
      if (self.socket === "connecting") { self.fetch(); }
    }, CONNECT_WAIT_MS);
  }

  Feed.prototype.socketStatus = function (status) {
    var was = this.socket;
    this.socket = status;
    if (status === "refused") {
      if (this.timer) { root.clearTimeout(this.timer); this.timer = null; }
    } else if (status === "open") {
      this.schedule();
      if (was !== "open" && was !== "connecting") { this.fetch(); }  // catch up after polling
    } else if (!this.timer && !this.inflight) {
      this.fetch();  // the socket failed: poll at once, then every pollMs
    }
    this.show();
  };

  Feed.prototype.mode = function () {
    if (this.socket === "open") { return ["open", "live"]; }
    if (this.socket === "refused") { return ["refused", "refused"]; }
    if (this.fetched === true) {
      return ["polling", "polling every " + String(this.pollMs / 1000).replace(".",
        this.scope.getAttribute("data-decimal") || ".") + " s"];
    }
    if (this.fetched === false) { return ["offline", "offline"]; }
    return [this.socket, this.socket];
  };

  Feed.prototype.show = function () {
    var mode = this.mode();
    setLive(this.scope, mode[0], mode[1]);
  };

  Feed.prototype.fetch = function () {
    var self = this;
    if (!this.url || typeof root.fetch !== "function") { return; }
    if (this.inflight) { this.again = true; return; }
    if (this.timer) { root.clearTimeout(this.timer); this.timer = null; }
    this.inflight = true;
    root.fetch(this.url, {
      credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" },
    }).then(function (response) {
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      return response.json();
    }).then(function (data) {
      self.fetched = true;
      try { self.render(data); } catch (err) { if (root.console) { root.console.error(err); } }
    }, function () {
      self.fetched = false;
    }).then(function () {
      self.inflight = false;
      self.show();
      if (self.again) { self.again = false; self.fetch(); } else { self.schedule(); }
    });
  };

  /** Read the URL shortly (a burst of events costs one read). */
  Feed.prototype.soon = function () {
    var self = this;
    if (this.soonTimer) { return; }
    this.soonTimer = root.setTimeout(function () { self.soonTimer = null; self.fetch(); },
      SOON_MS);
  };

  Feed.prototype.schedule = function () {
    var self = this;
    if (this.timer) { root.clearTimeout(this.timer); this.timer = null; }
    if (this.socket === "refused") { return; }
    var wait = this.socket === "open" ? this.heartbeatMs : this.pollMs;
    if (this.socket === "connecting" && this.fetched === null) { return; }
    if (wait > 0) { this.timer = root.setTimeout(function () { self.fetch(); }, wait); }
  };

  function renderProgress(cell, value) {
    // cell holds a <progress> and a [data-bullq-progress-text] (numbers) or a <pre> (objects)
    var bar = cell.querySelector("progress");
    var text = cell.querySelector("[data-bullq-progress-text]");
    var numeric = typeof value === "number" && isFinite(value);
    if (bar) {
      bar.hidden = !numeric;
      if (numeric) { bar.value = Math.max(0, Math.min(100, value)); }
    }
    if (text) { text.textContent = numeric ? String(value) : pretty(value); }
    if (!bar && !text) { cell.textContent = numeric ? String(value) : pretty(value); }
  }

  function renderCounts(scope, message) {
    var counts = message.counts || {};
    each(scope, "[data-bullq-count]", function (el) {
      var state = el.getAttribute("data-bullq-count");
      if (Object.prototype.hasOwnProperty.call(counts, state)) {
        el.textContent = String(counts[state]);
      }
    });
    each(scope, "[data-bullq-paused]", function (el) {
      el.textContent = message.paused ? "paused" : el.getAttribute("data-bullq-running") || "running";
      el.setAttribute("data-paused", message.paused ? "1" : "0");
    });
  }

  function spans(job) {
    // waited (created -> last start) and ran (last start -> finished), as display.py
    var out = {};
    if (!Object.prototype.hasOwnProperty.call(job, "processedOn")) { return out; }
    var start = job.processedOn;
    out.waited = isTime(start) && isTime(job.timestamp) ? Math.max(0, start - job.timestamp) : null;
    out.ran = isTime(start) && isTime(job.finishedOn) ? Math.max(0, job.finishedOn - start) : null;
    return out;
  }

  function showFailure(scope) {
    // the failed reason is the job's current failure only while it is failed; an earlier
    // attempt's stays in the attempt history
    each(scope, '[data-bullq-section="failedReason"]', function (section) {
      var text = section.querySelector('[data-bullq-field="failedReason"]');
      var failed = scope.getAttribute("data-state") === "failed";
      section.hidden = !(failed && text && text.textContent && text.textContent !== "\u2013");
    });
  }

  function renderJob(scope, job) {
    if (!job) {
      each(scope, '[data-bullq-field="state"]', function (el) { el.textContent = "removed"; });
      renderActions(scope, "removed");
      return;
    }
    if (job.state) { scope.setAttribute("data-state", job.state); }
    var derived = spans(job);
    var has = function (field) {
      return Object.prototype.hasOwnProperty.call(job, field) ||
        Object.prototype.hasOwnProperty.call(derived, field);
    };
    each(scope, "[data-bullq-field]", function (el) {
      var field = el.getAttribute("data-bullq-field");
      if (!has(field)) { return; }
      var value = Object.prototype.hasOwnProperty.call(job, field) ? job[field] : derived[field];
      var format = el.getAttribute("data-bullq-format");
      if (format) { renderFormatted(scope, el, format, value); return; }
      if (field === "progress") {
        renderProgress(el, value);
        var row = el.closest ? el.closest('[data-bullq-section="progress"]') : null;
        var reported = Object.prototype.hasOwnProperty.call(job, "progressReported") ?
          job.progressReported : value !== 0;
        if (row && reported) { row.hidden = false; }
        return;
      }
      if (field === "logs") { el.textContent = (value || []).join("\n"); return; }
      if (field === "returnvalue") { el.textContent = pretty(value); return; }
      if (field === "failedReason") {
        el.textContent = value ? (job.failedType ? job.failedType + ": " : "") + value : "";
        return;
      }
      if (field === "processedBy") {
        el.textContent = value || "";
        var section = el.closest ? el.closest('[data-bullq-section="processedBy"]') : null;
        if (section) { section.hidden = !value; }
        return;
      }
      el.textContent = value === null || value === undefined ? "\u2013" : String(value);
    });
    showFailure(scope);
    if (job.state) { renderActions(scope, job.state); }
  }

  /** Show the job actions of `state` (the forms the server rendered, permission-filtered,
   *  each with its data-bullq-states), hide the others; as actions.job_actions_for. */
  function renderActions(scope, state) {
    var box = scope.querySelector("#bullq-job-actions");
    if (!box) { return; }
    var any = false;
    each(box, "form[data-bullq-states]", function (form) {
      var applies = (form.getAttribute("data-bullq-states") || "").split(" ").indexOf(state) >= 0;
      form.hidden = !applies;
      any = any || applies;
      each(form, 'input[name="state"]', function (input) { input.value = state; });
    });
    box.hidden = !any;
  }

  function jobLink(scope, jobId) {
    var template = scope.getAttribute("data-job-url") || "";
    // the admin's URL converter: Python's quote(safe=""), then reverse() escapes "%" again
    var segment = jobId === "." || jobId === ".." ? jobId.replace(/\./g, "%2E") :
      encodeURIComponent(jobId).replace(/[!'()*]/g, function (c) {
        return "%" + c.charCodeAt(0).toString(16).toUpperCase();
      });
    segment = segment.replace(/%/g, "%25");
    return template.replace("__JOB_ID__", segment);
  }

  function cell(doc, row, text, field) {
    var td = doc.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    if (field) { td.setAttribute("data-bullq-field", field); }
    row.appendChild(td);
    return td;
  }

  /** A job list row as queue.html writes it, from a row of the queue's JSON. */
  function jobRow(scope, body, job) {
    var doc = scope.ownerDocument || root.document;
    var row = doc.createElement("tr");
    row.setAttribute("data-job-id", job.id);
    var first = cell(doc, row, "");
    // a checkbox only where the operator may act on jobs (view-only staff get none)
    if (body.getAttribute("data-selectable") === "1") {
      var box = doc.createElement("input");
      box.type = "checkbox"; box.name = "ids"; box.value = job.id;
      first.appendChild(box);
    }
    var id = cell(doc, row, "");
    id.className = "bullq-id";
    var a = doc.createElement("a");
    a.href = jobLink(scope, job.id);
    a.textContent = job.id;
    id.appendChild(a);
    cell(doc, row, job.name);
    var created = doc.createElement("time");
    renderFormatted(scope, created, "time", job.timestamp);
    cell(doc, row, "").appendChild(created);
    cell(doc, row, job.attemptsMade);
    cell(doc, row, job.priority);
    cell(doc, row, job.progress, "progress");
    cell(doc, row, job.failure, "failedReason");
    return row;
  }

  /** Redraw the job list from the queue's JSON `list`: rows that entered the listed state
   *  appear (highlighted), rows that left it go, ticked boxes stay ticked. */
  function renderList(scope, list) {
    var body = scope.querySelector("#bullq-jobs-body");
    if (!body || !list || list.state !== scope.getAttribute("data-state")) { return; }
    each(scope, "[data-bullq-pages]", function (el) { el.textContent = String(list.pages); });
    body.setAttribute("data-total", String(list.total));
    // the same rows as drawn last: leave them (and the operator's focus) alone
    var drawn = JSON.stringify(list.jobs || []);
    if (body.bullqDrawn === drawn && !body.querySelector("tr.bullq-moved")) { return; }
    body.bullqDrawn = drawn;
    var doc = scope.ownerDocument || root.document;
    var before = {}, ticked = {};
    each(body, "tr[data-job-id]", function (row) {
      before[row.getAttribute("data-job-id")] = row.className === "bullq-new" ? "new" : "old";
    });
    each(body, 'input[name="ids"]', function (box) { if (box.checked) { ticked[box.value] = 1; } });
    var rows = [];
    for (var i = 0; i < (list.jobs || []).length; i++) {
      var job = list.jobs[i];
      var row = jobRow(scope, body, job);
      var seen = Object.prototype.hasOwnProperty.call(before, job.id) ? before[job.id] : null;
      if (seen !== "old") { row.className = list.state === "failed" ? "bullq-new" : "bullq-added"; }
      if (ticked[job.id]) { row.querySelector('input[name="ids"]').checked = true; }
      rows.push(row);
    }
    if (!rows.length) {
      var empty = doc.createElement("tr");
      empty.className = "bullq-empty";
      var td = cell(doc, empty, "No jobs.");
      td.setAttribute("colspan", "8");
      rows.push(empty);
    }
    while (body.firstChild) { body.removeChild(body.firstChild); }
    for (var j = 0; j < rows.length; j++) { body.appendChild(rows[j]); }
  }

  function renderWorkers(scope, workers) {
    var n = workers.length;
    each(scope, "[data-bullq-workers]", function (el) {
      el.textContent = n + " worker connection" + (n === 1 ? "" : "s");
    });
    var section = scope.querySelector("#bullq-workers");
    var body = scope.querySelector("#bullq-workers-body");
    if (!section || !body) { return; }
    var doc = scope.ownerDocument || root.document;
    while (body.firstChild) { body.removeChild(body.firstChild); }
    for (var i = 0; i < n; i++) {
      var row = doc.createElement("tr");
      cell(doc, row, workers[i].name || "\u2013");
      cell(doc, row, workers[i].addr);
      cell(doc, row, workers[i].age);
      cell(doc, row, workers[i].idle);
      body.appendChild(row);
    }
    section.hidden = n === 0;
  }

  function renderLatency(scope, where, ms) {
    each(where, "[data-bullq-latency]", function (el) {
      var doc = scope.ownerDocument || root.document;
      while (el.firstChild) { el.removeChild(el.firstChild); }
      if (typeof ms !== "number") {
        el.textContent = el.getAttribute("data-bullq-none") || "\u2013";
        return;
      }
      var span = doc.createElement("span");
      renderFormatted(scope, span, "duration", ms);
      el.appendChild(span);
    });
  }

  function renderQueue(scope, data) {
    renderCounts(scope, data);
    renderLatency(scope, scope, data.latency);
    renderWorkers(scope, data.workers || []);
    renderList(scope, data.list);
  }

  function cssEscape(value) {
    return String(value).replace(/["\\]/g, "\\$&");
  }

  function attachQueue(scope, queueName) {
    var listed = scope.getAttribute("data-state") || "";
    var feed = new Feed(scope, function (data) { renderQueue(scope, data); });
    var sub = BullqEventsApi.queue(queueName, {
      onStatus: function (status) { feed.socketStatus(status); },
      onCounts: function (message) {
        renderCounts(scope, message);
        // the list follows its count: a changed count of the listed state redraws it
        var body = scope.querySelector("#bullq-jobs-body");
        var counts = message.counts || {};
        if (body && String(counts[listed]) !== body.getAttribute("data-total")) { feed.soon(); }
      },
      onEvent: function (event) {
        if (!event.jobId) { feed.soon(); return; }
        var row = scope.querySelector('tr[data-job-id="' + cssEscape(event.jobId) + '"]');
        if (event.event === "progress") {
          if (row) {
            each(row, '[data-bullq-field="progress"]', function (el) {
              renderProgress(el, (event.fields || {}).data);
            });
          }
          return;
        }
        var state = STATE_OF_EVENT[event.event];
        if (row && state && state !== listed) {
          row.className = "bullq-moved";
          row.setAttribute("data-now", state);
          row.title = "now " + state;
        }
        feed.soon();  // rows that entered or left the listed state
      },
    }, { counts: true });
    var body = scope.querySelector("#bullq-jobs-body");
    if (body) {
      var rows = body.querySelectorAll("tr[data-job-id]").length;
      var shown = scope.querySelector('[data-bullq-count="' + cssEscape(listed) + '"]');
      body.setAttribute("data-total", shown ? shown.textContent : String(rows));
    }
    return sub;
  }

  /** Redraw the attempt history from the job JSON's `attempts` (as job.html writes it):
   *  each failure with its number, exception type, message and trace, then the completion. */
  function renderAttempts(scope, attempts, job) {
    var section = scope.querySelector("#bullq-attempts");
    var body = scope.querySelector("#bullq-attempts-body");
    if (!section || !body || !attempts) { return; }
    var doc = scope.ownerDocument || root.document;
    while (body.firstChild) { body.removeChild(body.firstChild); }
    for (var i = 0; i < attempts.length; i++) {
      var a = attempts[i];
      var row = doc.createElement("tr");
      row.className = "bullq-attempt-" + a.outcome;
      cell(doc, row, a.number === null || a.number === undefined ? "?" : a.number);
      cell(doc, row, a.outcome);
      cell(doc, row, a.type || "");
      var message = cell(doc, row, a.trace ? "" : a.message);
      if (a.trace) {
        var details = doc.createElement("details");
        var summary = doc.createElement("summary");
        var text = a.message || "";
        summary.textContent = text.length > 200 ? text.slice(0, 199) + "\u2026" : text;
        var pre = doc.createElement("pre");
        pre.className = "bullq-pre";
        pre.textContent = a.trace;
        details.appendChild(summary);
        details.appendChild(pre);
        message.appendChild(details);
      }
      body.appendChild(row);
    }
    section.hidden = attempts.length === 0;
    var note = scope.querySelector("#bullq-history-note");
    if (note && job) { note.hidden = job.state === "failed" || !job.failedReason; }
  }

  function attachJob(scope, queueName, jobId) {
    var pending = null;
    var feed = new Feed(scope, function (data) {
      renderJob(scope, data.job);
      renderAttempts(scope, data.attempts, data.job);
    }, { heartbeatMs: 0 });
    var sub = BullqEventsApi.job(queueName, jobId, {
      onStatus: function (status) { feed.socketStatus(status); },
      onSnapshot: function (message) { renderJob(scope, message.job); },
      onEvent: function (event) {
        if (event.event === "progress") {
          renderJob(scope, { progress: (event.fields || {}).data, progressReported: true });
          return;
        }
        var state = STATE_OF_EVENT[event.event];
        if (state) {
          renderJob(scope, { state: state });
          feed.soon();  // the attempt history, which snapshots do not carry
        }
        // attempts, timestamps, return value, failed reason and logs: ask for a snapshot
        if (pending) { root.clearTimeout(pending); }
        pending = root.setTimeout(function () { pending = null; sub.send({ type: "snapshot" }); },
          100);
      },
    });
    // log lines send no event: while the job runs, a fresh snapshot every second
    var ticker = root.setInterval(function () {
      if (feed.socket === "open" && scope.getAttribute("data-state") === "active") {
        sub.send({ type: "snapshot" });
      }
    }, 1000);
    var close = sub.close;
    sub.close = function () { root.clearInterval(ticker); close.call(sub); };
    return sub;
  }

  function renderOverview(scope, data) {
    var queues = data.queues || [];
    for (var i = 0; i < queues.length; i++) {
      var row = scope.querySelector('tr[data-queue="' + cssEscape(queues[i].name) + '"]');
      if (!row || queues[i].error) { continue; } // unreachable: the page's row says so
      renderCounts(row, queues[i]);
      renderLatency(scope, row, queues[i].latency);
      each(row, "[data-bullq-workers]", function (el) { el.textContent = String(queues[i].workers); });
    }
  }

  /** Make an admin page live; see the header. Returns the list of subscriptions. */
  function attach(scope) {
    if (!scope) { return []; }
    var queueName = scope.getAttribute("data-queue");
    var jobId = scope.getAttribute("data-job");
    if (queueName && jobId) { return [attachJob(scope, queueName, jobId)]; }
    if (queueName) { return [attachQueue(scope, queueName)]; }
    // the overview: one socket per queue row (at most 50); live while all are open, else
    // the whole table is polled
    var feed = new Feed(scope, function (data) { renderOverview(scope, data); });
    var subs = [];
    var statuses = [];
    function showStatuses() {
      var count = function (s) { return statuses.filter(function (x) { return x === s; }).length; };
      if (count("open") === statuses.length) { feed.socketStatus("open"); return; }
      if (count("refused") === statuses.length) { feed.socketStatus("refused"); return; }
      if (count("connecting") + count("open") === statuses.length) {
        setLive(scope, "connecting", count("open") + " of " + statuses.length + " live");
        return;
      }
      feed.socketStatus("closed");
    }
    each(scope, "tr[data-queue]", function (row) {
      if (subs.length >= 50) { return; }
      var slot = statuses.length;
      statuses.push("connecting");
      var sub = BullqEventsApi.queue(row.getAttribute("data-queue"), {
        onStatus: function (status) {
          statuses[slot] = status;
          row.setAttribute("data-live", status);
          showStatuses();
        },
        onCounts: function (message) { renderCounts(row, message); },
      }, { counts: true });
      subs.push(sub);
    });
    if (!subs.length) { feed.socketStatus("open"); }
    return subs;
  }

  var BullqEventsApi = root.BullqEvents = {
    /** Every event of queue `name` (any characters: percent-encoded here). */
    queue: function (name, handlers, options) {
      return new Subscription("queues/" + encodeURIComponent(name) + "/", handlers, options);
    },
    /** A snapshot of job `jobId` of queue `name`, then its events. */
    job: function (name, jobId, handlers, options) {
      return new Subscription("jobs/" + encodeURIComponent(name) + "/" +
        encodeURIComponent(jobId) + "/", handlers, options);
    },
    attach: attach,
    Subscription: Subscription,
    Feed: Feed,
    format: { duration: formatDuration, time: formatTime },
  };
  // the admin templates call window.bullqEvents.attach(root)
  root.bullqEvents = root.BullqEvents;
})(typeof window !== "undefined" ? window : globalThis);
