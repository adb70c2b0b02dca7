// POST /api/dashboard/files - the dashboard's attachment upload (signed-in session), stored as POST /v1/files stores it
import { handleDashboardUpload } from "@/server/transports/http/dashboard-upload";

export const POST = (request: Request) => handleDashboardUpload(request);
