import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Config } from './config.js';
import { BlobNotFound, checkHash, SHA256, type BlobStore, type ByteRange, type PresignOptions } from './store.js';

/** Multipart parts of 5 MiB (S3's least), two in flight: at most 10 MiB of a file in memory, whatever its size. */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

/**
 * Blobs in any S3-compatible object storage, one object per hash (`<S3_PREFIX><sha256>`). A file
 * larger than one part goes up as a multipart upload, which becomes visible only when it is
 * completed; an interrupted one is aborted, and one left by a crash is aborted by the sweep (or by
 * the bucket's own lifecycle rule, where set). Downloads can be presigned URLs of the bucket.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  readonly client: S3Client;

  constructor(private readonly config: S3Config) {
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
  }

  private key(sha256: string): string {
    return this.config.prefix + checkHash(sha256);
  }

  async put(file: string, sha256: string, size: number): Promise<void> {
    if (await this.stat(sha256)) return;
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
    const command = new GetObjectCommand({
      Bucket: this.config.bucket,
      Key: this.key(sha256),
      ResponseContentType: options.contentType,
      ResponseContentDisposition: options.contentDisposition,
    });
    return getSignedUrl(this.client, command, { expiresIn: options.expiresInS });
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

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

function isNotImplemented(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotImplemented' || e.$metadata?.httpStatusCode === 501 || e.$metadata?.httpStatusCode === 405;
}
