// Mocha reporter of scripts/run-tests.js: the spec reporter, plus each test file's time (its top-level suites,
// hooks included) as "ms<TAB>path" lines in PIS_TEST_TIMES_OUT, from which the lanes of the next runs are split.
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;

class FileTimes extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const out = process.env.PIS_TEST_TIMES_OUT;
    if (!out) return;
    const started = new Map();
    const times = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      if (!started.has(suite)) return;
      const file = path.relative(process.cwd(), suite.file).split(path.sep).join('/');
      times.set(file, (times.get(file) ?? 0) + Date.now() - started.get(suite));
    });
    runner.once(EVENT_RUN_END, () => {
      fs.writeFileSync(out, [...times].map(([file, ms]) => `${ms}\t${file}\n`).join(''));
    });
  }
}

module.exports = FileTimes;
