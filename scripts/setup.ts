/**
 * `npm run setup`: makes sure the Temporal CLI is available (installing it into .tools/bin if not),
 * and the time-skipping test server of the fast test tier (from Maven Central into .tools/).
 * `npm run setup:cluster`: the same for the cluster tier's Temporal server and temporal-sql-tool,
 * built from the Go module proxy into .tools/ (minutes the first time; nothing once installed).
 */
import { ensureTemporalCli } from '../src/temporal/cli';
import { ensureTemporalServer } from '../src/temporal/server-install';
import { ensureTestServer } from '../src/temporal/test-server-install';

try {
  if (process.argv.includes('--cluster')) {
    const install = ensureTemporalServer();
    console.log(`${install.serverBin}\n${install.sqlToolBin}`);
  } else {
    console.log(ensureTemporalCli());
    console.log(ensureTestServer());
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}
