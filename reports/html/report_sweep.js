// report_sweep.js: a sweep's page of report.html (reports/html.cpp inlines it with report.js, in
// one function body: data, main, el, section, chart, table, fmt and the others are report.js's).
  function sweepReport() {
    const cols = data.columns;
    const rows = data.rows.map(r => { const o = {}; cols.forEach((c, i) => { o[c] = r[i]; }); return o; });
    const num = ['gpus', 'steady_iteration_time_s', 'exposed_communication_s', 'samples_per_s', 'tokens_per_s', 'scaling_efficiency_frac', 'bucket_cap_mb', 'point'];
    rows.forEach(r => {
      num.forEach(k => { r[k] = r[k] === '' || r[k] === undefined ? null : Number(r[k]); });
      r.steady_ms = r.steady_iteration_time_s === null ? null : 1e3 * r.steady_iteration_time_s;
      r.exposed_ms = r.exposed_communication_s === null ? null : 1e3 * r.exposed_communication_s;
      r.label = data.varied.map(k => k + '=' + r[k]).join(' ');
      // A point that does not fit the GPU's memory has times (what it would take if it fit) but no
      // throughput to plot or rank, as the table says (summary.csv keeps them beside status oom).
      if (r.status === 'oom') { r.samples_per_s = null; r.tokens_per_s = null; r.scaling_efficiency_frac = null; }
    });
    const ok = rows.filter(r => r.status !== 'skipped' && r.status !== 'failed');
    const seriesOf = x => r => [r.strategy.toUpperCase()].concat(data.varied.filter(k => k !== x && k !== 'strategy').map(k => k + '=' + r[k])).join(' ');
    // seriesOrder: the legend's order: by strategy, then each varied value, numbers as numbers
    // (5 before 25 before 100).
    const seriesOrder = (pts, x) => {
      const keys = data.varied.filter(k => k !== x && k !== 'strategy');
      const cmp = (a, b) => {
        if (a.strategy !== b.strategy) return a.strategy < b.strategy ? -1 : 1;
        for (const k of keys) {
          const na = Number(a[k]), nb = Number(b[k]);
          const c = !isNaN(na) && !isNaN(nb) ? na - nb : String(a[k]).localeCompare(String(b[k]));
          if (c !== 0) return c;
        }
        return 0;
      };
      const seen = new Map();
      pts.slice().sort(cmp).forEach(r => { if (!seen.has(r.series)) seen.set(r.series, true); });
      return Array.from(seen.keys());
    };

    const sc = section('Sweep', rows.length + ' points; varied: ' + data.varied.join(', ') + '.');
    headerLines(sc);
    rows.filter(r => r.status === 'skipped').forEach(r => sc.appendChild(el('p', 'point ' + r.point + ' (' + r.label + ', ' + r.strategy + ') not run: ' + r.skipped_reason, 'note')));
    rows.filter(r => r.status === 'failed').forEach(r => sc.appendChild(el('p', 'point ' + r.point + ' (' + r.label + ', ' + r.strategy + ') failed: ' + r.error, 'note')));
    rows.filter(r => r.status === 'oom').forEach(r => sc.appendChild(el('p', 'point ' + r.point + ' (' + r.label + ', ' + r.strategy + ') does not fit the GPU\'s memory (status oom): no samples/s is shown; the times are what it would take if it fit (summary.csv keeps them)', 'note')));

    // Scaling needs two GPU counts at least (a --vary gpus=2 of one value has nothing to scale).
    if (data.varied.indexOf('gpus') >= 0 && distinct(ok, 'gpus').length > 1) {
      const s = section('Scaling with GPU count', 'Throughput, and scaling efficiency: samples/s per GPU against the fewest GPUs of the same series.');
      const wrap = el('div', null, 'charts');
      s.appendChild(wrap);
      const series = seriesOf('gpus');
      const pts = ok.map(r => Object.assign({ series: series(r) }, r));
      const order = seriesOrder(pts, 'gpus');
      // Ideal scaling: each series' samples/s at its fewest GPUs, times the GPU count.
      const ideal = [];
      order.forEach(name => {
        const mine = pts.filter(r => r.series === name && r.samples_per_s !== null && r.gpus > 0);
        if (!mine.length) return;
        const base = mine.reduce((a, b) => (b.gpus < a.gpus ? b : a));
        distinct(mine, 'gpus').forEach(g => ideal.push({ series: name, gpus: g, samples_per_s: base.samples_per_s * g / base.gpus }));
      });
      const gx = { field: 'gpus', type: 'quantitative', title: 'GPUs', scale: { type: 'log', base: 2, nice: false }, axis: { values: distinct(pts, 'gpus'), format: 'd' } };
      chart(wrap, 'chart-throughput', {
        width: 480, height: 280,
        title: { text: 'samples/s (dashed: ideal scaling from the fewest GPUs)', fontSize: 12, fontWeight: 'normal' },
        layer: [
          {
            data: { values: ideal }, mark: { type: 'line', strokeDash: [4, 4], opacity: 0.6 },
            encoding: { x: gx, y: { field: 'samples_per_s', type: 'quantitative', title: 'samples/s' }, color: { field: 'series', type: 'nominal', title: null, sort: order } },
          },
          {
            data: { values: pts }, mark: { type: 'line', point: true },
            encoding: {
              x: gx, y: { field: 'samples_per_s', type: 'quantitative', title: 'samples/s' },
              color: { field: 'series', type: 'nominal', title: null, sort: order },
              tooltip: [{ field: 'label' }, { field: 'strategy' }, { field: 'samples_per_s', format: '.1f' }],
            },
          },
        ],
      });
      // Efficiency is against a series' fewest GPUs: a chart only where some point has one.
      const effs = pts.filter(r => r.scaling_efficiency_frac !== null);
      if (effs.length) chart(wrap, 'chart-efficiency', {
        width: 480, height: 280, data: { values: effs },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'gpus', type: 'quantitative', title: 'GPUs', scale: { type: 'log', base: 2, nice: false }, axis: { values: distinct(pts, 'gpus'), format: 'd' } },
          y: { field: 'scaling_efficiency_frac', type: 'quantitative', title: 'scaling efficiency', axis: { format: '%' } },
          color: { field: 'series', type: 'nominal', title: null, sort: order },
          tooltip: [{ field: 'label' }, { field: 'strategy' }, { field: 'scaling_efficiency_frac', format: '.1%' }],
        },
      });
    }
    if (data.varied.indexOf('bucket_cap_mb') >= 0) {
      const s = section('Step time against bucket size', 'DDP\'s bucket_cap_mb: small buckets pay per-collective latency, large ones start communicating late.');
      const series = seriesOf('bucket_cap_mb');
      const pts = ok.filter(r => r.strategy === 'ddp').map(r => Object.assign({ series: series(r) }, r));
      const order = seriesOrder(pts, 'bucket_cap_mb');
      const wrap = el('div', null, 'charts');
      s.appendChild(wrap);
      // A log axis, or a symmetric log one where bucket_cap_mb 0 (one bucket per gradient) is a point:
      // log(0) has no place on a log axis.
      const bucketScale = distinct(ok, 'bucket_cap_mb').some(v => !(v > 0))
        ? { type: 'symlog', constant: 1, nice: false } : { type: 'log', nice: false };
      // The y axes zoom to the data (not from 0): a 1 ms effect on an 86 ms step must show.
      [['chart-buckets', 'steady_ms', 'steady iteration (ms)'], ['chart-buckets-exposed', 'exposed_ms', 'exposed communication (ms)']].forEach(([id, field, title]) => {
        chart(wrap, id, {
          width: 420, height: 260, data: { values: pts },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'bucket_cap_mb', type: 'quantitative', title: 'bucket_cap_mb', scale: bucketScale, axis: { values: distinct(ok, 'bucket_cap_mb') } },
            y: { field: field, type: 'quantitative', title: title, scale: { zero: false, padding: 8 } },
            color: { field: 'series', type: 'nominal', title: null, sort: order },
            tooltip: [{ field: 'label' }, { field: field, format: '.3f' }],
          },
        });
      });
    }
    const all = section('Step time per point', 'Every point of the sweep.');
    chart(all, 'chart-points', {
      width: Math.min(1100, 40 + 28 * ok.length), height: 260, data: { values: ok },
      mark: 'bar',
      encoding: {
        x: { field: 'label', type: 'nominal', title: null, sort: null, axis: { labelAngle: -40, labelLimit: 240 } },
        xOffset: { field: 'strategy' },
        y: { field: 'steady_ms', type: 'quantitative', title: 'steady iteration (ms)' },
        color: { field: 'strategy', type: 'nominal', title: null },
        tooltip: [{ field: 'label' }, { field: 'strategy' }, { field: 'steady_ms', format: '.3f' }, { field: 'samples_per_s', format: '.1f' }],
      },
    });
    const tcols = [{ key: 'point', label: 'point' }]
      .concat(data.varied.filter(k => k !== 'strategy').map(k => ({ key: k, label: k, text: true })))
      .concat([
        { key: 'strategy', label: 'strategy', text: true }, { key: 'status', label: 'status', text: true },
        { key: 'gpus', label: 'GPUs' },
        { key: 'steady_ms', label: 'steady (ms)', format: v => fmt(v, 3) },
        { key: 'samples_per_s', label: 'samples/s', format: v => fmt(v, 1) },
        { key: 'scaling_efficiency_frac', label: 'efficiency', format: v => (v === null ? '-' : (100 * v).toFixed(1) + ' %') },
      ]);
    table(all, tcols, rows);
  }
