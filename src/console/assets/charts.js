// The device page's charts, drawn with uPlot (served by Vigil from node_modules): per numeric data
// point, the hourly minimum-to-maximum band and average of the last 24 hours, and the raw values of
// the last hours as dots. The data comes in the page (#chart-data, JSON) and with live updates.
import uPlot from './uPlot.esm.js';

const plots = new Map();

/** uPlot wants one x axis: the hour middles and the raw times merged, each series null elsewhere. */
function aligned(chart) {
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

function colour(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function options(chart, width) {
  const accent = colour('--accent', '#2563eb');
  const band = colour('--chart-band', 'rgba(37, 99, 235, 0.14)');
  const muted = colour('--muted', '#64748b');
  const grid = colour('--line', '#e2e8f0');
  const units = chart.units ? ` ${chart.units}` : '';
  const fmt = (v) => (v === null || v === undefined ? '—' : `${Number(v.toFixed(2))}${units}`);
  const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height: 200,
    cursor: { drag: { x: false, y: false } },
    legend: { show: true, live: true },
    // The last 24 hours, whatever the data covers.
    scales: {
      x: { time: true, range: (_u, _min, max) => [Date.now() / 1000 - 86_400, Math.max(Date.now() / 1000, max ?? 0)] },
    },
    axes: [axis, { ...axis, size: 72, values: (_u, vals) => vals.map((v) => `${v}${units}`) }],
    series: [
      {},
      { label: 'Hourly min', stroke: 'transparent', spanGaps: true, value: (_u, v) => fmt(v), points: { show: false } },
      {
        label: 'Hourly avg',
        stroke: accent,
        width: 2,
        spanGaps: true,
        value: (_u, v) => fmt(v),
        // Each hour's average as a point too: a single hour draws no line.
        points: { show: true, size: 6, fill: accent, stroke: accent },
      },
      { label: 'Hourly max', stroke: 'transparent', spanGaps: true, value: (_u, v) => fmt(v), points: { show: false } },
      {
        label: 'Value',
        stroke: colour('--ink', '#0f172a'),
        width: 0,
        value: (_u, v) => fmt(v),
        points: { show: true, size: 4, fill: colour('--ink', '#0f172a'), stroke: colour('--ink', '#0f172a') },
        paths: () => null,
      },
    ],
    bands: [{ series: [3, 1], fill: band }],
  };
}

function widthOf(el) {
  return Math.max(240, Math.floor(el.getBoundingClientRect().width));
}

function draw(charts) {
  for (const chart of charts) {
    const el = document.querySelector(`.chart-canvas[data-sensor="${CSS.escape(chart.sensorName)}"]`);
    if (!el) continue;
    const data = aligned(chart);
    const hasData = data[0].length > 0;
    el.classList.toggle('is-empty', !hasData);
    let plot = plots.get(chart.sensorName);
    if (!plot) {
      plot = new uPlot(options(chart, widthOf(el)), data, el);
      plots.set(chart.sensorName, plot);
    } else {
      plot.setData(data);
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
        const el = document.querySelector(`.chart-canvas[data-sensor="${CSS.escape(sensor)}"]`);
        if (el) plot.setSize({ width: widthOf(el), height: 200 });
      }
    });
  });
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
