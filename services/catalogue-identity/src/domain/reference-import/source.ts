/** One row of a reference table: column -> PostgreSQL text output (null for NULL). */
export type ReferenceRow = Record<string, string | null>;

/** A readable copy of the reference's database (a live connection or a dump; store/reference-source.ts). */
export interface ReferenceSource {
  /** Names of the tables present (schema dropped). */
  tables(): Promise<ReadonlySet<string>>;
  /** Every row of a table ([] when absent). */
  rows(table: string): Promise<ReferenceRow[]>;
  close(): Promise<void>;
}
