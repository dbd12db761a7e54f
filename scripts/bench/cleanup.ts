/**
 * Everything the bench starts is registered here and stopped in reverse order: at the end of the
 * run, on an error, and on Ctrl-C / SIGTERM. As a last resort, child processes still alive when the
 * bench process exits get SIGKILL (the dev-server helper does the same for the Temporal server).
 */
import type { ChildProcess } from 'node:child_process';

type Cleanup = { name: string; run: () => Promise<void> };

const cleanups: Cleanup[] = [];
const children = new Set<ChildProcess>();
let cleaning: Promise<void> | undefined;
let interrupted = false;

/** True once Ctrl-C / SIGTERM began the clean-up: parts exiting now are no news. */
export function wasInterrupted(): boolean {
  return interrupted;
}

export function onCleanup(name: string, run: () => Promise<void>): void {
  cleanups.push({ name, run });
}

/** A child process to SIGKILL if the bench exits without having stopped it. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Runs every cleanup once, newest first; a failing one does not stop the others. */
export function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const { name, run } of cleanups.splice(0).reverse()) {
      try {
        await run();
      } catch (err) {
        process.stderr.write(`[bench] cleanup of ${name} failed: ${String(err)}\n`);
      }
    }
  })();
  return cleaning;
}

process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Ctrl-C or SIGTERM: stop everything, then exit 130 / 143. A second signal exits at once. */
export function installSignalHandlers(log: (line: string) => void): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      interrupted = true;
      log(`${signal}: stopping everything the bench started…`);
      process.once(signal, () => process.exit(code));
      const hardStop = setTimeout(() => process.exit(code), 60_000);
      hardStop.unref();
      void cleanUp().finally(() => process.exit(code));
    });
  }
}
