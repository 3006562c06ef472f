/** Redis keys of the export allowance (sensors/export). */
export interface ExportKeys {
  readonly prefix: string;
  /** Hash `<device>|<sensor>` → successful exports, per calendar month `YYYY-MM`. */
  exports(env: string, month: string): string;
}

export function exportKeys(prefix: string): ExportKeys {
  return { prefix, exports: (env, month) => `${prefix}:env:${env}:exports:${month}` };
}
