// The device page's charts, drawn with uPlot (served by Vigil from node_modules): per numeric data
// point the hourly minimum-to-maximum band and average with the values of the last hours as dots,
// per yes/no data point its values as steps. The data comes in the page (#chart-data, JSON) and with
// live updates.
//
// All charts share one time axis, fitted to the history there is — at most the last 24 hours, and
// the page says how much it shows. A new device's first values then fill the chart, where a fixed
// 24-hour axis would press them into a few dots at its right edge.
import uPlot from './uPlot.esm.js';

const DAY_S = 86_400;
/** The narrowest time axis: a single value still has room around it. */
const MIN_SPAN_S = 60;
const plots = new Map();
/** First and last time (UNIX seconds) of everything the charts hold; null before any value. */
let extent = null;

/** uPlot wants one x axis: the hour middles and the raw times merged, each series null elsewhere. */
function bandData(chart) {
  const xs = [...new Set([...chart.hours.t, ...chart.raw.t])].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const empty = () => xs.map(() => null);
  const [min, avg, max, raw] = [empty(), empty(), empty(), empty()];
  chart.hours.t.forEach((t, i) => {
    const at = index.get(t);
    min[at] = chart.hours.min[i];
    avg[at] = chart.hours.avg[i];
    max[at] = chart.hours.max[i];
  });
  chart.raw.t.forEach((t, i) => {
    raw[index.get(t)] = chart.raw.v[i];
  });
  return [xs, min, avg, max, raw];
}

/** A yes/no data point's values; the last one holds until now, so its step reaches the right edge. */
function stepData(chart) {
  const xs = [...chart.raw.t];
  const vs = [...chart.raw.v];
  const now = Date.now() / 1000;
  if (xs.length > 0 && xs[xs.length - 1] < now) {
    xs.push(now);
    vs.push(vs[vs.length - 1]);
  }
  return [xs, vs];
}

function extentOf(charts) {
  let first = Infinity;
  let last = -Infinity;
  for (const chart of charts) {
    for (const t of [...chart.hours.t, ...chart.raw.t]) {
      first = Math.min(first, t);
      last = Math.max(last, t);
    }
  }
  return first === Infinity ? null : { first, last };
}

/** The shared time axis: from the first value (at most 24 hours back) to now, with a little room. */
function timeRange() {
  const right = Math.max(Date.now() / 1000, extent?.last ?? 0);
  const first = extent?.first ?? right - DAY_S;
  const left = Math.max(right - DAY_S, Math.min(first, right - MIN_SPAN_S));
  const pad = (right - left) * 0.02;
  return [left - pad, right + pad];
}

const exactTime = (s) => `${new Date(s * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

function duration(s) {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

/** Says how much history the axis shows: the last 24 hours, or all there is since when. */
function describeSpan() {
  const el = document.getElementById('chart-span');
  if (!el) return;
  const now = Date.now() / 1000;
  if (!extent) el.textContent = 'No values in the last 24 hours yet.';
  else if (now - extent.first >= DAY_S - 3600) el.textContent = 'Showing the last 24 hours.';
  else el.textContent = `Showing all the history there is: ${duration(now - extent.first)}, since ${exactTime(extent.first)}.`;
}

function colour(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function common(width, height) {
  const muted = colour('--muted', '#64748b');
  const grid = colour('--line', '#e2e8f0');
  const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height,
    axis,
    cursor: { drag: { x: false, y: false } },
    legend: { show: true, live: true },
  };
}

function bandOptions(chart, width) {
  const accent = colour('--accent', '#2563eb');
  const ink = colour('--ink', '#0f172a');
  const units = chart.units ? ` ${chart.units}` : '';
  const fmt = (v) => (v === null || v === undefined ? '—' : `${Number(v.toFixed(2))}${units}`);
  const { axis, ...base } = common(width, 200);
  const hourly = (label) => ({ label, stroke: 'transparent', spanGaps: true, value: (_u, v) => fmt(v), points: { show: false } });
  return {
    ...base,
    scales: { x: { time: true, range: () => timeRange() } },
    axes: [axis, { ...axis, size: 72, values: (_u, vals) => vals.map((v) => `${v}${units}`) }],
    series: [
      {},
      hourly('Hourly min'),
      {
        label: 'Hourly avg',
        stroke: accent,
        width: 2,
        spanGaps: true,
        value: (_u, v) => fmt(v),
        // Each hour's average as a point too: a single hour draws no line.
        points: { show: true, size: 6, fill: accent, stroke: accent },
      },
      hourly('Hourly max'),
      {
        label: 'Value',
        stroke: ink,
        width: 0,
        value: (_u, v) => fmt(v),
        points: { show: true, size: 4, fill: ink, stroke: ink },
        paths: () => null,
      },
    ],
    bands: [{ series: [3, 1], fill: colour('--chart-band', 'rgba(37, 99, 235, 0.14)') }],
  };
}

function stepOptions(width) {
  const text = (v) => (v === null || v === undefined ? '—' : v >= 0.5 ? 'true' : 'false');
  const { axis, ...base } = common(width, 140);
  return {
    ...base,
    scales: { x: { time: true, range: () => timeRange() }, y: { range: [-0.2, 1.2] } },
    axes: [axis, { ...axis, size: 72, splits: () => [0, 1], values: (_u, vals) => vals.map(text) }],
    series: [
      {},
      {
        label: 'Value',
        stroke: colour('--accent', '#2563eb'),
        width: 2,
        fill: colour('--chart-band', 'rgba(37, 99, 235, 0.14)'),
        value: (_u, v) => text(v),
        paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: false },
      },
    ],
  };
}

function widthOf(el) {
  return Math.max(240, Math.floor(el.getBoundingClientRect().width));
}

const canvasOf = (sensor) => document.querySelector(`.chart-canvas[data-sensor="${CSS.escape(sensor)}"]`);

function draw(charts) {
  extent = extentOf(charts);
  describeSpan();
  for (const chart of charts) {
    const el = canvasOf(chart.sensorName);
    if (!el) continue;
    const data = chart.kind === 'steps' ? stepData(chart) : bandData(chart);
    const plot = plots.get(chart.sensorName);
    // A data point without values says so in a line; its chart is drawn once it has one.
    el.classList.toggle('is-empty', data[0].length === 0 && !plot);
    if (plot) plot.setData(data);
    else if (data[0].length > 0) {
      const options = chart.kind === 'steps' ? stepOptions(widthOf(el)) : bandOptions(chart, widthOf(el));
      plots.set(chart.sensorName, new uPlot(options, data, el));
    }
  }
}

function init() {
  const script = document.getElementById('chart-data');
  if (!script) return;
  draw(JSON.parse(script.textContent ?? '[]'));
  document.addEventListener('vigil:data', (e) => {
    if (e.detail?.id === 'chart-data') draw(e.detail.data);
  });
  let pending = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      for (const [sensor, plot] of plots) {
        const el = canvasOf(sensor);
        if (el) plot.setSize({ width: widthOf(el), height: plot.height });
      }
    });
  });
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
