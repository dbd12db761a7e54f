import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secretsInLogs } from '../../scripts/chaos/log-secrets';

describe("the chaos run's log scan", () => {
  it('when a log line carries a secret, reports the file and the kind of secret but not the secret', () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-scan-'));
    try {
      writeFileSync(join(dir, 'worker-1.log'), '{"msg":"sent top-up","to":"0555123456"}\n');
      writeFileSync(join(dir, 'api.log'), '{"msg":"request","status":201}\n');
      const problems = secretsInLogs(dir, [
        { kind: 'phone number', value: '0555123456' },
        { kind: 'provider API key', value: 'sandbox-key' },
      ]);
      assert.deepEqual(problems, ['worker-1.log contains a phone number']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
