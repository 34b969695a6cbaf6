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
