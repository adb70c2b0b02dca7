import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { newId } from "@/server/kernel/ids";
import { bodyChunks, readBody } from "@/server/transports/http/body";
import { localStorage } from "@/server/storage";
import { storeBlob } from "@/server/storage/blobs";
import { call, dispatch, expectRequestId, get, gql, makeAccount, makeKey, phone, post } from "./helpers";

/** Fetches a signed download link through the real route. */
const download = (url: string, headers: Record<string, string> = {}) => dispatch(new Request(url, { headers }));

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

  it("serves only inert types inline; HTML, SVG, XHTML and the rest download as attachments, all under a sandbox CSP with nosniff", async () => {
    const f = await makeAccount();
    const cases: [string, string][] = [
      ["text/html", "attachment"],
      ["image/svg+xml", "attachment"],
      ["application/xhtml+xml", "attachment"],
      ["text/xml", "attachment"],
      ["application/javascript", "attachment"],
      ["application/octet-stream", "attachment"],
      ["text/plain", "attachment"],
      ["image/png", "inline"],
      ["audio/mpeg", "inline"],
      ["video/mp4", "inline"],
      ["application/pdf", "inline"],
    ];
    for (const [type, mode] of cases) {
      const up = await upload(f.key, "<script>fetch('/api/trpc/apiKeys.create')</script>", { "content-type": type, "x-filename": "évil\".html" });
      expect(up.status).toBe(201);
      const res = await download(up.body.url);
      expect(res.status, type).toBe(200);
      expect(res.headers.get("content-disposition"), type).toBe(`${mode}; filename="_vil_.html"; filename*=UTF-8''%C3%A9vil%22.html`);
      expect(res.headers.get("content-security-policy"), type).toBe("sandbox; default-src 'none'");
      expect(res.headers.get("x-content-type-options"), type).toBe("nosniff");
      expect(res.headers.get("request-id"), type).toMatch(/^req_/);
    }
  });

  it("a signed link verifies only as signed: a leading zero, a sign or spaces in expires are refused", async () => {
    const f = await makeAccount();
    const up = await upload(f.key, "x", { "content-type": "text/plain" });
    expect((await download(up.body.url)).status).toBe(200);
    const url = new URL(up.body.url);
    const expires = url.searchParams.get("expires")!;
    for (const altered of [`0${expires}`, `00${expires}`, `+${expires}`, `${expires}.0`, `${expires} `]) {
      url.searchParams.set("expires", altered);
      const res = await download(url.toString());
      expect(res.status, altered).toBe(404);
      expect((await res.json()).error).toMatchObject({ code: "file_not_found" });
    }
  });

  describe("FILES_PUBLIC_URL", () => {
    afterEach(() => {
      delete process.env.FILES_PUBLIC_URL;
      resetConfig();
    });

    it("links point at the files origin, and the download route serves only requests addressed to it", async () => {
      process.env.FILES_PUBLIC_URL = "https://files.relay.test/";
      resetConfig();
      const f = await makeAccount();
      const up = await upload(f.key, "hello", { "content-type": "text/plain" });
      expect(up.body.url).toMatch(/^https:\/\/files\.relay\.test\/api\/files\/file_\w+\?expires=\d+&signature=/);
      const redirect = await get(`/v1/files?id=${up.body.id}`, f.key);
      expect(redirect.headers.get("location")).toMatch(/^https:\/\/files\.relay\.test\/api\/files\//);

      const ok = await download(up.body.url);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe("hello");
      // The same link on the dashboard's origin, directly or through a proxy.
      const onDashboard = new URL(up.body.url);
      onDashboard.host = "localhost:3000";
      onDashboard.protocol = "http:";
      const refused = await download(onDashboard.toString());
      expect(refused.status).toBe(404);
      expect((await refused.json()).error.code).toBe("file_not_found");
      expect((await download(up.body.url, { "x-forwarded-host": "localhost:3000" })).status).toBe(404);
      expect((await download(onDashboard.toString(), { "x-forwarded-host": "files.relay.test" })).status).toBe(200);
    });
  });

  it("a line-restricted key cannot download, attach or read files received on lines it may not use", async () => {
    const a = await makeAccount();
    const { createLine } = await import("@/server/services/lines/lines");
    const second = await createLine({ accountId: a.accountId, handle: phone() });
    const attachment = (name: string) => ({ filename: name, mime_type: "image/png", content_base64: Buffer.from(name).toString("base64") });
    const alice = phone();
    const elsewhere = await post("/api/simulator/messages", a.key, { line: second.handle, from: phone(), text: "x", attachment: attachment("b.png") });
    const here = await post("/api/simulator/messages", a.key, { line: a.line.handle, from: alice, text: "x", attachment: attachment("a.png") });
    const hidden: string = elsewhere.body.attachments[0].file_id;
    const visible: string = here.body.attachments[0].file_id;
    const restricted = await makeKey(a.accountId, { lineIds: [a.line.id] });
    const uploaded = (await upload(restricted, "mine", { "content-type": "text/plain" })).body.id as string;

    const refused = await get(`/v1/files?id=${hidden}`, restricted);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: "line_not_accessible", param: "id" });
    expectRequestId(refused);
    const attach = await post("/v1/messages", restricted, { from: a.line.handle, to: alice, attachments: [hidden] });
    expect(attach.status).toBe(403);
    expect(attach.body.error).toMatchObject({ code: "line_not_accessible", param: "attachments" });
    const memo = await post("/v1/audio-messages", restricted, { from: a.line.handle, to: alice, audio_message: hidden });
    expect(memo.status).toBe(403);
    expect(memo.body.error).toMatchObject({ code: "line_not_accessible", param: "audio_message" });
    const graph = await gql(restricted, `query($id: String!) { file(id: $id) { id url } }`, { id: hidden });
    expect(graph.body.data?.file ?? null).toBeNull();
    expect(graph.body.errors[0].extensions).toMatchObject({ code: "line_not_accessible" });

    // Its own line's files, its uploads and the unrestricted key's access are unchanged.
    for (const id of [visible, uploaded]) expect((await get(`/v1/files?id=${id}`, restricted)).status).toBe(302);
    expect((await gql(restricted, `query($id: String!) { file(id: $id) { id } }`, { id: visible })).body.data.file.id).toBe(visible);
    for (const id of [visible, uploaded]) {
      const sent = await post("/v1/messages", restricted, { from: a.line.handle, to: alice, attachments: [id] });
      expect(sent.body).toMatchObject({ object: "outbox_item", status: "pending" });
    }
    expect((await get(`/v1/files?id=${hidden}`, a.key)).status).toBe(302);
  });

  it("a file of another line that an unrestricted key sent on the restricted key's line: link, GET /v1/files and GraphQL agree", async () => {
    const { claimOne } = await import("@/server/outbox/queue");
    const { recordOne, sendOne } = await import("@/server/outbox/deliver");
    const a = await makeAccount();
    const { createLine } = await import("@/server/services/lines/lines");
    const second = await createLine({ accountId: a.accountId, handle: phone() });
    const alice = phone();
    await post("/api/simulator/messages", a.key, { line: a.line.handle, from: alice, text: "hi" });
    const received = await post("/api/simulator/messages", a.key, {
      line: second.handle,
      from: phone(),
      text: "x",
      attachment: { filename: "b.png", mime_type: "image/png", content_base64: Buffer.from("b-bytes").toString("base64") },
    });
    const fileId: string = received.body.attachments[0].file_id;
    const restricted = await makeKey(a.accountId, { lineIds: [a.line.id] });
    expect((await get(`/v1/files?id=${fileId}`, restricted)).status).toBe(403);

    // The account's unrestricted key sends the second line's file on the first line.
    const accepted = await post("/v1/messages", a.key, { from: a.line.handle, to: alice, attachments: [fileId] });
    expect(await claimOne(accepted.body.id, "test")).not.toBeNull();
    expect(await recordOne(accepted.body.id, (await sendOne(accepted.body.id))!)).toMatchObject({ status: "sent" });

    // The restricted key reads its line's message with the file, and every way to the bytes answers alike.
    const page = await get(`/v1/messages?from=${encodeURIComponent(a.line.handle)}&to=${encodeURIComponent(alice)}`, restricted);
    const sent = page.body.data.find((m: { outbox_id: string }) => m.outbox_id === accepted.body.id);
    expect(sent.attachments[0]).toMatchObject({ file_id: fileId, filename: "b.png" });
    const viaLink = await download(sent.attachments[0].url);
    expect(viaLink.status).toBe(200);
    expect(Buffer.from(await viaLink.arrayBuffer()).toString()).toBe("b-bytes");
    const viaApi = await get(`/v1/files?id=${fileId}`, restricted);
    expect(viaApi.status).toBe(302);
    expect((await download(viaApi.headers.get("location")!)).status).toBe(200);
    expect((await gql(restricted, `query($id: String!) { file(id: $id) { id } }`, { id: fileId })).body.data.file.id).toBe(fileId);
    // A key restricted to a third line still gets nothing.
    const third = await createLine({ accountId: a.accountId, handle: phone() });
    expect((await get(`/v1/files?id=${fileId}`, await makeKey(a.accountId, { lineIds: [third.id] }))).status).toBe(403);
  });

  it("streams uploads: refused before the body is read for a bad Content-Type or Content-Length, cut off at the limit otherwise, nothing kept", async () => {
    const f = await makeAccount();
    /** An endless body that counts how many chunks were read from it and whether it was cancelled. */
    const endless = () => {
      const state = { pulls: 0, cancelled: false };
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          state.pulls++;
          controller.enqueue(new Uint8Array(64 * 1024));
        },
        cancel() {
          state.cancelled = true;
        },
      });
      return { state, body };
    };
    const request = (body: ReadableStream<Uint8Array>, headers: Record<string, string>) =>
      new Request("http://localhost:3000/v1/files", { method: "POST", body, duplex: "half", headers: { authorization: `Bearer ${f.key}`, ...headers } } as RequestInit);

    const badType = endless();
    const refused = await dispatch(request(badType.body, { "content-type": "not a type" }));
    expect(refused.status).toBe(400);
    const json = await refused.json();
    expect(json.error).toMatchObject({ code: "invalid_parameter_value", param: "Content-Type" });
    expect(json.request_id).toMatch(/^req_/);
    expect(badType.state.pulls).toBeLessThanOrEqual(1); // at most the stream's own first pull

    const declared = endless();
    const tooBig = bodyChunks(request(declared.body, { "content-length": String(200 * 1024 * 1024) }), 1024 * 1024);
    await expect(storeBlob(tooBig, 1024 * 1024)).rejects.toMatchObject({ code: "file_too_large", status: 413 });
    expect(declared.state.pulls).toBeLessThanOrEqual(1);

    const growing = endless();
    await expect(storeBlob(bodyChunks(request(growing.body, {}), 1024 * 1024), 1024 * 1024)).rejects.toMatchObject({ code: "file_too_large" });
    expect(growing.state.pulls).toBeLessThanOrEqual(20); // 1 MiB is 16 chunks: the rest was never read
    expect(growing.state.cancelled).toBe(true);

    // On disk, a failed upload leaves neither the file nor its partial copy.
    const root = await mkdtemp(path.join(os.tmpdir(), "relay-storage-"));
    try {
      const failing = async function* () {
        yield new Uint8Array(10);
        throw new Error("connection lost");
      };
      await expect(localStorage(root).put("ab/file_x", failing())).rejects.toThrow("connection lost");
      expect(await readdir(path.join(root, "ab"))).toEqual([]);
      expect(await localStorage(root).open("ab/file_x")).toBeNull();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("downloads a file whatever its stored name: quotes, apostrophes, non-Latin letters; a lone surrogate is refused", async () => {
    const f = await makeAccount();
    const names: [string, string][] = [
      ["it's (final)*.pdf", `inline; filename="it's (final)*.pdf"; filename*=UTF-8''it%27s%20%28final%29%2A.pdf`],
      ["日本.pdf", `inline; filename="__.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.pdf`],
    ];
    for (const [filename, disposition] of names) {
      const res = await gql(f.key, `mutation($input: UploadFileInput!) { uploadFile(input: $input) { url } }`, {
        input: { contentBase64: "JVBERi0=", mimeType: "application/pdf", filename },
      });
      const file = await download(res.body.data.uploadFile.url);
      expect(file.status, filename).toBe(200);
      expect(file.headers.get("content-disposition")).toBe(disposition);
    }
    // A name the database could not store is refused up front, naming the field.
    const refused = await gql(f.key, `mutation($input: UploadFileInput!) { uploadFile(input: $input) { url } }`, {
      input: { contentBase64: "JVBERi0=", mimeType: "application/pdf", filename: "x\ud800y.pdf" },
    });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: "invalid_parameter_value" });
  });
});
