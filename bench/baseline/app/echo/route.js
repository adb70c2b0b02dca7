// GET|POST /echo?name= - answers a stored copy of the envelope a /v1 route answered (PUT stores
// one), and does nothing else; POST reads its body first, as a real write handler does.
const envelopes = new Map();

export async function PUT(request) {
  const url = new URL(request.url);
  envelopes.set(url.searchParams.get("name") ?? "", {
    status: Number(url.searchParams.get("status") ?? 200),
    text: await request.text(),
  });
  return new Response(null, { status: 204 });
}

function answer(request) {
  const stored = envelopes.get(new URL(request.url).searchParams.get("name") ?? "");
  if (!stored) return Response.json({ error: { type: "invalid_request_error", code: "route_not_found" } }, { status: 404 });
  return new Response(stored.text, { status: stored.status, headers: { "Content-Type": "application/json; charset=utf-8" } });
}

export async function GET(request) {
  return answer(request);
}

export async function POST(request) {
  await request.text();
  return answer(request);
}
