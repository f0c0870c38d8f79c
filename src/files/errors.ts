/** A file that cannot be read as the document it claims to be; answers `422 unreadable_document`. */
export class UnreadableDocument extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableDocument';
  }
}

/**
 * The service cannot read files now (its readers are shutting down, or kept stopping before a file
 * reached them); the file is not to blame. Answers `503 unavailable` with `Retry-After`.
 */
export class ReaderUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReaderUnavailable';
  }
}
