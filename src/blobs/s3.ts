import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { CONNECTION_ERRORS } from '../domain/errors.js';
import type { S3Config } from './config.js';
import { PieceSender } from './pieces.js';
import { sha256Of } from './sha256.js';
import { BlobNotFound, checkHash, markStoreUnavailable, SHA256, type BlobStore, type BlobUpload, type ByteRange, type PresignOptions, type StartUploadOptions } from './store.js';

/** Multipart parts of 5 MiB (S3's least), two in flight: at most 10 MiB of a file in memory, whatever its size. */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;
/** Presigned URLs kept for the second they were made in, at most (a bound on memory). */
const MAX_SIGNED_PER_SECOND = 10_000;
/** S3 allows no more parts in one upload. */
const MAX_PARTS = 10_000;
/** The largest object CopyObject copies in one request (S3's limit: 5 GiB). */
const COPY_LIMIT = 5 * 1024 ** 3;
/** Where uploads being received live, under the prefix: never a hash, so never listed as a blob. */
const UPLOADS = 'uploads/';

export interface S3StoreOptions {
  /** Files larger than this are put again from the staged file instead of copied (tests set it low). */
  copyLimit?: number;
}

/**
 * Blobs in any S3-compatible object storage, one object per hash (`<S3_PREFIX><sha256>`).
 *
 * An upload streams into a multipart upload of its own key (`<S3_PREFIX>uploads/<upload id>`)
 * while the request body arrives, started once the first 5 MiB part is full; it is completed
 * when the body has arrived, and on acceptance copied to the hash's key by the object storage
 * itself (`CopyObject`: no bytes through this process) and removed. A file of one part or less
 * is put under its hash from the staged file at acceptance (one request). Either way an object
 * becomes visible only whole. The multipart upload's id is kept with the upload's journal row,
 * so that the sweep can abort what a crash left (and aborts, by age, any the journal does not
 * know, where the storage lists them; a bucket lifecycle rule does the same).
 * Downloads can be presigned URLs of the bucket.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  readonly client: S3Client;
  private readonly copyLimit: number;
  /** Presigned URLs made in second `signedSecond`, by what they sign. */
  private readonly signed = new Map<string, Promise<string>>();
  private signedSecond = -1;

  constructor(
    private readonly config: S3Config,
    options: S3StoreOptions = {},
  ) {
    this.copyLimit = options.copyLimit ?? COPY_LIMIT;
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      forcePathStyle: config.forcePathStyle,
      ...(config.credentials ? { credentials: config.credentials } : {}),
      // Checksums only where the protocol requires them: S3-compatible stores do not all know
      // the flexible checksums (CRC32 trailers) the SDK sends by default since 2025.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    // Outermost (after the SDK's own retries): a storage that cannot be reached or fails is
    // marked as such, so that a request meeting it is answered 503 with the storage named.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          if (s3Unavailable(error)) markStoreUnavailable(error);
          throw error;
        }
      },
      { step: 'initialize', priority: 'high', name: 'formsignStoreUnavailable' },
    );
  }

  private key(sha256: string): string {
    return this.config.prefix + checkHash(sha256);
  }

  /** The key an upload is received under. */
  uploadKey(id: string): string {
    if (!/^[A-Za-z0-9-]+$/.test(id)) throw new Error('not an upload id');
    return `${this.config.prefix}${UPLOADS}${id}`;
  }

  startUpload(id: string, options: StartUploadOptions): BlobUpload {
    return new S3Upload(this, this.config.bucket, this.uploadKey(id), options);
  }

  /** The object an upload completed, and its multipart upload when `ref` names one (still open after a crash). */
  async discardUpload(id: string, ref: string | null): Promise<void> {
    const key = this.uploadKey(id);
    // Aborted first: a completion landing between the two would otherwise leave the object behind.
    if (ref) await this.abortMultipart(key, ref);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }));
  }

  /** Aborts a multipart upload; `false` when the storage cannot (s3rver does not implement it). No error when it is gone already. */
  async abortMultipart(key: string, uploadId: string): Promise<boolean> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.config.bucket, Key: key, UploadId: uploadId }));
      return true;
    } catch (error) {
      if (isNotFound(error) || (error as { name?: string }).name === 'NoSuchUpload') return true;
      if (isNotImplemented(error)) return false;
      throw error;
    }
  }

  /** Completed uploads not yet copied or removed, and multipart uploads in progress (where the storage lists them). */
  async *listUploads(): AsyncIterable<string> {
    const prefix = this.config.prefix + UPLOADS;
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) yield object.Key!.slice(prefix.length);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    try {
      const page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.config.bucket, Prefix: this.config.prefix }));
      for (const upload of page.Uploads ?? []) yield `multipart:${upload.Key}`;
    } catch (error) {
      if (!isNotImplemented(error)) throw error;
    }
  }

  /** Copies a completed upload to its hash's key (the same work whether or not the hash is stored already). */
  async copyToHash(from: string, sha256: string): Promise<void> {
    const source = `${this.config.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`;
    await this.client.send(new CopyObjectCommand({ Bucket: this.config.bucket, CopySource: source, Key: this.key(sha256) }));
  }

  /**
   * Puts a local file under its hash in one request (a file of one part or less). The body is the
   * file's bytes, not a stream of it: the SDK can send bytes again when a connection is lost or
   * the storage answers 5xx or "slow down", but gives up at once on a stream it cannot replay. At
   * most one part (5 MiB) in memory, as a streamed upload holds anyway. The signature covers the
   * bytes' SHA-256, which is the blob's own hash: given to the signer, not computed again on the
   * event loop (and the storage refuses the bytes if they do not match it).
   */
  async putSmall(file: string, sha256: string, size: number): Promise<void> {
    if (size > PART_BYTES) throw new Error(`a file of ${size} bytes is not put in one request`);
    if ((await fsp.stat(file)).size !== size) throw new Error('the staged file does not have its recorded size');
    const body = await fsp.readFile(file);
    if (body.length !== size) throw new Error('the staged file changed while it was read');
    const command = new PutObjectCommand({ Bucket: this.config.bucket, Key: this.key(sha256), Body: body, ContentLength: size });
    await this.client.send(withPayloadHash(command, sha256));
  }

  /** Puts a local file under its hash as a multipart upload, whatever the hash's state (a file too large for CopyObject). */
  async putLarge(file: string, sha256: string, size: number): Promise<void> {
    if ((await fsp.stat(file)).size !== size) throw new Error('the staged file does not have its recorded size');
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.config.bucket, Key: this.key(sha256), Body: fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), ContentLength: size },
      partSize: PART_BYTES,
      queueSize: PARTS_IN_FLIGHT,
      leavePartsOnError: false,
    });
    await upload.done();
  }

  get copyLimitBytes(): number {
    return this.copyLimit;
  }

  /** Nothing: uploads stream into the bucket as they are received (`startUpload`). */
  async prepare(): Promise<void> {}

  /** A whole local file (a DOCX's PDF rendition, made after the upload); nothing when the hash is stored. */
  async put(file: string, sha256: string, size: number): Promise<void> {
    if (await this.stat(sha256)) return;
    await this.putLarge(file, sha256, size);
  }

  async open(sha256: string, range?: ByteRange) {
    try {
      const answer = await this.client.send(
        new GetObjectCommand({ Bucket: this.config.bucket, Key: this.key(sha256), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      );
      const total = range ? Number(/\/(\d+)$/.exec(answer.ContentRange ?? '')?.[1] ?? NaN) : Number(answer.ContentLength);
      if (!Number.isFinite(total)) throw new Error('the object storage answered without the object\'s size');
      return { stream: answer.Body as Readable, size: total };
    } catch (error) {
      if (isNotFound(error)) throw new BlobNotFound(sha256);
      throw error;
    }
  }

  async stat(sha256: string) {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: this.key(sha256) }));
      return { size: Number(head.ContentLength) };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(sha256: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.key(sha256) }));
  }

  async *list(): AsyncIterable<string> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: this.config.prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        const name = object.Key?.slice(this.config.prefix.length) ?? '';
        if (SHA256.test(name)) yield name;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Aborts multipart uploads under the prefix begun before `olderThan` (a crash in the middle of a put). */
  async sweepPartial(olderThan: number): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.config.bucket, Prefix: this.config.prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
      } catch (error) {
        // Some S3-compatible stores (and the s3rver stand-in) do not list uploads: their own expiry applies.
        if (isNotImplemented(error)) return aborted;
        throw error;
      }
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId || !upload.Initiated || upload.Initiated.getTime() >= olderThan) continue;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.config.bucket, Key: upload.Key, UploadId: upload.UploadId }));
        aborted++;
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return aborted;
  }

  async presign(sha256: string, options: PresignOptions): Promise<string> {
    // A URL signed twice within one second is the same URL (a SigV4 date is to the second): kept
    // for the second it was made in, so that a burst of reads (a list of 100 documents read 100
    // times at once: 10,000 URLs of ~0.35 ms each) signs each URL once.
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.signedSecond) {
      this.signed.clear();
      this.signedSecond = second;
    }
    const key = `${sha256}\n${options.expiresInS}\n${options.contentType}\n${options.contentDisposition}`;
    const kept = this.signed.get(key);
    if (kept !== undefined) return kept;
    const command = new GetObjectCommand({
      Bucket: this.config.bucket,
      Key: this.key(sha256),
      ResponseContentType: options.contentType,
      ResponseContentDisposition: options.contentDisposition,
    });
    // Kept while it is being signed, too: requests that ask at once share one signing.
    const url = getSignedUrl(this.client, command, { expiresIn: options.expiresInS });
    if (this.signed.size < MAX_SIGNED_PER_SECOND) {
      const signed = this.signed;
      signed.set(key, url);
      url.catch(() => signed.get(key) === url && signed.delete(key));
    }
    return url;
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.config.bucket }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const why = status === 404 ? 'no such bucket' : status === 403 ? 'access denied (check S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY)' : (error as Error).message || (error as Error).name;
      throw new Error(`S3_BUCKET: cannot use bucket "${this.config.bucket}"${this.config.endpoint ? ` at ${this.config.endpoint}` : ''}: ${why}`);
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/**
 * One upload streaming into a multipart upload of its own key: a 5 MiB part is filled while up
 * to two earlier ones are sent (`PieceSender`), so memory stays at 15 MiB per upload whatever
 * the file size. The multipart upload is started by the first full part; a file that never fills
 * one is put from the staged file at commit.
 */
class S3Upload implements BlobUpload {
  private readonly client: S3Client;
  private readonly pieces: PieceSender;
  private creating: Promise<string> | null = null;
  private uploadId: string | null = null;
  private readonly parts: Array<{ PartNumber: number; ETag: string }> = [];
  private completed = false;
  private ending: Promise<void> | null = null;

  constructor(
    private readonly store: S3BlobStore,
    private readonly bucket: string,
    private readonly key: string,
    private readonly options: StartUploadOptions,
  ) {
    this.client = store.client;
    this.pieces = new PieceSender(PART_BYTES, PARTS_IN_FLIGHT, (body, index) => this.sendPart(body, index + 1));
  }

  write(chunk: Buffer): Promise<void> {
    return this.pieces.write(chunk);
  }

  /** Starts the multipart upload (once) and keeps its id with the journal row, so that a crash leaves nothing the sweep cannot abort. */
  private multipart(): Promise<string> {
    this.creating ??= (async () => {
      const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key }));
      const uploadId = created.UploadId!;
      try {
        await this.options.remember(uploadId);
      } catch (error) {
        await this.store.abortMultipart(this.key, uploadId).catch(() => false);
        throw error;
      }
      this.uploadId = uploadId;
      return uploadId;
    })();
    return this.creating;
  }

  private async sendPart(body: Buffer, number: number): Promise<void> {
    if (number > MAX_PARTS) throw new Error(`S3 takes at most ${MAX_PARTS} parts of ${PART_BYTES} bytes in one upload`);
    const uploadId = await this.multipart();
    const command = new UploadPartCommand({ Bucket: this.bucket, Key: this.key, UploadId: uploadId, PartNumber: number, Body: body, ContentLength: body.length });
    // The signature covers the part's SHA-256 (`x-amz-content-sha256`), which the SDK's signer
    // would otherwise compute on the event loop (about 6 ms a part): hashed in the hashing thread
    // and given to the signer, which takes the header as it is (S3 checks it against the body).
    const answer = await this.client.send(withPayloadHash(command, await sha256Of(body)));
    this.parts.push({ PartNumber: number, ETag: answer.ETag! });
  }

  /** A multipart upload: its last part, then completed (the object exists under the upload's key). */
  end(): Promise<void> {
    this.ending ??= (async () => {
      if (this.pieces.small) {
        // One part or less: put from the staged file at commit.
        this.pieces.release();
        return;
      }
      await this.pieces.flush();
      await this.complete();
    })();
    return this.ending;
  }

  private async complete(): Promise<void> {
    const parts = [...this.parts].sort((a, b) => a.PartNumber - b.PartNumber);
    await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, UploadId: this.uploadId!, MultipartUpload: { Parts: parts } }));
    this.completed = true;
  }

  async commit(sha256: string, size: number, _db: Kysely<any>): Promise<void> {
    checkHash(sha256);
    if (this.pieces.bytes !== size) throw new Error(`the upload received ${this.pieces.bytes} bytes, not ${size}`);
    if (this.pieces.small) {
      await this.store.putSmall(this.options.staged, sha256, size);
      return;
    }
    if (!this.completed) throw new Error(`the multipart upload of ${this.key} was not completed`);
    if (size > this.store.copyLimitBytes) await this.store.putLarge(this.options.staged, sha256, size);
    else await this.store.copyToHash(this.key, sha256);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key }));
  }

  /**
   * Waits for the parts in flight. An open multipart upload is aborted; where the storage cannot
   * abort one (s3rver), the parts sent are completed into the upload's object, which
   * `discardUpload` then removes.
   */
  async abort(): Promise<void> {
    await this.ending?.catch(() => {});
    await this.pieces.stop();
    await this.creating?.catch(() => {});
    if (this.uploadId === null || this.completed) return;
    if (await this.store.abortMultipart(this.key, this.uploadId).catch(() => true)) return;
    if (this.parts.length > 0) await this.complete().catch(() => {});
  }
}

/**
 * `command` with its body's SHA-256 (hex) given to the signer as `x-amz-content-sha256`, which it
 * takes as it is instead of hashing the body on the event loop (S3 checks it against the body).
 */
function withPayloadHash<C extends PutObjectCommand | UploadPartCommand>(command: C, payloadHash: string): C {
  // One middleware for either command (it reads no input of theirs); TypeScript cannot call `add`
  // on the union of their stacks.
  (command as UploadPartCommand).middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> } | undefined;
      if (request?.headers) request.headers['x-amz-content-sha256'] = payloadHash;
      return next(args);
    },
    { step: 'build', name: 'formsignPayloadHash' },
  );
  return command;
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

function isNotImplemented(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotImplemented' || e.$metadata?.httpStatusCode === 501 || e.$metadata?.httpStatusCode === 405;
}

/** The SDK's and S3's names for "not now": a time limit met, throttling, a failing server. */
const UNAVAILABLE_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'SlowDown', 'ServiceUnavailable', 'InternalError']);

/**
 * Whether an error of the S3 client means the storage could not serve the request at all: no
 * connection, a connection lost, a time limit, or a 500/502/503/504 answer. Not 501 (an operation
 * the storage does not implement, which the store handles) and not 4xx (the request's own fault).
 */
export function s3Unavailable(error: unknown): boolean {
  const e = (error ?? {}) as { code?: unknown; name?: unknown; $metadata?: { httpStatusCode?: number } };
  if (typeof e.code === 'string' && CONNECTION_ERRORS.has(e.code)) return true;
  if (typeof e.name === 'string' && UNAVAILABLE_NAMES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  return status === 500 || status === 502 || status === 503 || status === 504;
}
