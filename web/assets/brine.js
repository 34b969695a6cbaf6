// brine-web's one ES module (docs/web.md): the UTC / browser-zone time toggle.
// Loaded with <script type="module">; no inline script anywhere, so the
// Content-Security-Policy stays `default-src 'self'`.

const KEY = "brine.timezone";

// Each <time datetime="...Z"> holds its UTC text; the toggle rewrites it in
// the browser's zone and back.
function render(zone) {
  for (const el of document.querySelectorAll("time[datetime]")) {
    const when = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(when.getTime())) continue;
    if (!el.dataset.utc) el.dataset.utc = el.textContent;
    el.textContent = zone === "local" ? formatLocal(when) : el.dataset.utc;
  }
  const button = document.getElementById("tz-toggle");
  if (button) button.textContent = zone === "local" ? "Times: browser zone" : "Times: UTC";
  document.documentElement.dataset.timezone = zone;
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

function formatLocal(d) {
  const offset = -d.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)} ` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

function stored() {
  try {
    return localStorage.getItem(KEY) === "local" ? "local" : "utc";
  } catch {
    return "utc";
  }
}

const button = document.getElementById("tz-toggle");
if (button) {
  button.hidden = false;
  button.addEventListener("click", () => {
    const next = document.documentElement.dataset.timezone === "local" ? "utc" : "local";
    try {
      localStorage.setItem(KEY, next);
    } catch {
      // private mode: the choice lasts for this page only
    }
    render(next);
  });
}
render(stored());

// The overview's charts: each <canvas data-series="[{hour, jobs, ...}]"> is
// drawn by Chart.js (Debian's libjs-chart.js, embedded in brine-web), loaded
// from data-chart-src only on a page that has a chart.
const SERIES = [
  ["jobs", "Jobs", "#2e86c1"],
  ["returns", "Returns", "#1e8449"],
  ["failures", "Failures", "#c0392b"],
  ["events", "Events", "#8e44ad"],
];

function hourLabel(iso) {
  const d = new Date(iso);
  if (document.documentElement.dataset.timezone === "local") {
    return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:00`;
  }
  return `${iso.slice(5, 10)} ${iso.slice(11, 13)}:00`;
}

function drawChart(canvas) {
  const rows = JSON.parse(canvas.dataset.series);
  const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  window.Chart.defaults.color = dark ? "#ddd" : "#333";
  const chart = new window.Chart(canvas, {
    type: "line",
    data: {
      labels: rows.map((r) => hourLabel(r.hour)),
      datasets: SERIES.map(([key, label, color]) => ({
        label,
        data: rows.map((r) => r[key]),
        borderColor: color,
        backgroundColor: color,
        pointRadius: 0,
        borderWidth: 2,
      })),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      scales: { x: { ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true } },
    },
  });
  canvas.dataset.drawn = "true";
  return chart;
}

const canvases = document.querySelectorAll("canvas[data-series][data-chart-src]");
if (canvases.length > 0) {
  const script = document.createElement("script");
  script.src = canvases[0].dataset.chartSrc;
  script.addEventListener("load", () => {
    const charts = [...canvases].map(drawChart);
    // Redraw the hour labels when the time toggle changes zone.
    document.getElementById("tz-toggle")?.addEventListener("click", () => {
      charts.forEach((chart, i) => {
        chart.data.labels = JSON.parse(canvases[i].dataset.series).map((r) => hourLabel(r.hour));
        chart.update();
      });
    });
  });
  document.head.appendChild(script);
}

// The live tail on /events: an EventSource on the stream the page names,
// newest row first, at most MAX_ROWS rows. Pause closes the stream and
// remembers its cursor; Resume opens it again from there (?after=), so no
// event is lost or shown twice. Rows are built with textContent only.
const MAX_ROWS = 500;
const live = document.getElementById("live");
if (live && live.dataset.stream && typeof EventSource === "function") {
  const tbody = live.querySelector("tbody");
  const status = document.getElementById("tail-status");
  const pause = document.getElementById("tail-pause");
  let source = null;
  let cursor = "";
  let received = 0;

  const cell = (row, text, cls) => {
    const td = row.insertCell();
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  };
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const open = () => {
    let url = live.dataset.stream;
    if (cursor) url += (url.includes("?") ? "&" : "?") + "after=" + encodeURIComponent(cursor);
    source = new EventSource(url);
    source.addEventListener("open", () => say(`live, ${received} events`));
    source.addEventListener("error", () => say("reconnecting…"));
    source.addEventListener("message", (e) => {
      cursor = e.lastEventId || cursor;
      let ev;
      try {
        ev = JSON.parse(e.data);
      } catch {
        return;
      }
      const row = tbody.insertRow(0);
      row.className = "live-event";
      const time = document.createElement("time");
      time.setAttribute("datetime", ev.time);
      time.textContent = ev.time;
      row.insertCell().appendChild(time);
      cell(row, ev.tag, "event-tag");
      cell(row, ev.master);
      const code = document.createElement("code");
      code.textContent = ev.truncated ? "(too large: see the history)" : JSON.stringify(ev.data);
      row.insertCell().appendChild(code);
      while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(tbody.rows.length - 1);
      received += 1;
      say(`live, ${received} events`);
      render(document.documentElement.dataset.timezone || "utc");
    });
    source.addEventListener("cursor", (e) => {
      cursor = e.lastEventId || cursor;
    });
    source.addEventListener("skipped", (e) => {
      cursor = e.lastEventId || cursor;
      let n = 0;
      try {
        n = JSON.parse(e.data).skipped;
      } catch {
        // keep 0
      }
      const row = tbody.insertRow(0);
      row.className = "skipped";
      const td = cell(row, `${n} events skipped: reload to see them`);
      td.colSpan = 4;
    });
  };
  if (pause) {
    pause.addEventListener("click", () => {
      if (source) {
        source.close();
        source = null;
        pause.textContent = "Resume";
        say(`paused, ${received} events`);
      } else {
        pause.textContent = "Pause";
        open();
      }
    });
  }
  open();
}
