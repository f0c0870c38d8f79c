/** The settings of the blob stores, read and checked by src/config.ts (`BLOB_STORE`, `S3_*`). */

/** The stored-file back end and its settings (README, "Running on several machines"). */
export type BlobConfig = { kind: 'disk' } | { kind: 'postgres' } | ({ kind: 's3' } & S3Config);

export interface S3Config {
  /** `null`: the provider's default endpoint for `region` (AWS). */
  endpoint: string | null;
  bucket: string;
  region: string;
  /** `null`: the SDK's default credential chain (instance role, AWS_* variables, …). */
  credentials: { accessKeyId: string; secretAccessKey: string } | null;
  forcePathStyle: boolean;
  /** Put before every object key, e.g. `formsign/` (may be empty). */
  prefix: string;
}
