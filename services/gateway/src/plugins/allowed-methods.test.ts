import { describe, expect, it } from "vitest";
import { methodTable } from "./allowed-methods.js";

describe("docs/api/conventions.md §Errors: the methods a path answers, for 405 and Allow", () => {
  const table = methodTable();
  table.add("GET", "/api/v1/contacts");
  table.add("POST", "/api/v1/contacts");
  table.add(["GET", "PATCH"], "/api/v1/contacts/:id");
  table.add("POST", "/api/v1/contacts/:id/archive");
  table.add("get", "/docs/*");
  table.add("GET", "/api/v1/openapi.json");

  it("a path's methods, with HEAD wherever GET is, sorted", () => {
    expect(table.allowed("/api/v1/contacts")).toEqual(["GET", "HEAD", "POST"]);
    expect(table.allowed("/api/v1/contacts/ct_1")).toEqual(["GET", "HEAD", "PATCH"]);
    expect(table.allowed("/api/v1/contacts/ct_1/archive")).toEqual(["POST"]);
  });

  it("a parameter is one segment; a wildcard any rest; nothing else matches", () => {
    expect(table.allowed("/api/v1/contacts/a/b")).toEqual([]);
    expect(table.allowed("/api/v1/contacts/")).toEqual([]);
    expect(table.allowed("/docs/static/index.html")).toEqual(["GET", "HEAD"]);
    expect(table.allowed("/nothing")).toEqual([]);
  });

  it("characters of a path are literal, never a pattern: openapi.json does not match openapiXjson", () => {
    expect(table.allowed("/api/v1/openapi.json")).toEqual(["GET", "HEAD"]);
    expect(table.allowed("/api/v1/openapiXjson")).toEqual([]);
  });
});
