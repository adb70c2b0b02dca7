import type { Actor } from "../../services/access/actor";
import { sessionActor } from "../../services/access/session";
import { MAX_FILE_BYTES, mimeTypeOf, uploadFile } from "../../services/messaging/files";
import { ApiError } from "../../kernel/errors";
import { discardBlob, storeBlob, type StoredBlob } from "../../storage/blobs";
import { bodyChunks } from "./body";
import { errorResponse, jsonResponse, requestIdOf } from "./responses";

/** The header the dashboard's upload sends: a cross-site form cannot, so a session cookie alone uploads nothing. */
const DASHBOARD_UPLOAD_HEADER = "x-relay-dashboard";

/** POST /api/dashboard/files: as POST /v1/files, for the signed-in session's account. */
export async function handleDashboardUpload(request: Request, resolveActor: () => Promise<Actor | null> = sessionActor): Promise<Response> {
  const requestId = requestIdOf(request.headers);
  let upload: StoredBlob | undefined;
  let used = false;
  try {
    const actor = await resolveActor();
    if (!actor) throw new ApiError("session_required", "Sign in to continue.");
    if (request.headers.get(DASHBOARD_UPLOAD_HEADER) !== "1") {
      throw new ApiError("invalid_parameter_value", `Uploads from the dashboard carry the ${DASHBOARD_UPLOAD_HEADER} header.`, { param: DASHBOARD_UPLOAD_HEADER });
    }
    mimeTypeOf(request.headers.get("content-type"));
    upload = await storeBlob(bodyChunks(request, MAX_FILE_BYTES), MAX_FILE_BYTES);
    const file = await uploadFile(actor, { blob: upload, contentType: request.headers.get("content-type"), filename: request.headers.get("x-filename") });
    used = true;
    return jsonResponse(201, file, requestId);
  } catch (err) {
    return errorResponse(err, requestId);
  } finally {
    if (upload && !used) await discardBlob(upload).catch(() => undefined);
  }
}
