/**
 * src/sandbox/ (the provider sandbox): its surface for the tests, scripts and dev stack that start
 * one (`npm run sandbox` runs main.ts). Nothing of the product imports it.
 */
export {
  createSandboxApp,
  defaultSandboxOptions,
  SandboxState,
  startSandbox,
  type SandboxOptions,
  type StartedSandbox,
} from './server';
