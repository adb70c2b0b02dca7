// GET /api/files/<file_id>?expires=&signature= - download through a signed, expiring URL
import { errorResponse, requestIdOf } from "@/server/transports/http/responses";
import { downloadFile } from "@/server/services/messaging/file-download";

export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const requestId = requestIdOf(request.headers);
  const { id } = await ctx.params;
  try {
    const response = await downloadFile(request, id);
    response.headers.set("Request-Id", requestId);
    return response;
  } catch (err) {
    return errorResponse(err, requestId);
  }
}
