// GET /api/health - liveness probe: answers without touching the database.
export function GET(): Response {
  return Response.json({ status: "ok" });
}
