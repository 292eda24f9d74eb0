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

  function day(ms) {
    return new Date(ms).toISOString().slice(0, 16).replace("T", " ");
  }

  function draw(data) {
    var dist = data.distribution || { labels: [], counts: [] };
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
        datasets: (data.top || []).map(function (series, i) {
          var colour = palette[i % palette.length];
          return { label: series.label, data: series.points, stepped: true,
                   borderColor: colour, backgroundColor: colour, pointRadius: 2 };
        })
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        parsing: false,
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
        scales: {
          x: { type: "linear", title: { display: true, text: "Attempt time (UTC)" },
               ticks: { callback: function (v) { return day(v); }, maxTicksLimit: 5 } },
          y: { title: { display: true, text: data.axis || "Value" },
               ticks: data.time_axis ? { callback: function (v) { return day(v); } } : {} }
        }
      }
    });
    var empty = !dist.counts.length;
    status.textContent = empty ? "The charts fill in once someone has a counted attempt." : "";
    section.dataset.drawn = "true";
  }

  fetch(section.dataset.chartsUrl, { headers: { Accept: "application/json" } })
    .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
    .then(draw)
    .catch(function () { status.textContent = "The charts could not be loaded just now."; });
})();
