/** `npm run setup`: makes sure the Temporal CLI is available (installing it into .tools/bin if not). */
import { ensureTemporalCli } from '../src/temporal/cli';

try {
  console.log(ensureTemporalCli());
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}
