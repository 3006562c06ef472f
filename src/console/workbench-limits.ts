/**
 * The parser workbench's limits, shared with the API's `/definitions/run` and `/definitions/replay`
 * (src/management/trial-limits.ts): the console counts its runs per session, the API per token.
 */
export {
  createWorkbenchLimits,
  type WorkbenchLimitOptions,
  type WorkbenchLimits,
} from '../management/trial-limits.ts';
