import { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import type { StorageLocation } from "../kernel/config";
import { ApiError } from "../kernel/errors";
import type { BlobSource, Storage } from "./storage-interface";
import { log } from "../kernel/log";

// 8 MiB parts, at most two in flight: an upload holds about 24 MiB whatever its size.

export type S3Location = Extract<StorageLocation, { kind: "s3" }>;

const PART_SIZE = 8 * 1024 * 1024;
const NETWORK_ERROR = /^(E(CONN|HOST|NET|AI_|PIPE|PROTO|TIMEDOUT|NOTFOUND)|ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/;
const DENIED = new Set(["AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired"]);
const WRONG_REGION = new Set(["PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"]);

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

export function s3Storage(location: S3Location): Storage {
  const client = new S3Client({
    region: location.region,
    endpoint: location.endpoint,
    forcePathStyle: location.pathStyle,
    maxAttempts: 3,
    // The SDK's default checksums send streamed bodies aws-chunked, which S3-compatible servers
    // (s3rver, older MinIO) store framing and all.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // requestTimeout runs until the answer's headers (a part's upload included), not through a
    // download's body, so a slow reader of a large file is never cut off.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000, throwOnRequestTimeout: true },
  });
  const Bucket = location.bucket;
  return {
    async put(key, source) {
      let failedSource: { error: unknown } | undefined;
      const body = source instanceof Uint8Array ? source : Readable.from(watched(source, (error) => (failedSource ??= { error })));
      try {
        await new Upload({ client, params: { Bucket, Key: key, Body: body }, partSize: PART_SIZE, queueSize: 2 }).done();
      } catch (err) {
        // Upload never completes a multipart upload that failed, and aborts it (nothing is left
        // under the key). A failing source's own error wins over whatever the abort met.
        throw failedSource ? failedSource.error : storageFailure(location, err);
      } finally {
        if (body instanceof Readable) body.destroy();
      }
    },
    async open(key) {
      try {
        const { Body, ContentLength } = await client.send(new GetObjectCommand({ Bucket, Key: key }));
        if (!(Body instanceof Readable) || ContentLength === undefined) throw new Error(`GetObject ${key}: no body stream or length`);
        return { size: ContentLength, stream: Body };
      } catch (err) {
        if (err instanceof S3ServiceException && (err.name === "NoSuchKey" || (err.$metadata.httpStatusCode === 404 && err.name !== "NoSuchBucket"))) return null;
        throw storageFailure(location, err);
      }
    },
    async delete(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
      } catch (err) {
        if (err instanceof S3ServiceException && err.name === "NoSuchKey") return;
        throw storageFailure(location, err);
      }
    },
    explain(err) {
      const cause = err instanceof ApiError && err.code === "storage_unavailable" ? err.cause : err;
      return explainS3Error(location, cause) ?? `${bucketName(location)}: ${oneLine(cause instanceof Error ? cause.message || cause.name : String(cause))}`;
    },
  };
}

/** Upload may replace the source's error with one of its own. */
async function* watched(source: Exclude<BlobSource, Uint8Array>, onError: (error: unknown) => void): AsyncGenerator<Uint8Array> {
  try {
    yield* source;
  } catch (err) {
    onError(err);
    throw err;
  }
}

const bucketName = (location: S3Location) => `bucket "${location.bucket}" ${location.endpoint ? `at ${location.endpoint}` : `in ${location.region}`}`;

function explainS3Error(location: S3Location, err: unknown): string | undefined {
  const bucket = bucketName(location);
  if (err instanceof S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    if (err.name === "NoSuchBucket") return `${bucket} does not exist`;
    if (status === 403 || DENIED.has(err.name)) return `access denied to ${bucket} (check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY): ${err.name}`;
    if (status === 301 || WRONG_REGION.has(err.name)) return `${bucket} answered ${err.name} (is the bucket in region ${location.region}?)`;
    if (err.$fault === "server" || (status ?? 0) >= 500 || err.name === "RequestTimeout") return `${bucket} failed: ${status ?? ""} ${err.name}`;
    return undefined;
  }
  if (!(err instanceof Error)) return undefined;
  if (err.name === "CredentialsProviderError") return `no credentials for ${bucket} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): ${oneLine(err.message)}`;
  const code = (err as NodeJS.ErrnoException).code ?? "";
  if (err.name === "TimeoutError" || NETWORK_ERROR.test(code)) return `${bucket} is unreachable (${oneLine(err.message || code)})`;
  return undefined;
}

function storageFailure(location: S3Location, err: unknown): unknown {
  const why = err instanceof ApiError ? undefined : explainS3Error(location, err);
  if (!why) return err;
  log().warn({ reason: why }, "file storage (STORAGE_URL) failed");
  return Object.assign(new ApiError("storage_unavailable", "File storage is unavailable right now. Try again shortly."), { cause: err });
}
