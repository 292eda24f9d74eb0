/* The challenge page's two charts (vendored Chart.js): the score distribution and the
   current top 10's best values over time. Data comes from the page's charts.json; the
   colours follow the page's CSS variables, so dark mode is respected. */
(function () {
  "use strict";

  var section = document.querySelector("section.charts[data-charts-url]");
  if (!section || typeof window.Chart === "undefined") return;
  var status = document.getElementById("chart-status");
  var css = getComputedStyle(document.documentElement);
  function cssVar(name, fallback) {
    var value = css.getPropertyValue(name).trim();
    return value || fallback;
  }
  var fg = cssVar("--fg", "#1d2330");
  var line = cssVar("--line", "#e3e6ec");
  var accent = cssVar("--accent", "#3056d3");
  var palette = [accent, "#e0a526", "#2f9e74", "#d6455d", "#8a63d2",
                 "#1f9bb6", "#b0703c", "#6b8e23", "#c2549d", "#7a8599"];

  Chart.defaults.color = fg;
  Chart.defaults.borderColor = line;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily || "system-ui, sans-serif";

  // Time ticks as precise as the span needs, so attempts within one minute do not all
  // read "2026-01-01 10:00": seconds under two minutes, minutes under two days, else days.
  function timeFormat(span) {
    if (span < 2 * 60 * 1000) return function (ms) { return new Date(ms).toISOString().slice(11, 19); };
    if (span < 2 * 86400 * 1000) return function (ms) { return new Date(ms).toISOString().slice(5, 16).replace("T", " "); };
    return function (ms) { return new Date(ms).toISOString().slice(0, 10); };
  }
  // A tick callback that never repeats the label of the tick before it.
  function timeTicks(min, max) {
    var format = timeFormat(max - min);
    return function (value, index, ticks) {
      var label = format(value);
      return index > 0 && format(ticks[index - 1].value) === label ? "" : label;
    };
  }
  function bounds(series, axis) {
    var xs = [];
    series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[axis]); }); });
    return xs.length ? [Math.min.apply(null, xs), Math.max.apply(null, xs)] : null;
  }

  function draw(data) {
    var dist = data.distribution || { labels: [], counts: [] };
    var top = data.top || [];
    var span = bounds(top, "x");
    var yspan = bounds(top, "y");
    if (!dist.counts.length || !span) {
      // Nothing counted yet: no empty frames, no axes from 1970, a sentence instead.
      section.classList.add("charts--empty");
      status.textContent = "No charts yet: they appear once someone has a counted attempt.";
      section.dataset.drawn = "true";
      return;
    }
    var phone = window.matchMedia("(max-width: 40rem)").matches;
    new Chart(document.getElementById("chart-distribution"), {
      type: "bar",
      data: {
        labels: dist.labels,
        datasets: [{ label: "Players", data: dist.counts, backgroundColor: accent }]
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        plugins: { legend: { display: false } },
        scales: {
          x: { title: { display: true, text: data.axis || "Value" } },
          y: { beginAtZero: true, title: { display: true, text: "Players" },
               ticks: { precision: 0 } }
        }
      }
    });
    new Chart(document.getElementById("chart-top"), {
      type: "line",
      data: {
        datasets: top.map(function (series, i) {
          var colour = palette[i % palette.length];
          return { label: series.label, data: series.points, stepped: true,
                   borderColor: colour, backgroundColor: colour, pointRadius: 2 };
        })
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        parsing: false,
        // On a phone the names go in a list under the chart (below): inside the canvas
        // ten names would take its whole height.
        plugins: { legend: { position: "bottom", display: !phone,
                             labels: { boxWidth: 10, font: { size: 12 } } } },
        scales: {
          // The axis ends at the newest attempt (no empty stretch after it).
          x: { type: "linear", min: span[0], max: span[1] > span[0] ? span[1] : span[0] + 1000,
               title: { display: true, text: "Attempt time (UTC)" },
               ticks: { callback: timeTicks(span[0], span[1]), maxTicksLimit: phone ? 3 : 5,
                        maxRotation: 0 } },
          y: { title: { display: true, text: data.axis || "Value" },
               ticks: data.time_axis ? { callback: timeTicks(yspan[0], yspan[1]) } : {} }
        }
      }
    });
    if (phone) {
      legendList(document.getElementById("chart-top"), top.map(function (series, i) {
        return { label: series.label, colour: palette[i % palette.length] };
      }));
    }
    status.textContent = "";
    section.dataset.drawn = "true";
  }

  // A legend as a list after the chart's box: each name beside its line's colour (set
  // through the DOM: the Content-Security-Policy allows no style attribute in markup).
  function legendList(canvas, items) {
    var box = canvas.parentNode;
    var old = box.parentNode.querySelector(".chart-legend");
    if (old) { old.remove(); }
    var list = document.createElement("ul");
    list.className = "chart-legend";
    list.setAttribute("aria-label", "Players in the chart");
    items.forEach(function (item) {
      var entry = document.createElement("li");
      var swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.setAttribute("aria-hidden", "true");
      swatch.style.backgroundColor = item.colour;
      entry.appendChild(swatch);
      entry.appendChild(document.createTextNode(item.label));
      list.appendChild(entry);
    });
    box.parentNode.insertBefore(list, box.nextSibling);
  }

  fetch(section.dataset.chartsUrl, { headers: { Accept: "application/json" } })
    .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
    .then(draw)
    .catch(function () { status.textContent = "The charts could not be loaded just now."; });
})();
