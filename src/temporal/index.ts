/**
 * src/temporal/ (Temporal connection, setup, deployments and schedule plumbing): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { nativeConnectionOptions, temporalConnectionOptions } from './connection';
export {
  bootstrapCurrentVersion,
  type DeploymentServices,
  type DeploymentVersion,
  describeDeployment,
  describeVersion,
  setCurrentVersion,
  versionName,
  type VersionStatus,
  waitForVersion,
} from './deployments';
export {
  FAIRNESS_NOT_HONOURED,
  FAIRNESS_PROBE_EVERY_MS,
  type FairnessReport,
  readFairnessReport,
  startFairnessReports,
} from './fairness-probe';
export { grpcCode, GrpcStatus } from './grpc';
export { closesRun } from './history-events';
export { upsertSchedule } from './schedules';
export {
  ensureTemporalSetup,
  isUnknownSearchAttribute,
  searchAttributeProbeQuery,
  type SearchAttributeTypeName,
  TemporalSetupError,
} from './setup';
export { type Timed, untimed } from './timed';
export { workflowUiUrl } from './ui-links';
export {
  SAMPLE_WINDOW_MS,
  ServerClockEstimate,
  serverClockSampler,
  workerServerClock,
  type Clocks,
} from './server-clock';
