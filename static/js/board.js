/* The live leaderboard (templates/challenges/_board.html): htmx refreshes #board every
   few seconds. This keeps what the reader was doing across a refresh: open breakdowns
   and the focused control. An unchanged response is not swapped at all, and a failed
   refresh keeps the table as it is (never an error text in its place). */
(function () {
  "use strict";

  var lastHtml = null;
  var openRows = [];
  var focused = null;

  function focusKey(board) {
    var el = document.activeElement;
    if (!el || !board.contains(el)) return null;
    var details = el.closest("details.why");
    if (details) return { row: details.dataset.row };
    if (el.getAttribute("href")) return { href: el.getAttribute("href") };
    return null;
  }

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var board = evt.detail.target;
    if (!board || board.id !== "board") return;
    var status = evt.detail.xhr ? evt.detail.xhr.status : 0;
    var html = evt.detail.serverResponse;
    if (status !== 200 || html === lastHtml) {
      evt.detail.shouldSwap = false;
      evt.detail.isError = false; // a missed refresh is not the reader's problem
      return;
    }
    lastHtml = html;
    openRows = Array.prototype.map.call(
      board.querySelectorAll("details.why[open]"),
      function (d) { return d.dataset.row; }
    );
    focused = focusKey(board);
  });

  // Reopened in the same task as the swap, so no reader (or test) ever sees the new rows
  // with their breakdowns closed; again after settling, in case htmx's settle reset them.
  function reopen() {
    var board = document.getElementById("board");
    if (!board) return null;
    openRows.forEach(function (row) {
      var d = board.querySelector('details.why[data-row="' + row + '"]');
      if (d) d.open = true;
    });
    return board;
  }

  document.addEventListener("htmx:afterSwap", reopen);

  document.addEventListener("htmx:afterSettle", function () {
    var board = reopen();
    if (!board) return;
    if (focused) {
      var target = null;
      if (focused.row) {
        target = board.querySelector('details.why[data-row="' + focused.row + '"] summary');
      } else if (focused.href) {
        board.querySelectorAll("a[href]").forEach(function (a) {
          if (!target && a.getAttribute("href") === focused.href) target = a;
        });
      }
      if (target) target.focus({ preventScroll: true });
    }
    openRows = [];
    focused = null;
  });

  // Bring the highlighted player (?player=) into view once, on load.
  document.addEventListener("DOMContentLoaded", function () {
    var row = document.querySelector("#board tr.highlight");
    if (row) row.scrollIntoView({ block: "center" });
  });
})();
