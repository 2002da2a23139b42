/**
 * Errors thrown by the IVF index core. They carry a stable `code` so the service layer can map them to
 * HTTP statuses or task outcomes without parsing messages (the core itself knows nothing about HTTP).
 */
export type IvfErrorCode =
  | 'IVF_INVALID_INPUT'
  | 'IVF_DUPLICATE_ID'
  | 'IVF_NOT_READY'
  | 'IVF_CORRUPT_STORE'
  | 'IVF_BUILD_ABORTED';

/** Base class: `code` identifies the failure, `message` is for logs. */
export class IvfError extends Error {
  constructor(
    readonly code: IvfErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A caller passed a malformed argument (wrong dimension, non-finite vector, k < 1, mask of another size...). */
export class IvfInputError extends IvfError {
  constructor(message: string) {
    super('IVF_INVALID_INPUT', message);
  }
}

/** The same canonical id appeared twice in one build or restore. */
export class IvfDuplicateIdError extends IvfError {
  constructor(readonly id: string) {
    super('IVF_DUPLICATE_ID', `duplicate canonical id in index input: ${id}`);
  }
}

/** A query reached the live index holder before any generation was published. */
export class IvfNotReadyError extends IvfError {
  constructor() {
    super('IVF_NOT_READY', 'no similarity index generation is loaded yet');
  }
}

/** Stored centroids/cells do not form a consistent index (missing or repeated rows, bad sizes, bad cell id). */
export class IvfCorruptStoreError extends IvfError {
  constructor(message: string) {
    super('IVF_CORRUPT_STORE', message);
  }
}

/** The build's AbortSignal fired; the previous generation stays live. */
export class IvfBuildAbortedError extends IvfError {
  constructor() {
    super('IVF_BUILD_ABORTED', 'index build aborted');
  }
}
