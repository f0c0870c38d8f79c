/** A file that cannot be read as the document it claims to be; answers `422 unreadable_document`. */
export class UnreadableDocument extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableDocument';
  }
}
