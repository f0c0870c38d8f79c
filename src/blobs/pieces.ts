/**
 * Cuts the chunks of a stream being received into pieces of `size` bytes and sends each piece
 * (`send`: a chunk row, a multipart part) while the next one is filled, with at most `inFlight`
 * sends at once. Buffers are reused once their send has answered, so that an upload holds at
 * most `(inFlight + 1) × size` bytes of the file whatever its size, and a slow store slows the
 * writer down (`write` waits) instead of filling memory. Used by the streaming stores' uploads.
 */
export class PieceSender {
  private piece: Buffer | null = null;
  private readonly spare: Buffer[] = [];
  private filled = 0;
  private readonly inflight = new Set<Promise<void>>();
  private failure: unknown = null;
  private stopped = false;
  private flushing = false;
  /** Bytes written so far. */
  bytes = 0;
  /** Pieces handed to `send` so far (the next one's index). */
  sent = 0;

  constructor(
    private readonly size: number,
    private readonly inFlight: number,
    private readonly send: (piece: Buffer, index: number) => Promise<void>,
  ) {}

  async write(chunk: Buffer): Promise<void> {
    if (this.stopped) throw new Error('the upload was stopped');
    if (this.failure) throw this.failure;
    let offset = 0;
    while (offset < chunk.length) {
      this.piece ??= this.spare.pop() ?? Buffer.allocUnsafe(this.size);
      const copied = chunk.copy(this.piece, this.filled, offset);
      this.filled += copied;
      offset += copied;
      this.bytes += copied;
      if (this.filled === this.size) await this.sendPiece();
    }
  }

  /** Whether no piece was ever sent and what was written fits in one (a file the store may take otherwise). */
  get small(): boolean {
    return this.sent === 0;
  }

  /** Sends the last, partial piece (if any) and waits for every send; rejects with the first failure. */
  async flush(): Promise<void> {
    this.flushing = true;
    if (this.filled > 0) await this.sendPiece();
    await this.settle();
    this.release();
    if (this.failure) throw this.failure;
  }

  /** Stops: no piece is sent from now on; resolves when the sends in flight have answered (errors ignored). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.settle();
    this.release();
  }

  /** Forgets the buffers (a file that is put otherwise, or done). */
  release(): void {
    this.piece = null;
    this.spare.length = 0;
  }

  private async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.race(this.inflight);
  }

  private async sendPiece(): Promise<void> {
    while (this.inflight.size >= this.inFlight) await Promise.race(this.inflight);
    if (this.failure) throw this.failure;
    // Stopped meanwhile: `stop` has seen the sends in flight and must not miss another.
    if (this.stopped && !this.flushing) throw new Error('the upload was stopped');
    const buffer = this.piece!;
    const index = this.sent++;
    const body = buffer.subarray(0, this.filled);
    this.piece = null;
    this.filled = 0;
    const sending: Promise<void> = this.send(body, index)
      .then(
        () => {
          this.spare.push(buffer);
        },
        (error: unknown) => {
          this.failure ??= error;
        },
      )
      .finally(() => this.inflight.delete(sending));
    this.inflight.add(sending);
  }
}
