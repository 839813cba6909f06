import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
@testable import RoboscopeHTTP
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeRedis

/// Routes tested in process (Hummingbird's test framework, no sockets, no server
/// process): what a request is refused for before it reaches a database, the error
/// shape, and a database that cannot be reached. Postgres and Redis point at a closed
/// port here.
@Suite struct InProcessTests {
    static func services() -> APIServices {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let pool = PostgresPool(url: "postgres://nobody@127.0.0.1:9/none?connect_timeout=1", size: 1, logger: logger)
        let redis = RedisPool(url: RedisURL("redis://127.0.0.1:9/0")!, size: 1, logger: logger)
        return APIServices(
            store: EventStore(pool: pool), reads: ReadModels(pool: pool), audit: AuditReader(pool: pool),
            timeTravel: TimeTravel(pool: pool), presence: PresenceStore(redis: redis, window: .seconds(30)),
            locks: LockStore(redis: redis)
        )
    }

    static let app = Application(router: APIServer.router(services: services()))

    /// The `error` object of a response.
    /// An unparsable body gives an empty object, so the field checks fail and say so.
    static func error(_ buffer: ByteBuffer) -> JSONObject {
        (try? JSONParser.parse(Array(buffer.readableBytesView)))?.objectValue?["error"]?.objectValue ?? [:]
    }

    @Test func badParametersOfTheChangesFeedAreNamed() async throws {
        let cases: [(String, String)] = [
            ("", "topic"), ("topic=session:x", "topic"), ("topic=space:\(UUID())&since=-1", "since"),
            ("topic=space:\(UUID())&limit=0", "limit"), ("topic=space:\(UUID())&limit=1001", "limit"),
            ("topic=space:\(UUID())&wait=31", "wait"), ("topic=space:\(UUID())&wait=nan", "wait"),
        ]
        try await Self.app.test(.router) { client in
            for (query, field) in cases {
                try await client.execute(uri: "/api/v1/changes?\(query)", method: .get) { response in
                    #expect(response.status == .badRequest, "\(query)")
                    #expect(Self.error(response.body)["field"] == .string(field), "\(query)")
                    let requestID = Self.error(response.body)["request_id"]
                    #expect(requestID != nil)
                }
            }
        }
    }

    @Test func badPlacesAndPagesAreNamed() async throws {
        let session = UUID().uuidString
        let cases: [(String, String)] = [
            ("near=1&range=2", "near"), ("near=1,2", "range"), ("near=1,2&range=-1", "range"), ("bbox=1,2,3", "bbox"),
            ("bbox=5,0,1,1", "bbox"), ("limit=0", "limit"), ("limit=10001", "limit"), ("after=x", "after"),
        ]
        try await Self.app.test(.router) { client in
            for (query, field) in cases {
                try await client.execute(uri: "/api/v1/markers?work_session_id=\(session)&\(query)", method: .get) {
                    response in
                    #expect(response.status == .badRequest, "\(query)")
                    #expect(Self.error(response.body)["field"] == .string(field), "\(query)")
                }
            }
        }
    }

    @Test func malformedIdempotencyKeysAreRefusedBeforeAnythingHappens() async throws {
        try await Self.app.test(.router) { client in
            for key in ["", String(repeating: "k", count: 256), "tab\there", "ü"] {
                var headers = HTTPFields()
                headers[HTTPField.Name("Idempotency-Key")!] = key
                headers[.contentType] = "application/json"
                try await client.execute(
                    uri: "/api/v1/markers", method: .post, headers: headers, body: ByteBuffer(string: "{}")
                ) { response in
                    #expect(response.status == .badRequest)
                    #expect(Self.error(response.body)["field"] == .string("Idempotency-Key"))
                }
            }
        }
    }

    @Test func anUnreachableDatabaseIs503WithRetryAfter() async throws {
        try await Self.app.test(.router) { client in
            try await client.execute(uri: "/api/v1/spaces", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
                #expect(Self.error(response.body)["code"] == .string("service_unavailable"))
            }
        }
    }

    @Test func unknownRoutesAndMethodsGetTheErrorShape() async throws {
        try await Self.app.test(.router) { client in
            try await client.execute(uri: "/api/v1/nothing-here", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(Self.error(response.body)["code"] == .string("not_found"))
            }
        }
    }

    @Test func anErrorCodeWithoutAStatusIsAServerErrorNotA400() {
        #expect(APIError.status(for: .invalidField) == .unprocessableContent)
        #expect(APIError.status(for: .idempotencyKeyInProgress) == .conflict)
        #expect(APIError.status(for: DomainError.Code("something_new")) == .internalServerError)
    }

    @Test func theRateLimiterRefillsOnItsClock() {
        let buckets = TokenBuckets(rate: 0.5, burst: 2)
        #expect(buckets.take(for: "a", now: 100) == nil)
        #expect(buckets.take(for: "a", now: 100) == nil)
        #expect(buckets.take(for: "a", now: 100) == 2, "one token every 2 s")
        #expect(buckets.take(for: "b", now: 100) == nil, "each client has its own bucket")
        #expect(buckets.take(for: "a", now: 101) == 1)
        #expect(buckets.take(for: "a", now: 102) == nil, "refilled")
        #expect(buckets.take(for: "a", now: 1000) == nil)
        #expect(buckets.take(for: "a", now: 1000) == nil, "never more than the burst")
        #expect(buckets.take(for: "a", now: 1000) != nil)
    }

    @Test func aLongPollIsChargedItsDurationIntoDebt() {
        let buckets = TokenBuckets(rate: 1, burst: 4)
        #expect(buckets.take(for: "poller", now: 100) == nil, "the poll's own token")
        buckets.charge(for: "poller", seconds: .seconds(25), now: 125)
        // Refilled to 4 over the 25 s, then 25 taken: -21, carried in full.
        #expect(buckets.take(for: "poller", now: 125) == 22, "twenty-two seconds until a token")
        #expect(buckets.take(for: "other", now: 125) == nil, "another client is not concerned")
        #expect(buckets.take(for: "poller", now: 146) != nil)
        #expect(buckets.take(for: "poller", now: 147) == nil)
    }

    /// Issue 45: a 5,000-marker bulk blocked its subject for 1.3 s instead of ~50 s, the
    /// debt floored at minus the burst. The whole charge is carried, whatever the burst.
    @Test func theWholeChargeIsCarriedWhateverTheBurst() {
        let buckets = TokenBuckets(rate: 100, burst: 200)
        #expect(buckets.take(for: "bulker", now: 0) == nil)
        buckets.charge(for: "bulker", cost: 4_999, now: 0)
        let wait = buckets.take(for: "bulker", now: 0)
        #expect(wait == 49, "(199 - 4,999 = -4,800; one token more at 100 a second)")
        #expect(buckets.take(for: "bulker", now: 48) != nil)
        #expect(buckets.take(for: "bulker", now: 48.02) == nil)
        #expect(RequestCost.beyondTheDoor(10_000 / RequestCost.rowsPerToken) == 99, "a list of 10,000 rows costs 100")
        #expect(RequestCost.beyondTheDoor(3 / RequestCost.rowsPerToken) == 0, "a small list costs its door token")
    }

    @Test func forgettingIdleClientsNeverForgivesADebt() {
        var limiter = RateLimiter(rate: 1, burst: 1)
        limiter.charge(for: "debtor", cost: 1_000, now: 0)
        for client in 1...RateLimiter.forgetAbove { _ = limiter.take(for: "\(client)", now: 0) }
        #expect(limiter.take(for: "new", now: 61) == nil)
        #expect(limiter.take(for: "debtor", now: 61) != nil, "still in debt after the sweep")
    }

    @Test func theRateLimiterForgetsIdleClientsOnlyWhenItHoldsTooMany() {
        var limiter = RateLimiter(rate: 1, burst: 1)
        for client in 1...RateLimiter.forgetAbove { _ = limiter.take(for: "\(client)", now: 0) }
        _ = limiter.take(for: "recent", now: 30)
        #expect(limiter.clientCount == RateLimiter.forgetAbove + 1)
        #expect(limiter.take(for: "new", now: 61) == nil)
        #expect(limiter.clientCount == 2, "the clients idle for a minute are forgotten, the recent one is kept")
        #expect(limiter.take(for: "recent", now: 61) == nil)
        #expect(limiter.take(for: "recent", now: 61) == 1, "its bucket survived the sweep")
    }

    @Test func theRealtimeURLNamesTheRequestsHostOnlyWhenItIsAllowed() {
        let settings = RealtimeSettings(port: 8081, allowedHosts: ["api.example.com", "[::1]"])
        #expect(settings.url(requestedAt: "API.example.com:8080") == "ws://api.example.com:8081/api/v1/ws")
        #expect(settings.url(requestedAt: "[::1]:8080") == "ws://[::1]:8081/api/v1/ws")
        #expect(
            settings.url(requestedAt: "evil.example:8080") == "ws://api.example.com:8081/api/v1/ws",
            "a Host that is not listed never comes back")
        #expect(settings.url(requestedAt: nil) == "ws://api.example.com:8081/api/v1/ws")
        #expect(RealtimeSettings(port: 9000).url(requestedAt: "127.0.0.1:8080") == "ws://127.0.0.1:9000/api/v1/ws")
        #expect(RealtimeSettings(port: 9000).url(requestedAt: "attacker.example") == "ws://localhost:9000/api/v1/ws")
        #expect(
            RealtimeSettings(url: "wss://rt.example.com/api/v1/ws").url(requestedAt: "evil.example")
                == "wss://rt.example.com/api/v1/ws")
    }
}
