/**
 * src/api/ (the Express shell): its surface for the tests and scripts that start the API
 * (`npm run api` runs main.ts). Nothing of the product imports it.
 */
export { createApp, type AppDeps } from './app';
