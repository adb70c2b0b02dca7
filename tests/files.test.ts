import { describe, expect, it } from "vitest";
import { newId } from "@/server/ids";
import { readBody } from "@/server/http/body";
import { call, expectRequestId, get, makeAccount } from "./helpers";

const upload = (key: string, bytes: Uint8Array | string, headers: Record<string, string> = {}) =>
  call("POST", "/v1/files", { key, raw: typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes, headers });

describe("files", () => {
  it("POST /v1/files stores raw bytes and returns the File; GET /v1/files redirects to a working signed URL", async () => {
    const f = await makeAccount();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 9, 9]);
    const res = await upload(f.key, png, { "content-type": "image/png", "x-filename": "cat.png" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      object: "file",
      id: expect.stringMatching(/^file_[0-9a-z]{26}$/),
      url: expect.stringMatching(/\/api\/files\/file_.+\?expires=\d+&signature=/),
      filename: "cat.png",
      mime_type: "image/png",
      size: 10,
      created_at: expect.any(Number),
      request_id: expect.stringMatching(/^req_/),
    });
    expectRequestId(res);

    const redirect = await get(`/v1/files?id=${res.body.id}`, f.key);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get("location")!;
    expect(location).toMatch(/^http:\/\/localhost:3000\/api\/files\/file_/);
    expect(redirect.headers.get("request-id")).toMatch(/^req_/);
    expect(redirect.headers.get("access-control-allow-origin")).toBe("*");
    const url = new URL(location);
    const { GET } = await import("@/app/api/files/[id]/route");
    const download = await GET(new Request(url), { params: Promise.resolve({ id: res.body.id }) });
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(png);
  });

  it("names files safely: decodes X-Filename, strips paths, defaults by type", async () => {
    const f = await makeAccount();
    const encoded = await upload(f.key, "x", { "content-type": "text/plain; charset=utf-8", "x-filename": encodeURIComponent("notes für dich.txt") });
    expect(encoded.body).toMatchObject({ filename: "notes für dich.txt", mime_type: "text/plain" });
    const pathy = await upload(f.key, "x", { "content-type": "application/pdf", "x-filename": "../../etc/passwd" });
    expect(pathy.body.filename).toBe("passwd");
    const unnamed = await upload(f.key, "x", { "content-type": "audio/mpeg" });
    expect(unnamed.body.filename).toBe("file.mp3");
    const untyped = await upload(f.key, "x");
    expect(untyped.body).toMatchObject({ mime_type: "application/octet-stream", filename: "file.bin" });
  });

  it("refuses empty bodies, bad types, files over the limit, and other accounts' files", async () => {
    const f = await makeAccount();
    const empty = await upload(f.key, new Uint8Array(0), { "content-type": "image/png" });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatchObject({ type: "invalid_request_error", code: "empty_file" });
    const badType = await upload(f.key, "x", { "content-type": "not a type" });
    expect(badType.body.error).toMatchObject({ code: "invalid_parameter_value", param: "Content-Type" });

    const stream = new Request("http://x/", { method: "POST", body: new Uint8Array(2048) });
    await expect(readBody(stream, 1024)).rejects.toMatchObject({ code: "file_too_large", status: 413 });

    expect((await get(`/v1/files?id=${newId("file")}`, f.key)).body.error).toMatchObject({ code: "file_not_found", param: "id" });
    expect((await get(`/v1/files?id=msg_123`, f.key)).body.error).toMatchObject({ code: "invalid_parameter_value", param: "id" });
    expect((await get(`/v1/files`, f.key)).body.error).toMatchObject({ code: "missing_required_parameter", param: "id" });

    const mine = await upload(f.key, "secret", { "content-type": "text/plain" });
    const other = await makeAccount();
    const res = await get(`/v1/files?id=${mine.body.id}`, other.key);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("file_not_found");
  });

  it("needs files:write to upload and files:read to download", async () => {
    const f = await makeAccount({ scopes: ["files:read"] });
    expect((await upload(f.key, "x")).body.error.code).toBe("insufficient_scope");
    const g = await makeAccount({ scopes: ["files:write"] });
    const up = await upload(g.key, "x");
    expect(up.status).toBe(201);
    expect((await get(`/v1/files?id=${up.body.id}`, g.key)).body.error.code).toBe("insufficient_scope");
  });
});
