/*
 * bullq-refresh.js: keeps server-drawn parts of a django_bullq admin page current by asking
 * for them again (docs/admin.md, "Live updates"). Each element with
 * data-bullq-refresh="<url>" is redrawn from that URL every data-bullq-every-ms (default
 * 5000) while the page is visible; the URL answers the part's HTML as the page drew it,
 * escaped by Django's templates, so nothing from Redis becomes markup here.
 *
 * Used for what the events socket does not carry: a job's flow tree (the other jobs of the
 * flow) and the Schedules page. A part is redrawn only when its HTML changed (the CSRF
 * token's mask aside), never while a pointer is pressed on it or the keyboard focus is in it
 * (a button about to be pressed stays where it is), and a failed request leaves it as it
 * was: the next one tries again.
 *
 * A file, not an inline <script>, so the pages run under a Content-Security-Policy whose
 * script-src is 'self' and has no 'unsafe-inline'.
 */
(function () {
  "use strict";

  var DEFAULT_EVERY_MS = 5000;

  // What a part shows: its elements, attributes and text, the CSRF token's value aside (each
  // answer carries a freshly masked one, which is no change of the part).
  function signature(root) {
    var out = [];
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeType === Node.TEXT_NODE) {
        var text = node.nodeValue.trim(); // the layout's white space is no change either
        if (text) {
          out.push("#" + text);
        }
        continue;
      }
      out.push("<" + node.tagName);
      var csrf = node.getAttribute("name") === "csrfmiddlewaretoken";
      for (var i = 0; i < node.attributes.length; i++) {
        var a = node.attributes[i];
        out.push(a.name + "=" + (csrf && a.name === "value" ? "" : a.value));
      }
    }
    return out.join("\n");
  }

  function busy(part) {
    return part.getAttribute("data-bullq-pressed") === "1" || part.contains(document.activeElement);
  }

  function redraw(part) {
    if (document.hidden || busy(part)) {
      return Promise.resolve();
    }
    return fetch(part.getAttribute("data-bullq-refresh"), {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || busy(part)) {
          return;
        }
        // parsed, not run: DOMParser runs no script, and the HTML is the server's template
        var body = new DOMParser().parseFromString(html, "text/html").body;
        if (signature(body) !== signature(part)) {
          part.replaceChildren.apply(part, Array.prototype.slice.call(body.childNodes));
          part.setAttribute("data-bullq-refreshed", String(Date.now()));
        }
      })
      .catch(function () {
        /* offline or the server restarting: keep what is shown, try again later */
      });
  }

  function follow(part) {
    var every = parseInt(part.getAttribute("data-bullq-every-ms"), 10) || DEFAULT_EVERY_MS;
    part.addEventListener("pointerdown", function () {
      part.setAttribute("data-bullq-pressed", "1");
    });
    document.addEventListener("pointerup", function () {
      part.removeAttribute("data-bullq-pressed");
    });
    function tick() {
      redraw(part).then(function () {
        window.setTimeout(tick, every);
      });
    }
    window.setTimeout(tick, every);
  }

  function start() {
    var parts = document.querySelectorAll("[data-bullq-refresh]");
    for (var i = 0; i < parts.length; i++) {
      follow(parts[i]);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
