// report.js: draws report.html from the JSON in #gradsync-data with Vega-Lite (compiled into
// gradsync, inlined into the page). Every string from the data is shown with textContent or
// inside a chart, never parsed as HTML. When every chart has drawn, #gradsync-selftest holds
// {"charts": [{"id", "marks"}], "problems": [...]} for the browser test. reports/html.cpp inlines
// this file and report_sweep.js (a sweep's page) as one function body: 'use strict' and the
// helpers below are theirs alike.
  const data = JSON.parse(document.getElementById('gradsync-data').textContent);
  // A timeline comes in columns, its names and kinds once each (reports/html.cpp); Vega-Lite
  // wants one object per event.
  (data.strategies || []).forEach(s => {
    const t = s.timeline;
    if (!t || Array.isArray(t)) return;
    s.timeline = t.rank.map((rank, i) => {
      const e = {
        rank, lane: 'GPU ' + rank + ' ' + t.lanes[t.lane[i]], name: t.names[t.name[i]], kind: t.kinds[t.kind[i]],
        start_ms: t.start_ms[i], end_ms: t.end_ms[i], bytes: t.bytes[i],
      };
      if (t.bucket[i] >= 0) e.bucket = t.bucket[i];
      return e;
    });
  });
  const main = document.getElementById('report');
  const charts = [];
  const colors = {
    forward: '#4e79a7', backward: '#2f5d8a', optimizer: '#76b7b2', 'other compute': '#9fb3c8',
    allreduce: '#e15759', collective: '#f28e2b', 'bucket copy': '#edc948', copy: '#b07aa1',
    'host work': '#8c6d31', 'collective call': '#d4a6c8',
  };
  const partColors = { compute: '#4e79a7', 'exposed communication': '#e15759', other: '#bab0ac' };

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function section(title, note) {
    const s = el('section');
    s.appendChild(el('h2', title));
    if (note) s.appendChild(el('p', note, 'note'));
    main.appendChild(s);
    return s;
  }
  function chart(parent, id, spec) {
    const div = el('div');
    div.id = id;
    parent.appendChild(div);
    spec.$schema = 'https://vega.github.io/schema/vega-lite/v6.json';
    spec.config = Object.assign({ font: 'system-ui, DejaVu Sans, sans-serif', view: { stroke: null } }, spec.config || {});
    charts.push({ id: id, promise: vegaEmbed(div, spec, { actions: false, renderer: 'svg' }) });
  }
  function table(parent, columns, rows) {
    const wrap = el('div', null, 'scroll');
    const t = el('table');
    const head = el('tr');
    columns.forEach(c => head.appendChild(el('th', c.label, c.text ? 'text' : '')));
    t.appendChild(head);
    rows.forEach(r => {
      const tr = el('tr');
      columns.forEach(c => tr.appendChild(el('td', c.format ? c.format(r[c.key]) : r[c.key], c.text ? 'text' : '')));
      t.appendChild(tr);
    });
    wrap.appendChild(t);
    parent.appendChild(wrap);
  }
  const distinct = (rows, k) => Array.from(new Set(rows.map(r => r[k]).filter(v => v !== null))).sort((a, b) => a - b);
  const fmt = (v, d) => (v === null || v === undefined || v === '' ? '-' : Number(v).toFixed(d));
  function bytes(b) {
    b = Number(b);
    if (b >= 1e9) return (b / 1e9).toFixed(2) + ' GB';
    if (b >= 1e6) return (b / 1e6).toFixed(1) + ' MB';
    if (b >= 1e3) return (b / 1e3).toFixed(1) + ' kB';
    return b.toFixed(0) + ' B';
  }

  function headerLines(parent) {
    if (data.header && data.header.length) parent.appendChild(el('pre', data.header.join('\n'), 'header-lines'));
  }

  // confidenceLines: how far gradsync has been from published measurements in each strategy's class.
  function confidenceLines(parent, rows, unfit) {
    parent.appendChild(el('h3', 'How sure'));
    const pct = v => (100 * v).toFixed(1) + '%';
    const measured = c => {
      const n = c.part === 'communication' ? c.points : c.cases;
      const what = c.part === 'communication' ? 'nccl-tests point' : 'step';
      const f = c.predicted_faster_points;
      const way = f === 0 ? 'slower than measured' + (n === 1 ? '' : ' in every one')
        : f === n ? 'faster than measured' + (n === 1 ? '' : ' in every one') : 'faster than measured in ' + f + ' of ' + n;
      if (n === 1) return '±' + pct(c.median_abs_error_frac) + ' (the error on the one published ' + what + ' of class "' + c['class'] + '", ' + c.worst_case + '; predicted ' + way + ')';
      // Every published case one way: said as the way the real time goes, as the terminal says it.
      const spread = f === n ? 'likely short of the real time by ' : f === 0 ? 'likely over the real time by ' : '±';
      return spread + pct(c.median_abs_error_frac) + ' (median error; worst ' + pct(c.worst_abs_error_frac) + ', ' + c.worst_case + ') over ' +
        n + ' published ' + what + 's of class "' + c['class'] + '"; predicted ' + way;
    };
    const ul = el('ul', null, 'confidence');
    rows.forEach(c => {
      const who = c.strategy.toUpperCase();
      if ((unfit || []).includes(c.strategy)) {
        if (c.part === 'step') ul.appendChild(el('li', who + ': does not fit the GPU\'s memory, so no time to be sure of'));
        return;
      }
      if (c.part === 'step') {
        ul.appendChild(el('li', c.cases > 0 ? who + ': ' + measured(c) : who + ': no published step of class "' + c['class'] + '" in gradsync\'s validation tables' +
          (rows.some(o => o.strategy === c.strategy && o.part !== 'step') ? '; its parts:' : '')));
      } else {
        ul.appendChild(el('li', c.cases > 0 ? who + ' ' + c.part + ': ' + measured(c) : who + ' ' + c.part + ': no published case of class "' + c['class'] + '"', 'part'));
      }
    });
    parent.appendChild(ul);
  }

  // adviceTable: the changes worth making (result.json's advice), each simulated, the best first.
  function adviceTable(parent, a) {
    const shown = a.changes.filter(c => c.advised);
    const ran = a.changes.filter(c => c.status === 'ok' || c.status === 'oom').length;
    const late = a.changes.filter(c => c.status === 'budget').map(c => c.change);
    const pct = (100 * a.min_gain_frac).toFixed(0);
    parent.appendChild(el('h3', 'What to change'));
    let verdict;
    if (shown.length) {
      verdict = a.oom ? 'The run does not fit the GPU\'s memory; the changes that make it fit, by samples/s:'
        : 'The best by samples/s, each gaining ' + pct + '% or more:';
    } else if (a.oom) {
      verdict = 'No change simulated makes the run fit the GPU\'s memory.';
    } else if (!ran) {
      verdict = 'Nothing was simulated within the budget.';
    } else {
      verdict = 'None of the ' + ran + ' simulated gains ' + pct + '% or more samples/s' + (late.length ? '.' : ': keep the run as it is.');
    }
    parent.appendChild(el('p', ran + ' of ' + a.changes.length + ' changes to the ' + a.strategy.toUpperCase() +
      ' run simulated, each on its own' + (a.budget_s === null ? '' : ' (budget ' + a.budget_s + ' s)') + '. ' + verdict, 'note'));
    if (late.length) parent.appendChild(el('p', 'Not simulated within the budget (raise --advice-budget): ' + late.join(', ') + '.', 'note'));
    if (!shown.length) return;
    table(parent, [
      { key: 'change', label: 'change', text: true },
      { key: 'steady_s', label: 'steady (ms)', format: v => fmt(1e3 * v, 2) },
      { key: 'samples_per_s', label: 'samples/s', format: v => fmt(v, 1) },
      { key: 'gain_frac', label: 'gain', format: v => (v >= 0 ? '+' : '') + fmt(100 * v, 1) + ' %' },
      { key: 'alters_maths', label: 'training maths', text: true, format: v => (v ? 'changed: ' + v : 'same') },
      { key: 'pytorch', label: 'in the script', text: true },
    ], shown);
    parent.lastChild.classList.add('wrap');
  }

  function scenarioReport() {
    const ran = data.strategies.filter(s => !s.skipped);
    const byName = {};
    data.strategies.forEach(s => { byName[s.strategy] = s; });

    // The first screen: the answer (DP against DDP), what to change, then the scenario.
    const an = section('Answer', null);
    // A strategy that does not fit the GPU's memory has no speed to compare (as the table says).
    const fits = s => !s.per_gpu.some(g => g.oom);
    if (byName.dp && byName.ddp && !byName.dp.skipped && !byName.ddp.skipped && fits(byName.dp) && fits(byName.ddp)) {
      const x = byName.dp.steady_ms / byName.ddp.steady_ms;
      const p = el('p', null, 'headline');
      p.appendChild(document.createTextNode('DDP is '));
      p.appendChild(el('b', (x >= 1 ? x : 1 / x).toFixed(2) + 'x ' + (x >= 1 ? 'faster' : 'slower')));
      p.appendChild(document.createTextNode(' than DP: ' + byName.ddp.steady_ms.toFixed(1) + ' ms against ' + byName.dp.steady_ms.toFixed(1) + ' ms per step.'));
      an.appendChild(p);
    } else {
      ran.filter(fits).forEach(s => an.appendChild(el('p', s.strategy.toUpperCase() + ': ' + s.steady_ms.toFixed(1) + ' ms per step, ' + s.samples_per_s.toFixed(1) + ' samples/s.', 'headline')));
    }
    const oom = ran.filter(s => s.per_gpu.some(g => g.oom));
    if (oom.length) {
      const GiB = 1024 * 1024 * 1024;
      oom.forEach(s => {
        const g = s.per_gpu.reduce((a, b) => (b.peak_memory_bytes > a.peak_memory_bytes ? b : a));
        an.appendChild(el('p', s.strategy.toUpperCase() + ' does not fit: GPU ' + g.gpu + ' needs ' + (g.peak_memory_bytes / GiB).toFixed(1) +
          ' GiB of its ' + (g.capacity_bytes / GiB).toFixed(1) + ' GiB (out of memory).', 'headline oom'));
      });
    }
    if (data.confidence) confidenceLines(an, data.confidence, oom.map(s => s.strategy));
    if (data.advice) adviceTable(an, data.advice);

    const sc = section('Scenario', 'The model, the cluster and the options of this ' + data.mode + ' run, every default resolved.');
    const requested = data.requested || {};
    table(sc, [{ key: 'k', label: 'key', text: true }, { key: 'v', label: 'value', text: true }, { key: 'r', label: 'asked', text: true }],
      Object.keys(data.scenario).map(k => {
        const v = data.scenario[k];
        const r = Object.prototype.hasOwnProperty.call(requested, k) ? String(requested[k]) : '';
        return { k: k, v: v === null ? 'none' : String(v), r: r };
      }));
    headerLines(sc);
    data.strategies.filter(s => s.skipped).forEach(s => sc.appendChild(el('p', s.strategy.toUpperCase() + ' not run: ' + s.skipped, 'note')));

    const st = section('Step time', 'Mean steady iteration, split into compute (the compute stream busy), exposed communication (communication not hidden behind compute) and the rest (host work, waiting).');
    const parts = [];
    ran.forEach(s => {
      parts.push({ strategy: s.strategy.toUpperCase(), part: 'compute', ms: s.compute_ms, order: 0 });
      parts.push({ strategy: s.strategy.toUpperCase(), part: 'exposed communication', ms: s.exposed_ms, order: 1 });
      parts.push({ strategy: s.strategy.toUpperCase(), part: 'other', ms: s.other_ms, order: 2 });
    });
    chart(st, 'chart-step', {
      width: 720, height: { step: 36 }, data: { values: parts },
      mark: { type: 'bar' },
      encoding: {
        y: { field: 'strategy', type: 'nominal', title: null },
        x: { field: 'ms', type: 'quantitative', stack: 'zero', title: 'steady iteration (ms)' },
        color: { field: 'part', type: 'nominal', title: null, scale: { domain: Object.keys(partColors), range: Object.values(partColors) } },
        order: { field: 'order' },
        tooltip: [{ field: 'strategy' }, { field: 'part' }, { field: 'ms', format: '.3f' }],
      },
    });
    table(st, [
      { key: 'strategy', label: 'strategy', text: true, format: v => v.toUpperCase() },
      { key: 'iteration_1_ms', label: 'iteration 1 (ms)', format: v => fmt(v, 2) },
      { key: 'steady_ms', label: 'steady (ms)', format: v => fmt(v, 2) },
      { key: 'compute_ms', label: 'compute (ms)', format: v => fmt(v, 2) },
      { key: 'communication_ms', label: 'communication (ms)', format: v => fmt(v, 2) },
      { key: 'exposed_ms', label: 'exposed (ms)', format: v => fmt(v, 2) },
      { key: 'overlap', label: 'overlap', format: v => fmt(100 * v, 1) + ' %' },
      { key: 'samples_per_s', label: 'samples/s', format: v => fmt(v, 1) },
      { key: 'tokens_per_s', label: 'tokens/s', format: v => fmt(v, 0) },
    ], ran);

    // One x scale for every timeline: the longest steady iteration drawn.
    const span = Math.max.apply(null, ran.map(s => Math.max(s.steady_ms, ...s.timeline.map(e => e.end_ms))));
    ran.forEach(s => {
      const lanes = [];
      const hosts = new Set(s.timeline.filter(e => e.kind === 'host work' || e.kind === 'collective call').map(e => e.rank));
      s.timeline_ranks.forEach(r => {
        if (hosts.has(r)) lanes.push('GPU ' + r + ' host');
        lanes.push('GPU ' + r + ' compute', 'GPU ' + r + ' comm');
      });
      const shown = s.timeline_ranks.length;
      const tl = section(s.strategy.toUpperCase() + ': one steady iteration (' + s.iteration + ')',
        'Each GPU has a compute lane and a communication lane (collectives and copies); a host lane holds the ' +
        'host thread\'s work under the GIL and its collective calls. ' +
        (s.gpus > shown ? shown + ' of ' + s.gpus + ' GPUs: node 0, the slowest GPU of each phase and the first GPU of other nodes (the trace file holds more). ' : '') +
        'Allreduce buckets are labelled b<k> where the bar has room. The timelines share one time axis. Hover for names and bytes.');
      chart(tl, 'chart-timeline-' + s.strategy, {
        width: 1100, height: { step: 16 }, data: { values: s.timeline },
        layer: [
          {
            mark: { type: 'bar', cornerRadius: 1 },
            encoding: {
              y: { field: 'lane', type: 'nominal', sort: lanes, title: null, scale: { domain: lanes } },
              x: { field: 'start_ms', type: 'quantitative', title: 'ms since the iteration started', scale: { domain: [0, span], nice: false } },
              x2: { field: 'end_ms' },
              color: { field: 'kind', type: 'nominal', title: null, scale: { domain: Object.keys(colors), range: Object.values(colors) } },
              tooltip: [{ field: 'name' }, { field: 'bytes', format: ',' }, { field: 'start_ms', format: '.3f' }, { field: 'end_ms', format: '.3f' }],
            },
          },
          {
            // A label only where its bar is wide enough for it (4% of the axis: 44 px of 1100), so
            // that labels never overlap.
            transform: [{ filter: "datum.kind === 'allreduce' && isValid(datum.bucket) && datum.end_ms - datum.start_ms >= " + (0.04 * span) }, { calculate: '(datum.start_ms + datum.end_ms) / 2', as: 'mid' }, { calculate: "'b' + datum.bucket", as: 'label' }],
            mark: { type: 'text', fontSize: 9, color: '#222' },
            encoding: {
              y: { field: 'lane', type: 'nominal', sort: lanes },
              x: { field: 'mid', type: 'quantitative', scale: { domain: [0, span], nice: false } },
              text: { field: 'label' },
            },
          },
        ],
      });
    });

    const by = section('Bytes in and out per GPU', 'Payload per steady iteration. DataParallel funnels the batch, the outputs and the gradients through GPU0; DDP spreads them evenly.');
    const wrap = el('div', null, 'charts');
    by.appendChild(wrap);
    ran.forEach(s => {
      const rows = [];
      s.per_gpu.forEach(g => {
        rows.push({ gpu: 'GPU ' + g.gpu, idx: g.gpu, direction: 'in', bytes: g.bytes_in });
        rows.push({ gpu: 'GPU ' + g.gpu, idx: g.gpu, direction: 'out', bytes: g.bytes_out });
      });
      chart(wrap, 'chart-bytes-' + s.strategy, {
        title: s.strategy.toUpperCase(), width: 420, height: 220, data: { values: rows },
        mark: 'bar',
        encoding: {
          x: { field: 'idx', type: 'ordinal', title: 'GPU' },
          xOffset: { field: 'direction' },
          y: { field: 'bytes', type: 'quantitative', title: 'bytes per iteration', axis: { format: '~s' } },
          color: { field: 'direction', type: 'nominal', scale: { range: ['#e15759', '#4e79a7'] } },
          tooltip: [{ field: 'gpu' }, { field: 'direction' }, { field: 'bytes', format: ',.0f' }],
        },
      });
    });

    const li = section('Busiest links', 'Each direction of a link (NICs and switch ports included), the busiest on average first: average = wire bytes per steady iteration over its bandwidth times the iteration time; peak = the highest share during one collective call or phase of copies (its bytes over bandwidth times the call\'s span).');
    ran.filter(s => s.links.length).forEach(s => {
      const rows = [];
      s.links.slice(0, 10).forEach((l, i) => {
        rows.push({ link: l.link, order: i, measure: 'average', pct: 100 * l.utilisation, bytes: l.bytes, at: '' });
        rows.push({ link: l.link, order: i, measure: 'peak', pct: 100 * l.peak_utilisation, bytes: l.bytes, at: l.peak_event });
      });
      chart(li, 'chart-links-' + s.strategy, {
        title: s.strategy.toUpperCase(), width: 520, height: { step: 14 }, data: { values: rows },
        mark: 'bar',
        encoding: {
          y: { field: 'link', type: 'nominal', sort: { field: 'order' }, title: null, axis: { labelLimit: 420 } },
          yOffset: { field: 'measure' },
          x: { field: 'pct', type: 'quantitative', title: 'utilisation (%)' },
          color: { field: 'measure', type: 'nominal', title: null, scale: { domain: ['average', 'peak'], range: ['#f28e2b', '#b6462a'] } },
          tooltip: [{ field: 'link' }, { field: 'measure' }, { field: 'pct', format: '.1f' }, { field: 'at', title: 'during' }, { field: 'bytes', format: ',.0f' }],
        },
      });
    });

    const ex = section('Phase by phase (--explain)', 'The last iteration: where each phase runs, the payload it moves and how long any GPU works on it.');
    ran.forEach(s => {
      ex.appendChild(el('h3', s.strategy.toUpperCase()));
      table(ex, [
        { key: 'phase', label: 'phase', text: true }, { key: 'where', label: 'where', text: true },
        { key: 'gpu0_in', label: 'GPU0 in' }, { key: 'gpu0_out', label: 'GPU0 out' },
        { key: 'other_in', label: 'in per other GPU' }, { key: 'other_out', label: 'out per other GPU' },
        { key: 'time_ms', label: 'time (ms)', format: v => fmt(v, 3) },
      ], s.explain);
    });

    if (data.validation) {
      const va = section('Measured against simulated', 'gradsync validate: the real run beside the simulation with the calibration, per steady iteration on rank 0 and per iteration; error = (simulated - measured) / measured.');
      const steady = data.validation.filter(r => r.scope === 'steady');
      const vrows = [];
      steady.forEach(r => {
        vrows.push({ phase: r.strategy + ' ' + r.phase, source: 'measured', ms: r.measured_s * 1e3 });
        vrows.push({ phase: r.strategy + ' ' + r.phase, source: 'simulated', ms: r.simulated_s * 1e3 });
      });
      chart(va, 'chart-validation', {
        width: 640, height: { step: 12 }, data: { values: vrows },
        mark: 'bar',
        encoding: {
          y: { field: 'phase', type: 'nominal', sort: null, title: null },
          yOffset: { field: 'source' },
          x: { field: 'ms', type: 'quantitative', title: 'ms per steady iteration' },
          color: { field: 'source', type: 'nominal', title: null, scale: { domain: ['measured', 'simulated'], range: ['#4e79a7', '#f28e2b'] } },
          tooltip: [{ field: 'phase' }, { field: 'source' }, { field: 'ms', format: '.3f' }],
        },
      });
      table(va, [
        { key: 'strategy', label: 'strategy', text: true }, { key: 'scope', label: 'scope', text: true },
        { key: 'phase', label: 'phase', text: true },
        { key: 'measured_s', label: 'measured (ms)', format: v => fmt(v * 1e3, 3) },
        { key: 'simulated_s', label: 'simulated (ms)', format: v => fmt(v * 1e3, 3) },
        { key: 'error', label: 'error (%)', format: v => fmt(v * 100, 1) },
      ], data.validation);
    }

    const me = section('Memory per GPU', 'Peak memory (parameters, gradients, optimizer state, activations, CUDA context) against the GPU\'s capacity.');
    const mwrap = el('div', null, 'charts');
    me.appendChild(mwrap);
    ran.forEach(s => {
      const GiB = 1024 * 1024 * 1024;
      const rows = s.per_gpu.map(g => ({ gpu: 'GPU ' + g.gpu, idx: g.gpu, GiB: g.peak_memory_bytes / GiB, capacity: g.capacity_bytes / GiB, fits: g.oom ? 'out of memory' : 'fits' }));
      chart(mwrap, 'chart-memory-' + s.strategy, {
        title: s.strategy.toUpperCase(), width: 420, height: 220, data: { values: rows },
        layer: [
          {
            mark: 'bar',
            encoding: {
              x: { field: 'idx', type: 'ordinal', title: 'GPU' },
              y: { field: 'GiB', type: 'quantitative', title: 'peak memory (GiB)' },
              color: { field: 'fits', type: 'nominal', title: null, scale: { domain: ['fits', 'out of memory'], range: ['#59a14f', '#e15759'] } },
              tooltip: [{ field: 'gpu' }, { field: 'GiB', format: '.2f', title: 'peak (GiB)' }, { field: 'capacity', format: '.1f', title: 'capacity (GiB)' }],
            },
          },
          { mark: { type: 'tick', color: '#1d2433', thickness: 2 }, encoding: { x: { field: 'idx', type: 'ordinal' }, y: { field: 'capacity', type: 'quantitative' } } },
        ],
      });
    });
  }

  try {
    if (data.kind === 'sweep') sweepReport(); else scenarioReport();
  } catch (e) {
    window.gradsyncProblems.push('report.js: ' + e);
  }

  // countMarks: the marks drawn under `node`; `bad` counts those placed off any scale (an x or y
  // that is not a finite number: a 0 on a log axis).
  function countMarks(node, bad) {
    if (!node) return 0;
    let n = 0;
    if (node.role === 'mark' && node.marktype !== 'group' && node.items) {
      n += node.items.length;
      node.items.forEach(i => {
        if (['x', 'y'].some(k => i[k] !== undefined && !Number.isFinite(i[k]))) bad.count += 1;
      });
    }
    (node.items || []).forEach(i => { n += countMarks(i, bad); });
    return n;
  }
  Promise.allSettled(charts.map(c => c.promise)).then(results => {
    const out = results.map((r, i) => {
      if (r.status === 'rejected') {
        window.gradsyncProblems.push(charts[i].id + ': ' + r.reason);
        return { id: charts[i].id, marks: 0 };
      }
      const bad = { count: 0 };
      const marks = countMarks(r.value.view.scenegraph().root, bad);
      if (bad.count > 0) window.gradsyncProblems.push(charts[i].id + ': ' + bad.count + ' marks off the scale');
      return { id: charts[i].id, marks: marks };
    });
    document.getElementById('gradsync-selftest').textContent = JSON.stringify({ charts: out, problems: window.gradsyncProblems });
  });
