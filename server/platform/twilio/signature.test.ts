import { describe, expect, it } from "vitest";
import { bodySha256, formParams, signatureUrls, signedString, twilioSignature, validTwilioJsonSignature, validTwilioSignature } from "./signature";

// Twilio's published test vectors (twilio-php tests/Twilio/Unit/RequestValidatorTest.php, the same
// in twilio-csharp, twilio-python and the docs; PLATFORMS.md §3.4).

const TOKEN = "12345";
const URL = "https://mycompany.com/myapp.php?foo=1&bar=2";
const PARAMS = formParams(new URLSearchParams({ CallSid: "CA1234567890ABCDE", Caller: "+14158675309", Digits: "1234", From: "+14158675309", To: "+18005551212" }));

describe("X-Twilio-Signature", () => {
  it("vector 1: the documented string and signature", () => {
    expect(signedString(URL, PARAMS)).toBe("https://mycompany.com/myapp.php?foo=1&bar=2CallSidCA1234567890ABCDECaller+14158675309Digits1234From+14158675309To+18005551212");
    expect(twilioSignature(TOKEN, URL, PARAMS)).toBe("RSOYDt4T1cUTdK1PDd93/VVr8B8=");
    expect(validTwilioSignature(TOKEN, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", URL, PARAMS)).toBe(true);
  });

  it("vector 2: signed with :443 in the URL; accepted whichever way either side spells the port", () => {
    const withPort = "https://mycompany.com:443/myapp.php?foo=1&bar=2";
    expect(twilioSignature(TOKEN, withPort, PARAMS)).toBe("kvajT1Ptam85bY51eRf/AJRuM3w=");
    expect(validTwilioSignature(TOKEN, "kvajT1Ptam85bY51eRf/AJRuM3w=", URL, PARAMS)).toBe(true);
    expect(validTwilioSignature(TOKEN, "kvajT1Ptam85bY51eRf/AJRuM3w=", withPort, PARAMS)).toBe(true);
    expect(validTwilioSignature(TOKEN, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", withPort, PARAMS)).toBe(true);
    expect(signatureUrls(URL)).toEqual(expect.arrayContaining([URL, "https://mycompany.com:443/myapp.php?foo=1&bar=2"]));
    expect(signatureUrls("http://h.example/x")).toContain("http://h.example:80/x");
  });

  it("vector 3: a repeated name contributes each distinct value, sorted", () => {
    const repeated = formParams("Digits=5678&Digits=1234&Digits=1234&Sid=CA123&SidAccount=AC123");
    expect(repeated.get("Digits")).toEqual(["5678", "1234", "1234"]);
    expect(signedString(URL, repeated)).toBe(`${URL}Digits1234Digits5678SidCA123SidAccountAC123`);
    expect(twilioSignature(TOKEN, URL, repeated)).toBe("IK+Dwps556ElfBT0I3Rgjkr1wJU=");
    expect(validTwilioSignature(TOKEN, "IK+Dwps556ElfBT0I3Rgjkr1wJU=", URL, repeated)).toBe(true);
  });

  it("vector 4: a JSON body is signed through the bodySHA256 in its URL", () => {
    const body = '{"property": "value", "boolean": true}';
    expect(bodySha256(body)).toBe("0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620");
    const url = `${URL}&bodySHA256=${bodySha256(body)}`;
    expect(twilioSignature(TOKEN, url)).toBe("a9nBmqA0ju/hNViExpshrM61xv4=");
    expect(validTwilioJsonSignature(TOKEN, "a9nBmqA0ju/hNViExpshrM61xv4=", url, body)).toBe(true);
    expect(validTwilioJsonSignature(TOKEN, "a9nBmqA0ju/hNViExpshrM61xv4=", url, '{"property": "other", "boolean": true}')).toBe(false);
  });

  it("refuses another token, URL, parameter set or a missing signature", () => {
    const good = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
    expect(validTwilioSignature("54321", good, URL, PARAMS)).toBe(false);
    expect(validTwilioSignature(TOKEN, good, "https://mycompany.com/myapp.php?foo=1&bar=3", PARAMS)).toBe(false);
    expect(validTwilioSignature(TOKEN, good, "http://mycompany.com/myapp.php?foo=1&bar=2", PARAMS)).toBe(false);
    const extra = formParams(new URLSearchParams([...PARAMS].map(([k, v]) => [k, v[0]!]).concat([["Body", "x"]])));
    expect(validTwilioSignature(TOKEN, good, URL, extra)).toBe(false);
    expect(validTwilioSignature(TOKEN, "", URL, PARAMS)).toBe(false);
    expect(validTwilioSignature("", good, URL, PARAMS)).toBe(false);
    expect(validTwilioSignature(TOKEN, `${good}x`, URL, PARAMS)).toBe(false);
  });

  it("accepts a query Twilio signed with characters Node's URL escapes (the official libraries' legacy form)", () => {
    const raw = "https://example.com/path?test=param'WithQuote";
    const signature = twilioSignature("s3cr3t", raw);
    expect(validTwilioSignature("s3cr3t", signature, "https://example.com/path?test=param%27WithQuote")).toBe(true);
    expect(validTwilioSignature("s3cr3t", twilioSignature("s3cr3t", "https://example.com/path?test=param%27WithQuote"), raw)).toBe(true);
  });
});
