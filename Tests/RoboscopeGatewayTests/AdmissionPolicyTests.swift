@testable import RoboscopeGateway
import Foundation
import RoboscopeAuth
import RoboscopeDomain
import Testing
import WebSocketCodec
import TestInstants

@Suite struct AdmissionPolicyTests {
    static let token = "a-static-token-of-acme"
    static let acme = Principal(
        subject: "ana", tenant: "acme", scopes: Scopes([.read]),
        expiresAt: Timestamp(microsecondsSinceEpoch: 1_000_000_000_000_000))

    func policy(
        authenticated: Bool = false, configure: (inout GatewayConfiguration) -> Void = { _ in }
    ) -> AdmissionPolicy {
        var configuration = GatewayConfiguration()
        configuration.maxConnectionsPerClient = 3
        if authenticated {
            configuration.authentication = TokenVerifier(
                keys: VerificationKeys(), staticTokens: [Digest.sha256Hex(Self.token): Self.acme])
        }
        configure(&configuration)
        return AdmissionPolicy(configuration: configuration)
    }

    /// An upgrade request for `path` with `headers`, as the parser makes it.
    func request(_ path: String = "/api/v1/ws", _ headers: [String: String] = [:]) throws -> UpgradeRequest {
        let head =
            "GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + headers.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n"
        guard case .request(let request, _) = Array(head.utf8).withUnsafeBytes({ UpgradeParser.parse($0) }) else {
            throw UnparsedHead()
        }
        return request
    }

    func status(_ decision: AdmissionPolicy.Decision) -> Int? {
        if case .refused(let rejection, _) = decision { return rejection.status }
        return nil
    }

    @Test func withoutAuthenticationEveryoneIsAnonymousInTheDefaultTenant() throws {
        guard
            case .admitted(let principal) = policy().decide(
                try request(), connectionsOfClient: 1, isShuttingDown: false)
        else {
            Issue.record("expected admitted"); return
        }
        #expect(principal.subject == "anonymous")
        #expect(principal.tenant == "default")
    }

    @Test func refusalsComeInOrderShutdownPathOriginCap() throws {
        let policy = policy()
        #expect(status(policy.decide(try request("/nowhere"), connectionsOfClient: 9, isShuttingDown: true)) == 503)
        #expect(status(policy.decide(try request("/nowhere"), connectionsOfClient: 9, isShuttingDown: false)) == 404)
        #expect(
            status(policy.decide(try request("/api/v1/ws/echo"), connectionsOfClient: 1, isShuttingDown: false)) == 404,
            "echo only when configured")
        #expect(
            status(
                policy.decide(
                    try request("/api/v1/ws", ["Origin": "https://evil.example"]), connectionsOfClient: 9,
                    isShuttingDown: false)) == 403)
        #expect(status(policy.decide(try request(), connectionsOfClient: 4, isShuttingDown: false)) == 429)
        #expect(
            status(policy.decide(try request(), connectionsOfClient: 3, isShuttingDown: false)) == nil,
            "at the cap is fine")
        #expect(
            status(
                policy.decide(
                    try request("/api/v1/ws", ["Origin": "http://localhost"]), connectionsOfClient: 1,
                    isShuttingDown: false)) == nil, "the page's own origin")
    }

    @Test func aTokenOnTheUpgradeNamesThePrincipalAndABadOneIs401() throws {
        let policy = policy(authenticated: true)
        guard
            case .admitted(let principal) = policy.decide(
                try request("/api/v1/ws", ["Authorization": "Bearer \(Self.token)"]),
                connectionsOfClient: 1, isShuttingDown: false)
        else {
            Issue.record("expected admitted"); return
        }
        #expect(principal == Self.acme)
        #expect(
            status(
                policy.decide(
                    try request("/api/v1/ws", ["Authorization": "Bearer wrong"]), connectionsOfClient: 1,
                    isShuttingDown: false)) == 401)
        guard case .awaitingToken = policy.decide(try request(), connectionsOfClient: 1, isShuttingDown: false) else {
            Issue.record("a browser's upgrade (no header) waits for the auth op"); return
        }
    }

    @Test func aTrustedProxyNamesTheClientAndAnyoneElseIsThePeer() {
        let policy = policy { $0.trustedProxies = TrustedProxies([TrustedProxies.Network("10.0.0.0/8")!]) }
        let forwarded = try? request("/api/v1/ws", ["X-Forwarded-For": "203.0.113.7"])
        #expect(policy.client(of: forwarded!, peer: "10.1.2.3") == "203.0.113.7")
        #expect(
            policy.client(of: forwarded!, peer: "198.51.100.1") == "198.51.100.1",
            "an untrusted peer cannot name another")
    }

    @Test func aTokenHoldsUntilItsExpiryPlusTheLeewayOnTheConnectionsClock() {
        let policy = policy(authenticated: true)
        let wallNow = Date(timeIntervalSince1970: 1_000_000_000 - 100)
        let until = policy.validUntil(of: Self.acme, now: TestInstant.zero, wallNow: wallNow)
        // 100 s to `exp`, and the 60 s of leeway every request gets.
        #expect(until == TestInstant.zero + .seconds(160))
        #expect(
            policy.validUntil(
                of: .unauthenticated(actor: "anonymous", tenant: "default"), now: TestInstant.zero, wallNow: wallNow)
                == nil)
    }

    /// Issue 45: a token whose `exp` was 9223372036852 passed REST and crashed the upgrade
    /// here (microseconds overflowed). Dates now stop at year 9999, and a connection's
    /// deadline is bounded however far its token's `exp` is.
    @Test func aTokenValidUntilTheYear9999GivesABoundedDeadline() {
        let policy = policy(authenticated: true)
        var principal = Self.acme
        principal.expiresAt = Timestamp(microsecondsSinceEpoch: 253_402_300_799 * 1_000_000)
        let until = policy.validUntil(of: principal, now: TestInstant.zero, wallNow: Date(timeIntervalSince1970: 0))
        #expect(until == TestInstant.zero + AdmissionPolicy.longestDeadline)
    }
}

struct UnparsedHead: Error {}
