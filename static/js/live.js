/* The live board (docs/events.md): the page subscribes to the challenge's event stream
   (GET /challenges/<slug>/events/, Server-Sent Events). When the public board changes,
   the board's rows are refreshed in place at once (the same fragment the polling
   fetches; board.js keeps open breakdowns and focus), and "live" is shown. While the
   stream is connected the 5-second polling is skipped; when it is not (no EventSource,
   a proxy that drops it, a server restart) polling goes on as before. The browser
   reconnects by itself with Last-Event-ID, so no event is missed across a restart. */
(function () {
  "use strict";

  var section = document.querySelector("[data-events-url]");
  if (!section || !window.EventSource) return;
  var status = document.getElementById("live-status");
  var live = false;
  var pending = null;

  var BOARD_EVENTS = [
    "board.changed", "record.beaten", "attempt.first_blood", "rescore.finished",
    "challenge.frozen", "challenge.revealed", "challenge.opened", "challenge.closed"
  ];

  function setLive(on) {
    live = on;
    if (status) status.hidden = !on;
    section.dataset.live = on ? "1" : "0";
  }

  function refresh() {
    // Coalesce a burst of events into one fetch of the board fragment.
    if (pending) return;
    pending = window.setTimeout(function () {
      pending = null;
      var board = document.getElementById("board");
      if (!board || !window.htmx) return;
      // Issued from the document body, so the skip below never applies to it.
      window.htmx.ajax("GET", board.getAttribute("hx-get"), { target: "#board", swap: "outerHTML" });
    }, 50);
  }

  // While live, the board's own 5-second polling is not needed: skip it.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (live && elt && elt.id === "board") evt.preventDefault();
  });

  var source = new EventSource(section.dataset.eventsUrl);
  source.addEventListener("open", function () {
    setLive(true);
    refresh(); // whatever changed between the page and the stream
  });
  source.addEventListener("error", function () {
    setLive(false); // polling goes on; EventSource reconnects by itself
  });
  // The page's ranks may lag a fast burst by up to a second (PODIUM_RANKING_MAX_AGE_MS):
  // one more refresh after the last event of a burst shows where it ended.
  var settle = null;
  BOARD_EVENTS.forEach(function (type) {
    source.addEventListener(type, function (evt) {
      section.dataset.lastEventId = evt.lastEventId;
      refresh();
      if (settle) window.clearTimeout(settle);
      settle = window.setTimeout(function () { settle = null; refresh(); }, 1500);
    });
  });
})();
