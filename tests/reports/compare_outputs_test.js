// compare_outputs_test.js GRADSYNC: `gradsync compare` writes every output; each Chrome trace
// parses, has one complete event per events.csv row of its strategy, microsecond timestamps,
// one process per GPU and one thread per stream; a second run gives the same bytes.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert');

const bin = process.argv[2];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gradsync-outputs-'));
const run = out => execFileSync(bin, ['compare', '--model', 'resnet18', '--gpus', '4', '--iterations', '3', '--warmup', '1', '--advice-budget', '0', '--out', out], { encoding: 'utf8' });
try {
  const stdout = run(path.join(tmp, 'a'));
  assert.match(stdout, /# wrote 7 files to /);
  const dir = path.join(tmp, 'a');
  const files = fs.readdirSync(dir).sort();
  assert.deepStrictEqual(files, ['.gradsync-run', 'events.csv', 'iterations.csv', 'report.html', 'result.json', 'summary.csv', 'trace-ddp.json', 'trace-dp.json']);

  const events = fs.readFileSync(path.join(dir, 'events.csv'), 'utf8').trim().split('\n').slice(1);
  const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8'));
  assert.strictEqual(result.schema_version, 2);
  // The scenario is written resolved, the request beside it where they differ.
  assert.strictEqual(result.scenario.gpus, 4);
  assert.strictEqual(result.scenario.precision, 'bf16');
  assert.ok(Number.isInteger(result.scenario.batch_per_gpu) && result.scenario.batch_per_gpu > 0);
  assert.strictEqual(result.scenario.bucket_cap_mb, 25);
  assert.strictEqual(result.scenario.first_bucket_mb, 1);
  assert.strictEqual(result.scenario.seq_len, null, 'resnet18 has no sequence length');
  assert.strictEqual(result.scenario.nnodes, 1);
  assert.strictEqual(result.scenario.nproc_per_node, 4);
  // torch.optim's implementation and zero_grad's set_to_none: the release's defaults (PyTorch 2.11).
  assert.strictEqual(result.scenario.optimizer_impl, 'foreach');
  assert.strictEqual(result.scenario.set_to_none, true);
  assert.strictEqual(result.scenario.grad_scaler, false, 'bf16 autocast runs without GradScaler');
  assert.strictEqual(result.scenario.gpu_spread_pct, 1.5);
  assert.strictEqual(result.scenario.nccl_version, '2.28', 'the NCCL PyTorch 2.11 bundles, resolved');
  assert.deepStrictEqual(result.requested, { nnodes: 'default', nproc_per_node: 'default', batch_per_gpu: 'default', global_batch: 'default', precision: 'default', nccl_version: 'auto', optimizer_impl: 'auto', set_to_none: 'auto', bucket_cap_mb: 'default', first_bucket_mb: 'default', grad_scaler: 'auto' });
  // summary.csv: resolved scenario cells, _frac fractions, whole bytes.
  const summary = fs.readFileSync(path.join(dir, 'summary.csv'), 'utf8').trim().split('\n').map(l => l.split(','));
  const col = name => { const i = summary[0].indexOf(name); assert.ok(i >= 0, `summary.csv has ${name}`); return i; };
  for (const gone of ['gpus_used', 'precision_used', 'overlap', 'scaling_efficiency']) assert.ok(summary[0].indexOf(gone) < 0, `no column ${gone}`);
  for (const row of summary.slice(1)) {
    assert.strictEqual(row[col('gpus')], '4');
    assert.strictEqual(row[col('precision')], 'bf16');
    for (const c of ['gpu0_bytes_in', 'gpu0_bytes_out', 'max_bytes_in', 'max_bytes_out', 'peak_memory_bytes', 'capacity_bytes']) {
      assert.match(row[col(c)], /^[0-9]+$/, `${c} is whole bytes: ${row[col(c)]}`);
    }
    const overlap = Number(row[col('overlap_frac')]);
    assert.ok(overlap >= 0 && overlap <= 1, `overlap_frac ${overlap}`);
  }
  for (const strategy of ['dp', 'ddp']) {
    const trace = JSON.parse(fs.readFileSync(path.join(dir, `trace-${strategy}.json`), 'utf8'));
    const complete = trace.traceEvents.filter(e => e.ph === 'X');
    const rows = events.filter(l => l.startsWith(strategy + ','));
    assert.strictEqual(complete.length, rows.length, `${strategy}: one trace event per events.csv row`);
    const threads = {};
    trace.traceEvents.filter(e => e.ph === 'M' && e.name === 'thread_name').forEach(e => { threads[e.pid + '/' + e.tid] = e.args.name; });
    const pids = new Set(complete.map(e => e.pid));
    assert.deepStrictEqual([...pids].sort(), [0, 1, 2, 3], `${strategy}: one process per GPU`);
    for (const e of complete) {
      assert.ok(Number.isFinite(e.ts) && e.ts >= 0 && Number.isFinite(e.dur) && e.dur >= 0, JSON.stringify(e));
      assert.ok(threads[e.pid + '/' + e.tid], `a named thread for ${JSON.stringify(e)}`);
      if (e.name.startsWith('fwd:') || e.name.startsWith('bwd:')) assert.strictEqual(threads[e.pid + '/' + e.tid], 'compute');
      if (e.name.startsWith('allreduce:bucket')) {
        assert.strictEqual(threads[e.pid + '/' + e.tid], 'comm');
        assert.ok(e.args.bytes > 0 && e.args.bucket >= 0, JSON.stringify(e));
      }
    }
    // Microseconds: the last iteration event ends at the simulated time x 1e6.
    const its = result.strategies.find(s => s.strategy === strategy).iterations;
    const lastEnd = Math.max(...complete.filter(e => e.name.startsWith('iteration:')).map(e => e.ts + e.dur));
    assert.ok(Math.abs(lastEnd - its[its.length - 1].end_s * 1e6) < 1e-3, `${strategy}: ${lastEnd} us`);
  }
  // DDP overlaps: some allreduce on GPU 0 runs while a backward kernel does.
  const ddp = JSON.parse(fs.readFileSync(path.join(dir, 'trace-ddp.json'), 'utf8')).traceEvents.filter(e => e.ph === 'X' && e.pid === 0);
  const bwd = ddp.filter(e => e.name.startsWith('bwd:'));
  const ar = ddp.filter(e => e.name.startsWith('allreduce:'));
  assert.ok(ar.some(a => bwd.some(b => a.ts < b.ts + b.dur && b.ts < a.ts + a.dur)), 'an allreduce overlaps backward');

  run(path.join(tmp, 'b'));
  for (const f of files) {
    assert.ok(fs.readFileSync(path.join(tmp, 'a', f)).equals(fs.readFileSync(path.join(tmp, 'b', f))), `${f} is deterministic`);
  }
  console.log(`compare wrote ${files.length} files; traces parse and match events.csv; a second run gives the same bytes`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
