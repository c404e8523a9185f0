/*
 * bullq-admin.js: makes a django_bullq admin page live, bullqEvents.attach(#bullq-root), once
 * bullq-events.js (loaded before it) is there. Counts, progress bars, states and new failures
 * then follow the events socket (docs/admin.md, "Live updates").
 *
 * A file, not an inline <script>, so the pages run under a Content-Security-Policy whose
 * script-src is 'self' (with or without a nonce) and has no 'unsafe-inline'.
 */
(function () {
  "use strict";

  function start() {
    var root = document.getElementById("bullq-root");
    if (root && window.bullqEvents && typeof window.bullqEvents.attach === "function") {
      window.bullqEvents.attach(root);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
