/**
 * `npm run chaos -- [--orders N] [--concurrency C] [--kill-every-ms MS] [--duration-ms MS] [--seed S] …`
 *
 * Proves the service under faults: its own stack on free loopback ports, orders through the intake
 * API while the provider sandbox misbehaves, workers are SIGKILLed and Temporal restarts; then
 * checks that every accepted order reached a final status or review and nothing was sent twice.
 * Prints a summary; exits 1 on any problem, 2 on bad arguments, 130 when interrupted.
 * See scripts/chaos/run.ts for the run and scripts/chaos/verify.ts for what counts as a problem.
 */
import { chaosUsage, parseChaosOptions, type ChaosOptions } from './chaos/options';
import { runChaos } from './chaos/run';
import { formatSummary } from './chaos/summary';

/** However long the phases take, the run stops by itself after this. */
function overallTimeoutMs(options: ChaosOptions): number {
  return options.durationMs + options.settleTimeoutMs + 10 * 60_000;
}

async function main(): Promise<number> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(chaosUsage);
    return 0;
  }
  let options: ChaosOptions;
  try {
    options = parseChaosOptions(process.argv.slice(2));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    return 2;
  }
  const interrupted = new AbortController();
  // Ctrl-C stops the run; its cleanup stops every process it started. A second Ctrl-C is Node's default.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n[chaos] ${signal}: stopping everything…`);
      interrupted.abort(new Error(`interrupted by ${signal}`));
    });
  }
  const signal = AbortSignal.any([interrupted.signal, AbortSignal.timeout(overallTimeoutMs(options))]);
  try {
    const summary = await runChaos(options, { signal, log: (line) => console.error(`[chaos] ${line}`) });
    console.log(formatSummary(summary));
    return summary.problems.length === 0 ? 0 : 1;
  } catch (err) {
    if (signal.aborted) {
      // Everything was stopped on the way out; the reason is all there is to say.
      console.error(
        `[chaos] stopped: ${String((signal.reason as Error | undefined)?.message ?? signal.reason)}`,
      );
      return interrupted.signal.aborted ? 130 : 1;
    }
    console.error(`[chaos] run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
