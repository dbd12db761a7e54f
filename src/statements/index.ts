/**
 * src/statements/ (statements, kept days and the export): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { CSV, ExportOrdersQuery, ExportRowSchema, NDJSON } from './order-export.service';
export { StatementDays } from './statement-days';
export { createStatementDaysActivities, type StatementDaysSummarizer } from './statement-days.activities';
export { ensureStatementDaysSchedule } from './statement-days.schedule';
export { financeRouter } from './statement.routes';
export { Statement, StatementQuery, StatementService } from './statement.service';
