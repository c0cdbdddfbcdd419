// browser_test.js GRADSYNC OUTDIR: renders report.html pages in headless Chromium (Debian's
// chromium, network off) and fails on any error, console error, refused request or alert the
// page recorded, or on a chart that drew no marks. Pages: `gradsync compare` (the default
// scenario), one whose DP run does not fit, a sweep, and a compare whose model path holds <script>alert(1)</script>, which must
// show as text. Screenshots of the default compare and the sweep go to OUTDIR (each other page's took
// 8 s of CI for an image nobody looked at). Without chromium: skipped (77), except under CI.
'use strict';
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const assert = require('assert');

const [bin, outDir] = process.argv.slice(2);
const chromium = ['chromium', 'chromium-browser', 'google-chrome'].find(c => spawnSync('which', [c]).status === 0);
if (!chromium) {
  const msg = 'chromium not found: install it with scripts/setup --browser';
  if (process.env.CI) { console.error('FAIL: ' + msg + ' (required under CI)'); process.exit(1); }
  console.log('SKIP: ' + msg);
  process.exit(77);
}
fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });

const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run',
  '--proxy-server=127.0.0.1:9', '--host-resolver-rules=MAP * ~NOTFOUND', '--virtual-time-budget=60000'];

function render(page, screenshot, height) {  // screenshot: a path, or null for none
  const url = 'file://' + path.resolve(page);
  const dom = spawnSync(chromium, flags.concat(['--dump-dom', url]), { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 180000 });
  assert.strictEqual(dom.status, 0, `chromium --dump-dom ${page}: ${dom.stderr}`);
  const m = dom.stdout.match(/<pre id="gradsync-selftest"[^>]*>([^<]*)<\/pre>/);
  assert.ok(m && m[1], `${page}: the page never finished drawing (no self-test result)`);
  const unescape = s => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
  const selftest = JSON.parse(unescape(m[1]));
  if (screenshot) {
    const shot = spawnSync(chromium, flags.concat([`--screenshot=${screenshot}`, `--window-size=1400,${height}`, url]), { encoding: 'utf8', timeout: 180000 });
    assert.strictEqual(shot.status, 0, `chromium --screenshot ${page}: ${shot.stderr}`);
    assert.ok(fs.statSync(screenshot).size > 10000, `${screenshot} is an image`);
  }
  return { selftest, dom: dom.stdout };
}

const screenshots = new Set(['compare', 'sweep']);
function check(name, page, minCharts, height) {
  const shot = screenshots.has(name) ? path.join(outDir, name + '.png') : null;
  const { selftest, dom } = render(page, shot, height);
  assert.deepStrictEqual(selftest.problems, [], `${name}: problems in the page`);
  assert.ok(selftest.charts.length >= minCharts, `${name}: ${selftest.charts.length} charts, expected at least ${minCharts}`);
  for (const c of selftest.charts) assert.ok(c.marks > 0, `${name}: chart ${c.id} drew no marks`);
  console.log(`${name}: ${selftest.charts.length} charts (${selftest.charts.map(c => c.id + ' ' + c.marks).join(', ')}), no problems${shot ? `; screenshot ${name}.png` : ''}`);
  return dom;
}

const run = args => execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

run(['compare', '--out', path.join(outDir, 'compare')]);
const cdom = check('compare', path.join(outDir, 'compare', 'report.html'), 9, 5200);
// The first screen: the answer and what to change come before the scenario table.
const h2 = [...cdom.slice(cdom.indexOf('<main id="report">')).matchAll(/<h2>([^<]*)<\/h2>/g)].map(m => m[1]);
assert.deepStrictEqual(h2.slice(0, 2), ['Answer', 'Scenario'], `sections in order: ${h2.join(', ')}`);
const answer = cdom.slice(cdom.indexOf('<h2>Answer</h2>'), cdom.indexOf('<h2>Scenario</h2>'));
assert.ok(answer.includes('DDP is') && answer.includes('What to change') && answer.includes('torch.compile'),
  'the answer section holds the headline and the advice table');
assert.ok(answer.includes('How sure') && answer.includes('DP, NVLink node, transformer') &&
  answer.includes('DDP, NVLink node, transformer'), 'the answer section says how sure each time is');
console.log('compare: the answer and the advice open the page');

// DataParallel out of memory (GPT-2 medium at 19 samples per GPU on 8 A100s: 87.3 of 80 GiB on
// GPU0, where DDP's ranks hold 74.1): no speed-up is headlined and no time is "sure", as compare's
// table says.
run(['compare', '--model', 'gpt2-medium', '--batch-per-gpu', '19', '--iterations', '2', '--warmup', '1', '--advice-budget', '0', '--out', path.join(outDir, 'oom')]);
const odom = check('oom', path.join(outDir, 'oom', 'report.html'), 5, 4000);
const oanswer = odom.slice(odom.indexOf('<h2>Answer</h2>'), odom.indexOf('<h2>Scenario</h2>'));
assert.ok(!oanswer.includes('DDP is') && oanswer.includes('DP does not fit') && oanswer.includes('DDP: '),
  'an out-of-memory DP run gets no speed-up headline');
assert.ok(oanswer.includes("DP: does not fit the GPU's memory, so no time to be sure of") ||
  oanswer.includes('DP: does not fit the GPU&#39;s memory, so no time to be sure of'), 'nor a confidence');
console.log('compare with DP out of memory: no speed-up, no confidence for DP');

// 16 GPUs on two nodes: the timeline draws node 0's GPUs and the first GPU of node 1 (8), not all 16
run(['compare', '--model', 'resnet18', '--topology', '2x-dgx-a100-hdr', '--iterations', '2', '--warmup', '1', '--advice-budget', '0',
  '--out', path.join(outDir, 'compare16')]);
const dom16 = check('compare16', path.join(outDir, 'compare16', 'report.html'), 5, 4000);
const lanes16 = new Set([...dom16.matchAll(/GPU (\d+) (?:compute|comm|host)/g)].map(m => Number(m[1])));
// (and the slowest GPU of each phase, which may add one or two of node 1's)
assert.ok([0, 1, 2, 3, 4, 5, 6, 7, 8].every(g => lanes16.has(g)) && lanes16.size < 16, `lanes at 16 GPUs: ${[...lanes16]}`);
assert.ok(new RegExp(lanes16.size + ' of 16 GPUs: node 0, the slowest GPU of each phase').test(dom16), 'the page says which GPUs it draws');
console.log('compare at 16 GPUs: node 0 and GPU 8 drawn, labelled so');

run(['sweep', '--model', 'resnet18', '--iterations', '2', '--warmup', '1', '--vary', 'gpus=1,2,4,8', '--vary', 'bucket_cap_mb=5,25', '--jobs', '2', '--out', path.join(outDir, 'sweep')]);
const sdom = check('sweep', path.join(outDir, 'sweep', 'report.html'), 5, 2400);
// Legends sort numerically (5 before 25), exposed communication has its chart, and throughput
// draws an ideal-scaling line.
const chartOf = id => { const s = sdom.indexOf('id="' + id + '"'); return sdom.slice(s, sdom.indexOf('id="chart-', s + 10)); };
const tp = chartOf('chart-throughput');
assert.ok(tp.indexOf('DDP bucket_cap_mb=5') >= 0 && tp.indexOf('DDP bucket_cap_mb=5') < tp.indexOf('DDP bucket_cap_mb=25'), 'the legend orders 5 before 25');
assert.ok(tp.includes('ideal scaling'), 'the throughput chart names its ideal-scaling line');
assert.ok(sdom.includes('id="chart-buckets-exposed"'), 'exposed communication against bucket size is drawn');
console.log('sweep: numeric legend order, ideal scaling, exposed communication');

// bucket_cap_mb 0 (one bucket per gradient) among the values: its point has no place on a log axis,
// so the bucket charts take a symmetric log one (check() fails on a mark off the scale).
run(['sweep', '--model', 'resnet18', '--iterations', '2', '--warmup', '1', '--vary', 'strategy=ddp', '--vary', 'gpus=2',
  '--vary', 'bucket_cap_mb=0,1,25', '--jobs', '2', '--out', path.join(outDir, 'sweep-bucket0')]);
const zdom = check('sweep-bucket0', path.join(outDir, 'sweep-bucket0', 'report.html'), 3, 2000);
assert.ok(zdom.includes('id="chart-buckets"'), 'step time against bucket size is drawn with bucket_cap_mb 0');
console.log('sweep with bucket_cap_mb 0: the bucket charts place every point');

// A model file whose path holds markup: directory "<script>alert(1)<", file "script>.yaml".
const evilDir = path.join(outDir, '<script>alert(1)<');
fs.mkdirSync(evilDir, { recursive: true });
fs.copyFileSync(path.join(__dirname, '..', '..', 'models', 'zoo', 'resnet18.yaml'), path.join(evilDir, 'script>.yaml'));
const evilModel = path.join(evilDir, 'script>.yaml');
assert.ok(evilModel.includes('<script>alert(1)</script>'));
run(['compare', '--model', evilModel, '--gpus', '2', '--iterations', '2', '--warmup', '1', '--advice-budget', '0', '--out', path.join(outDir, 'escaped')]);
const dom = check('escaped', path.join(outDir, 'escaped', 'report.html'), 9, 3000);
assert.ok(dom.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the model path shows as text');
console.log('a model path holding <script>alert(1)</script> shows as text and runs nothing');

// gradsync validate's page (real CPU run, one process, two ranks as threads): the section
// "Measured against simulated" draws its chart.
const cal = path.join(outDir, 'calibration.yaml');
run(['calibrate', '--backend', 'cpu', '--launch', 'local', '--world-size', '2', '--max-bytes', '256KiB', '--max-flops', '1e7', '--repeats', '1', '--out', cal]);
run(['validate', '--backend', 'cpu', '--launch', 'local', '--world-size', '2', '--strategy', 'ddp', '--model', 'resnet18', '--batch-per-gpu', '1',
  '--iterations', '2', '--warmup', '1', '--precision', 'fp32', '--calibration', cal, '--out', path.join(outDir, 'validate')]);
const vdom = check('validate', path.join(outDir, 'validate', 'report.html'), 5, 4000);
assert.ok(vdom.includes('chart-validation'), 'the validation chart is on the page');
assert.ok(vdom.includes('Measured against simulated'), 'the validation section is on the page');
console.log('validate: the measured-against-simulated section renders');
