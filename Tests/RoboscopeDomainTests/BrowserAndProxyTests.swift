import Testing
import RoboscopeDomain

/// `--allowed-origins` and `--trusted-proxies` on their own (docs/security.md).
@Suite struct OriginPolicyTests {
    func policy(_ list: String) throws -> OriginPolicy {
        try OriginPolicy.parse(list).get()
    }

    @Test func aRequestWithoutAnOriginIsANativeClientAndPasses() throws {
        #expect(try policy("").permits(origin: nil, host: "api.example.com"))
    }

    @Test func aForeignOriginIsRefusedAndAListedOrSameOneAllowed() throws {
        let listed = try policy("https://app.example.com, http://localhost:3000")
        #expect(!listed.permits(origin: "https://evil.example", host: "api.example.com"))
        #expect(listed.permits(origin: "https://APP.example.com", host: "api.example.com"))
        #expect(listed.permits(origin: "https://app.example.com:443", host: "api.example.com"))
        #expect(listed.permits(origin: "http://localhost:3000", host: "api.example.com"))
        #expect(!listed.permits(origin: "http://localhost:3001", host: "api.example.com"))
        #expect(
            !listed.permits(origin: "http://app.example.com", host: "api.example.com"),
            "the scheme is part of the origin")
        // The page the request's own host served (the console) is same-origin.
        #expect(listed.permits(origin: "http://api.example.com:8080", host: "api.example.com:8080"))
        #expect(listed.permits(origin: "https://api.example.com", host: "api.example.com"))
        #expect(!listed.permits(origin: "http://api.example.com:8081", host: "api.example.com:8080"))
        #expect(!listed.permits(origin: "null", host: "null"))
        #expect(!listed.permits(origin: "https://app.example.com.evil.example", host: nil))
    }

    @Test func aStarAllowsEveryOriginAndBadEntriesAreNamed() throws {
        #expect(try policy("*").permits(origin: "https://anything.example", host: nil))
        #expect(OriginPolicy.parse("https://ok.example,ftp://x").failure?.entry == "ftp://x")
        #expect(OriginPolicy.parse("https://ok.example/path").failure?.entry == "https://ok.example/path")
    }
}

@Suite struct TrustedProxiesTests {
    func proxies(_ list: String) throws -> TrustedProxies {
        try TrustedProxies.parse(list).get()
    }

    @Test func forwardedForIsBelievedOnlyFromATrustedPeer() throws {
        let trusted = try proxies("10.0.0.0/8, ::1")
        #expect(trusted.clientAddress(peer: "203.0.113.7", forwardedFor: "198.51.100.1") == "203.0.113.7")
        #expect(trusted.clientAddress(peer: "10.1.2.3", forwardedFor: "198.51.100.1") == "198.51.100.1")
        #expect(trusted.clientAddress(peer: "::1", forwardedFor: "198.51.100.1") == "198.51.100.1")
        #expect(trusted.clientAddress(peer: "10.1.2.3", forwardedFor: nil) == "10.1.2.3")
        // A client's own forged entry sits left of the address the proxy appended.
        #expect(
            trusted.clientAddress(peer: "10.1.2.3", forwardedFor: "1.2.3.4, 198.51.100.1, 10.9.9.9") == "198.51.100.1")
        #expect(trusted.clientAddress(peer: "10.1.2.3", forwardedFor: "garbage, 198.51.100.1") == "198.51.100.1")
        #expect(trusted.clientAddress(peer: "10.1.2.3", forwardedFor: "<script>") == "10.1.2.3")
        #expect(try proxies("").clientAddress(peer: "10.1.2.3", forwardedFor: "198.51.100.1") == "10.1.2.3")
    }

    @Test func networksMatchByPrefixInBothFamilies() throws {
        let trusted = try proxies("192.168.4.0/22,fd00::/8,2001:db8::1")
        #expect(trusted.trusts("192.168.7.255"))
        #expect(!trusted.trusts("192.168.8.0"))
        #expect(trusted.trusts("fd12:3456::1"))
        #expect(!trusted.trusts("fe80::1"))
        #expect(trusted.trusts("2001:db8:0:0:0:0:0:1"))
        #expect(!trusted.trusts("2001:db8::2"))
        #expect(trusted.trusts("::ffff:192.168.5.1"), "an IPv4 peer on a dual-stack socket")
        #expect(TrustedProxies.parse("10.0.0.0/33").failure?.entry == "10.0.0.0/33")
        #expect(TrustedProxies.parse("10.0.0.256").failure?.entry == "10.0.0.256")
        #expect(TrustedProxies.parse("1:2:3:4:5:6:7:8:9").failure != nil)
    }
}

@Suite struct TokenBucketTests {
    @Test func aBucketRefillsToItsBurstAndAChargeLeavesDebt() {
        var bucket = TokenBucket(rate: 2, burst: 4, now: 0)
        for _ in 0..<4 { #expect(bucket.take(now: 0) == nil) }
        #expect(bucket.take(now: 0) == 1, "half a second per token, rounded up")
        #expect(bucket.take(now: 0.5) == nil)
        bucket.charge(10, now: 100)
        // Full (4) after the wait, then 10 charged: six in debt, seven short of a token.
        #expect(bucket.take(now: 100) == 4, "3.5 s, rounded up")
        #expect(!bucket.isFull(at: 104))
        #expect(bucket.isFull(at: 105))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
