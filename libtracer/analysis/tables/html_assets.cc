// The stylesheet and script of the HTML report (html_render.h), written for
// it and inlined in every page: the page must open with no network.
#include <string_view>

#include "libtracer/analysis/tables/html_render.h"

namespace tracer::analysis {

std::string_view HtmlStyle() {
  return R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #222; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1em; }
h1 { font-size: 1.5em; margin: .6em 0 .2em; }
h2 { font-size: 1.25em; margin-top: 1.2em; }
h3 { font-size: 1.05em; margin: 1em 0 .3em; }
h3 small { color: #888; font-weight: normal; }
p.meta { margin: .1em 0; color: #555; font-family: monospace; }
nav { margin: .5em 0; }
nav a { margin-right: .8em; }
p.note { color: #555; font-size: 12px; margin: .2em 0; }
p.cap { color: #a40; }
.tw { overflow-x: auto; max-height: 32em; overflow-y: auto; border: 1px solid #ddd; }
table.data { border-collapse: collapse; font-size: 12px; }
table.data th { position: sticky; top: 0; background: #f3f3f3; cursor: pointer; }
table.data th, table.data td { padding: 2px 8px; border-bottom: 1px solid #eee;
  white-space: nowrap; max-width: 40em; overflow: hidden; text-overflow: ellipsis; }
table.data .n { text-align: right; font-variant-numeric: tabular-nums; }
section.chart { margin-bottom: 1.5em; }
.controls { font-size: 12px; margin: .2em 0; }
.controls label { margin-right: 1em; }
.plot { overflow-x: auto; }
.plot svg { display: block; font: 11px sans-serif; }
.plot svg text { fill: #333; }
#tip { position: absolute; display: none; pointer-events: none; background: #fffbe6;
  border: 1px solid #aa9; padding: 3px 6px; font: 12px monospace; white-space: pre;
  max-width: 60em; overflow: hidden; z-index: 10; }
)CSS";
}

std::string_view HtmlScript() {
  return R"JS(
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('tracer-data').textContent);
  var tables = {};
  data.tables.forEach(function (t) { tables[t.name] = t; });
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
                 '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  var PHASE_COLORS = { forward: '#4e79a7', backward: '#f28e2b', optimizer: '#59a14f',
                       other: '#bab0ac' };

  // As the text report prints durations (render.cc FormatDuration).
  function fmtDur(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return Math.round(ns) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(3) + ' us';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function col(t, name) {
    for (var i = 0; i < t.columns.length; i++) if (t.columns[i].name === name) return i;
    return -1;
  }
  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgText(parent, x, y, s, attrs) {
    var e = svgEl('text', attrs || {}, parent);
    e.setAttribute('x', x);
    e.setAttribute('y', y);
    e.textContent = s;
    return e;
  }
  function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }
  function plotWidth(box) { return Math.max(600, Math.min(1400, box.clientWidth || 1000)); }
  function num(v) { return typeof v === 'number' ? v : null; }
  function labelOf(t, row, cols) {
    return cols.map(function (c) { return row[c]; })
      .filter(function (v) { return v !== null && v !== ''; }).join(' / ');
  }
  function colorFor(name, i) { return PHASE_COLORS[name] || PALETTE[i % PALETTE.length]; }

  // A choice of mode (CPU / GPU) and of group (process), redrawing on change.
  function controls(box, chart, groups, draw) {
    var ctl = box.querySelector('.controls');
    var state = { mode: 0, group: groups.length ? groups[0] : null };
    if (chart.modes.length > 1) {
      chart.modes.forEach(function (m, i) {
        var l = document.createElement('label');
        var r = document.createElement('input');
        r.type = 'radio';
        r.name = 'mode-' + chart.id;
        r.checked = i === 0;
        r.addEventListener('change', function () { state.mode = i; draw(state); });
        l.appendChild(r);
        l.appendChild(document.createTextNode(' ' + m.title));
        ctl.appendChild(l);
      });
    }
    if (groups.length > 1) {
      var sel = document.createElement('select');
      groups.forEach(function (g) {
        var o = document.createElement('option');
        o.value = g;
        o.textContent = g;
        sel.appendChild(o);
      });
      sel.addEventListener('change', function () { state.group = sel.value; draw(state); });
      ctl.appendChild(sel);
    }
    draw(state);
  }
  function groupValues(t, chart) {
    var g = chart.group ? col(t, chart.group) : -1;
    if (g < 0) return [];
    var seen = [];
    t.rows.forEach(function (r) { if (seen.indexOf(r[g]) < 0) seen.push(r[g]); });
    return seen;
  }
  function rowsOf(t, chart, state) {
    var g = chart.group ? col(t, chart.group) : -1;
    return t.rows.filter(function (r) { return g < 0 || state.group === null || r[g] === state.group; });
  }
  function legend(svg, x, y, items) {
    items.forEach(function (it, i) {
      svgEl('rect', { x: x, y: y + i * 16, width: 10, height: 10, fill: it.color }, svg);
      svgText(svg, x + 14, y + i * 16 + 9, it.title);
    });
  }
  function axis(svg, x0, y, w, max) {
    for (var i = 0; i <= 4; i++) {
      var x = x0 + w * i / 4;
      svgEl('line', { x1: x, x2: x, y1: y, y2: y + 4, stroke: '#999' }, svg);
      svgText(svg, x, y + 15, fmtDur(max * i / 4), { 'text-anchor': 'middle' });
    }
  }

  // Horizontal bars: one row per label, one bar per series of the mode.
  function drawBars(box, chart, t) {
    var plot = box.querySelector('.plot');
    var mode = chart.modes[0];
    var series = mode.series.map(function (s) { return { s: s, c: col(t, s.column) }; })
      .filter(function (x) { return x.c >= 0; });
    var labels = chart.label.map(function (c) { return col(t, c); }).filter(function (c) { return c >= 0; });
    var rows = t.rows.slice(0, chart.limit || t.rows.length);
    var max = 0;
    rows.forEach(function (r) { series.forEach(function (x) { max = Math.max(max, num(r[x.c]) || 0); }); });
    var W = plotWidth(plot), left = 260, right = 90, bh = 9, rowH = series.length * bh + 6;
    var H = 30 + rows.length * rowH + 24;
    var svg = svgEl('svg', { width: W, height: H, 'class': 'bars' }, plot);
    series.forEach(function (x, i) {
      svgEl('rect', { x: left + i * 150, y: 4, width: 10, height: 10, fill: PALETTE[i] }, svg);
      svgText(svg, left + i * 150 + 14, 13, x.s.title);
    });
    var scale = max > 0 ? (W - left - right) / max : 0;
    rows.forEach(function (r, i) {
      var y = 24 + i * rowH;
      var name = labelOf(t, r, labels);
      svgText(svg, left - 6, y + rowH / 2 + 3, cut(name, 42), { 'text-anchor': 'end' });
      series.forEach(function (x, k) {
        var v = num(r[x.c]);
        if (v === null) return;
        var bar = svgEl('rect', { x: left, y: y + k * bh, width: Math.max(1, v * scale),
                                  height: bh - 1, fill: PALETTE[k], 'class': 'bar',
                                  'data-label': name, 'data-series': x.s.column, 'data-ns': v,
                                  'data-tip': name + '\n' + x.s.title + ': ' + fmtDur(v) }, svg);
        svgText(svg, left + Math.max(1, v * scale) + 4, y + k * bh + bh - 1, fmtDur(v),
                { 'font-size': '9' });
        return bar;
      });
    });
    axis(svg, left, H - 22, W - left - right, max);
  }

  // Stacked columns: one per row (step), the series of the chosen mode.
  function drawStack(box, chart, t) {
    var plot = box.querySelector('.plot');
    var labels = chart.label.map(function (c) { return col(t, c); });
    controls(box, chart, groupValues(t, chart), function (state) {
      plot.textContent = '';
      var mode = chart.modes[state.mode];
      var series = mode.series.map(function (s) { return { s: s, c: col(t, s.column) }; })
        .filter(function (x) { return x.c >= 0; });
      var rows = rowsOf(t, chart, state).filter(function (r) {
        return labelOf(t, r, labels) !== chart.skip;
      }).slice(0, chart.limit || 100000);
      var max = 0;
      rows.forEach(function (r) {
        var s = 0;
        series.forEach(function (x) { s += num(r[x.c]) || 0; });
        max = Math.max(max, s);
      });
      var W = plotWidth(plot), left = 80, top = 10, h = 260;
      var legendW = 140, band = Math.max(2, Math.min(40, (W - left - legendW) / Math.max(1, rows.length)));
      // Many steps: 2 px each, the plot scrolls sideways.
      W = Math.max(W, left + band * rows.length + legendW);
      var svg = svgEl('svg', { width: W, height: top + h + 40, 'class': 'stack' }, plot);
      for (var i = 0; i <= 4; i++) {
        var y = top + h - h * i / 4;
        svgEl('line', { x1: left - 4, x2: left + band * rows.length, y1: y, y2: y, stroke: '#eee' }, svg);
        svgText(svg, left - 6, y + 4, fmtDur(max * i / 4), { 'text-anchor': 'end' });
      }
      var scale = max > 0 ? h / max : 0;
      rows.forEach(function (r, i) {
        var label = labelOf(t, r, labels), y = top + h, total = 0;
        series.forEach(function (x) { total += num(r[x.c]) || 0; });
        series.forEach(function (x, k) {
          var v = num(r[x.c]);
          if (v === null) return;
          var hh = v * scale;
          y -= hh;
          svgEl('rect', { x: left + i * band, y: y, width: Math.max(1, band - 1), height: hh,
                          fill: colorFor(x.s.title, k), 'class': 'seg', 'data-label': label,
                          'data-series': x.s.column, 'data-ns': v,
                          'data-tip': 'step ' + label + '\n' + x.s.title + ': ' + fmtDur(v) +
                            (total > 0 ? ' (' + (100 * v / total).toFixed(1) + '%)' : '') }, svg);
        });
        if (band >= 14 || i % Math.ceil(14 / band) === 0) {
          svgText(svg, left + i * band + band / 2, top + h + 14, label, { 'text-anchor': 'middle' });
        }
      });
      svgText(svg, left, top + h + 32, 'step');
      legend(svg, W - legendW + 10, top, series.map(function (x, k) {
        return { title: x.s.title, color: colorFor(x.s.title, k) };
      }));
    });
  }

  // A flame graph of one step: the timeline table's ranges, x by start
  // offset and CPU duration, y by depth, one block of rows per thread.
  function drawFlame(box, chart, t) {
    var plot = box.querySelector('.plot');
    var c = { index: col(t, 'index'), depth: col(t, 'depth'), range: col(t, 'range'), thread: col(t, 'thread'),
              start: col(t, 'start_offset_ns'), cpu: col(t, 'cpu_ns'), gpu: col(t, 'gpu_proj_ns') };
    var view = null;
    var ctlState = null;
    function draw(state) {
      ctlState = state;
      plot.textContent = '';
      var rows = rowsOf(t, chart, state);
      if (!rows.length) return;
      var step = rows[0], stepNs = num(step[c.cpu]) || 1;
      var v0 = view ? view[0] : 0, v1 = view ? view[1] : stepNs;
      var threads = [], maxDepth = {}, minDepth = {};
      rows.forEach(function (r) {
        var th = r[c.thread];
        if (threads.indexOf(th) < 0) threads.push(th);
        maxDepth[th] = Math.max(maxDepth[th] === undefined ? 0 : maxDepth[th], r[c.depth]);
        minDepth[th] = Math.min(minDepth[th] === undefined ? 1e9 : minDepth[th], r[c.depth]);
      });
      var base = {}, lanes = 0;
      threads.forEach(function (th) { base[th] = lanes; lanes += maxDepth[th] - minDepth[th] + 1; });
      var W = plotWidth(plot), left = 110, rh = 17, top = 22;
      var H = top + lanes * rh + 30;
      var svg = svgEl('svg', { width: W, height: H, 'class': 'flame' }, plot);
      var scale = (W - left - 10) / Math.max(1, v1 - v0);
      svgText(svg, left, 14, view ? 'zoomed: ' + fmtDur(v0) + ' .. ' + fmtDur(v1) +
              ' (click the background to zoom out)' : 'click a range to zoom in');
      threads.forEach(function (th) {
        svgText(svg, left - 6, top + base[th] * rh + 12, cut(String(th), 17), { 'text-anchor': 'end' });
        svgEl('line', { x1: left, x2: W - 10, y1: top + base[th] * rh - 1, y2: top + base[th] * rh - 1,
                        stroke: '#ddd' }, svg);
      });
      var bg = svgEl('rect', { x: left, y: top, width: W - left - 10, height: lanes * rh,
                               fill: 'transparent' }, svg);
      bg.addEventListener('click', function () { view = null; draw(ctlState); });
      rows.forEach(function (r, i) {
        var s = num(r[c.start]) || 0, d = num(r[c.cpu]) || 0;
        if (s + d < v0 || s > v1) return;
        var a = Math.max(s, v0), b = Math.min(s + d, v1);
        var x = left + (a - v0) * scale, w = Math.max(0.5, (b - a) * scale);
        var th = r[c.thread], y = top + (base[th] + r[c.depth] - minDepth[th]) * rh;
        var name = String(r[c.range]).replace(new RegExp('^ {0,' + 2 * r[c.depth] + '}'), '');
        var gpu = c.gpu >= 0 ? num(r[c.gpu]) : null;
        var tipText = name + '\nCPU ' + fmtDur(d) + ' (' + (100 * d / stepNs).toFixed(1) +
          '% of the step)\nstart +' + fmtDur(s) + (gpu !== null ? '\nGPU projected ' + fmtDur(gpu) : '') +
          '\nthread ' + th;
        var g = svgEl('g', { 'class': 'frame', 'data-tip': tipText, 'data-label': name,
                             'data-ns': d, 'data-index': r[c.index] }, svg);
        svgEl('rect', { x: x, y: y, width: w, height: rh - 2,
                        fill: PALETTE[(r[c.depth] + (name.length % 3)) % PALETTE.length],
                        stroke: '#fff', 'stroke-width': 0.5 }, g);
        if (w > 40) {
          svgText(g, x + 3, y + 11, cut(name, Math.floor(w / 6.5)), { fill: '#fff' });
        }
        g.addEventListener('click', function (ev) {
          ev.stopPropagation();
          view = [s, s + Math.max(d, 1)];
          draw(ctlState);
        });
      });
    }
    controls(box, chart, groupValues(t, chart), draw);
  }

  // Cross-rank spread: per row, min .. max across processes, the median
  // marked, the slowest process named.
  function drawSpread(box, chart, t) {
    var plot = box.querySelector('.plot');
    var labels = chart.label.map(function (c) { return col(t, c); });
    controls(box, chart, [], function (state) {
      plot.textContent = '';
      var s = chart.modes[state.mode].series.map(function (x) { return col(t, x.column); });
      var rows = t.rows.filter(function (r) { return num(r[s[2]]) !== null; })
        .slice(0, chart.limit || 100000);
      var max = 0;
      rows.forEach(function (r) { max = Math.max(max, num(r[s[2]])); });
      var W = plotWidth(plot), left = 300, right = 150, rh = 16, top = 10;
      var H = top + rows.length * rh + 30;
      var svg = svgEl('svg', { width: W, height: H, 'class': 'spread' }, plot);
      var scale = max > 0 ? (W - left - right) / max : 0;
      rows.forEach(function (r, i) {
        var y = top + i * rh + rh / 2, label = labelOf(t, r, labels);
        var lo = num(r[s[0]]), med = num(r[s[1]]), hi = num(r[s[2]]), slow = r[s[3]];
        svgText(svg, left - 6, y + 4, cut(label, 48), { 'text-anchor': 'end' });
        var g = svgEl('g', { 'class': 'spread-row', 'data-label': label, 'data-min': lo,
                             'data-median': med, 'data-max': hi,
                             'data-tip': label + '\nmin ' + fmtDur(lo) + '  median ' + fmtDur(med) +
                               '  max ' + fmtDur(hi) + '\nslowest: ' + slow }, svg);
        svgEl('rect', { x: left, y: y - rh / 2, width: W - left - right, height: rh,
                        fill: i % 2 ? '#fafafa' : '#fff' }, g);
        svgEl('line', { x1: left + lo * scale, x2: left + Math.max(hi * scale, lo * scale + 1),
                        y1: y, y2: y, stroke: '#4e79a7', 'stroke-width': 4 }, g);
        svgEl('line', { x1: left + med * scale, x2: left + med * scale, y1: y - 6, y2: y + 6,
                        stroke: '#222', 'stroke-width': 2 }, g);
        svgEl('circle', { cx: left + hi * scale, cy: y, r: 4, fill: '#e15759' }, g);
        svgText(g, W - right + 6, y + 4, cut(String(slow), 24), { fill: '#e15759' });
      });
      axis(svg, left, H - 24, W - left - right, max);
    });
  }

  var DRAW = { bars: drawBars, stack: drawStack, flame: drawFlame, spread: drawSpread };
  data.charts.forEach(function (chart) {
    var box = document.getElementById('chart-' + chart.id);
    var t = tables[chart.table];
    if (box && t && DRAW[chart.kind]) DRAW[chart.kind](box, chart, t);
  });

  // Tooltips: any element with data-tip (or inside one).
  var tip = document.getElementById('tip');
  document.addEventListener('mousemove', function (ev) {
    var e = ev.target && ev.target.closest ? ev.target.closest('[data-tip]') : null;
    if (!e) { tip.style.display = 'none'; return; }
    tip.textContent = e.getAttribute('data-tip');
    tip.style.display = 'block';
    tip.style.left = (ev.pageX + 12) + 'px';
    tip.style.top = (ev.pageY + 12) + 'px';
  });

  // Sortable tables: by the raw value (data-v) of numeric columns.
  Array.prototype.forEach.call(document.querySelectorAll('table.data'), function (table) {
    Array.prototype.forEach.call(table.querySelectorAll('th'), function (th, i) {
      var asc = false;
      th.addEventListener('click', function () {
        var numeric = th.getAttribute('data-kind') !== 'text';
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        asc = !asc;
        rows.sort(function (a, b) {
          var x = a.cells[i], y = b.cells[i], r;
          if (numeric) {
            var vx = x.hasAttribute('data-v') ? +x.getAttribute('data-v') : -Infinity;
            var vy = y.hasAttribute('data-v') ? +y.getAttribute('data-v') : -Infinity;
            r = vx < vy ? -1 : vx > vy ? 1 : 0;
          } else {
            r = x.textContent.localeCompare(y.textContent);
          }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
)JS";
}

}  // namespace tracer::analysis
