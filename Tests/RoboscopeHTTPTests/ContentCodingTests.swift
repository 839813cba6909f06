import Testing
@testable import RoboscopeHTTP

/// Which coding an answer gets from `Accept-Encoding`, and what a body's
/// `Content-Encoding` means.
@Suite struct ContentCodingTests {
    @Test func gzipIsPreferredWhenAcceptedAndWeightsCount() {
        #expect(ContentCoding.preferred(accepting: ["gzip, deflate, br"]) == .gzip)
        #expect(ContentCoding.preferred(accepting: ["deflate"]) == .deflate)
        #expect(ContentCoding.preferred(accepting: ["br;q=1.0, gzip;q=0.5"]) == .gzip)
        #expect(ContentCoding.preferred(accepting: ["gzip;q=0", "deflate;q=0.1"]) == .deflate)
        #expect(ContentCoding.preferred(accepting: ["*"]) == .gzip)
        #expect(ContentCoding.preferred(accepting: ["*;q=0, identity"]) == nil)
        #expect(ContentCoding.preferred(accepting: ["GZIP ; Q=0.8"]) == .gzip)
        #expect(ContentCoding.preferred(accepting: []) == nil)
        #expect(ContentCoding.preferred(accepting: ["br, zstd"]) == nil)
    }

    @Test func aBodysCodingIsKnownIdentityOrRefused() throws {
        #expect(try ContentCoding.of(body: "gzip").get() == .gzip)
        #expect(try ContentCoding.of(body: " x-gzip ").get() == .gzip)
        #expect(try ContentCoding.of(body: "Deflate").get() == .deflate)
        #expect(try ContentCoding.of(body: "identity").get() == nil)
        #expect(throws: ContentCoding.UnknownCoding.self) { try ContentCoding.of(body: "br").get() }
    }
}
