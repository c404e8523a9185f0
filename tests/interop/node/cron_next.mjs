// cron-parser's next instants, the way BullMQ's defaultRepeatStrategy asks for them
// (CronExpressionParser.parse(pattern, {tz, currentDate: after}).next()).
// spec: {"cases": [{"pattern", "tz", "after": ms since epoch, "count": n (default 1)}, ...]}
// prints {"next": [[ms, ...], ...]}: for each case, its next `count` instants in order, each one
// asked from the previous one as BullMQ's worker does (currentDate = the previous run).
// Redis is not used; the url and queue arguments are only the common calling convention.
import { CronExpressionParser } from 'cron-parser';
import { parseArgs, runMain } from './common.mjs';

runMain(async () => {
  const { spec } = parseArgs();
  const next = [];
  for (const c of spec.cases ?? []) {
    const out = [];
    let after = c.after;
    for (let i = 0; i < (c.count ?? 1); i++) {
      const opts = { currentDate: new Date(after) };
      if (c.tz) {
        opts.tz = c.tz;
      }
      after = CronExpressionParser.parse(c.pattern, opts).next().getTime();
      out.push(after);
    }
    next.push(out);
  }
  return { next };
});
