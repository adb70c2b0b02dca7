import { describe, expect, it } from "vitest";
import { Prisma } from "../generated/prisma/client";
import { ApiError } from "../kernel/errors";
import { databaseFailure, databaseUnavailableError } from "./database-failures";

// What counts as the database failing (503 service_unavailable) and what does not (the error
// stays what it is: a 4xx ApiError, or a 500 for a bug).

const prismaError = (code: string, message: string) => new Prisma.PrismaClientKnownRequestError(message, { code, clientVersion: Prisma.prismaVersion.client });

describe("databaseFailure", () => {
  it("names an unreachable database: socket errors, connection SQLSTATEs, a closed pool, Prisma's P1001", () => {
    expect(databaseFailure(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }))).toBe("unreachable");
    expect(databaseFailure(new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })]))).toBe("unreachable");
    expect(databaseFailure(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe("unreachable");
    expect(databaseFailure(Object.assign(new Error("connection failure"), { code: "08006" }))).toBe("unreachable");
    expect(databaseFailure(new Error("Cannot use a pool after calling end on the pool"))).toBe("unreachable");
    expect(databaseFailure(prismaError("P1001", "Can't reach database server"))).toBe("unreachable");
    expect(databaseFailure(new Error("the PGlite thread exited (code 1)"))).toBe("unreachable");
    expect(databaseFailure(new Error("PGlite is closed"))).toBe("unreachable");
    expect(databaseFailure(new Error("wrapped", { cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }))).toBe("unreachable");
  });

  it("names an overloaded one: a transaction that cannot start in time, a pool wait that timed out, too many connections", () => {
    expect(databaseFailure(prismaError("P2028", "Transaction API error: Unable to start a transaction in the given time."))).toBe("overloaded");
    expect(databaseFailure(new Error("Unable to start a transaction in the given time."))).toBe("overloaded");
    expect(databaseFailure(new Error("timeout exceeded when trying to connect"))).toBe("overloaded");
    expect(databaseFailure(Object.assign(new Error("sorry, too many clients already"), { code: "53300" }))).toBe("overloaded");
  });

  it("leaves everything else alone: constraint violations, bad input, bugs, ApiErrors", () => {
    expect(databaseFailure(prismaError("P2002", "Unique constraint failed"))).toBeNull();
    expect(databaseFailure(Object.assign(new Error("invalid byte sequence for encoding \"UTF8\": 0x00"), { code: "22021" }))).toBeNull();
    expect(databaseFailure(new TypeError("Cannot read properties of undefined"))).toBeNull();
    expect(databaseUnavailableError(new ApiError("invalid_api_key", "Invalid API key."))).toBeNull();
  });

  it("becomes 503 service_unavailable with Retry-After", () => {
    const err = databaseUnavailableError(prismaError("P2024", "Timed out fetching a new connection from the connection pool."));
    expect(err).toMatchObject({ code: "service_unavailable", status: 503, type: "api_error" });
    expect(Number(err!.headers["Retry-After"])).toBeGreaterThan(0);
  });
});
