import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// The WebSocket side of docs/security.md: the `auth` op as a first message, refreshes,
/// expiry (4001), a refresh naming someone else (4003), narrowed `spaces` ending the
/// subscriptions they no longer cover. Leeway 0, so a token expires when its `exp` says.
@Suite(.serialized) struct GatewayAuthenticationTests {
    static let shared = LazyServer("ws_auth") {
        Tokens.serverArguments() + ["--auth-leeway", "0", "--ws-max-connections-per-client", "2000"]
    }

    func jwt(
        _ tenant: String = "acme", _ scope: String = "read write", sub: String = "fitter-1", spaces: [String]? = nil,
        lifetime: Double = 300
    ) throws -> String {
        var claims: [String: Any] = [
            "sub": sub, "tenant": tenant, "scope": scope, "exp": Date().timeIntervalSince1970 + lifetime,
        ]
        if let spaces { claims["spaces"] = spaces }
        return try Tokens.jwt(claims)
    }

    /// A space with one work session, made by an admin of `tenant`; their ids.
    func session(_ server: ServerProcess, tenant: String = "acme") async throws -> (space: String, session: String) {
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin"))
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": .string("k-\(UUID())"), "name": "n"], headers: admin)
        let spaceID = try #require(space.json["id"]?.string)
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions", json: ["space_id": .string(spaceID), "session_type": "inspection"],
            headers: admin)
        return (spaceID, try #require(session.json["id"]?.string))
    }

    func authenticate(_ socket: WebSocketClient, _ token: String) async throws -> JSONValue {
        try socket.send(["op": "auth", "token": .string(token)])
        return try await socket.nextJSON()
    }

    /// The answer to a subscribe (`subscribed` or `error`), past presence and events.
    func subscribe(_ socket: WebSocketClient, _ topic: String) async throws -> JSONValue {
        try socket.send(["op": "subscribe", "topic": .string(topic)])
        while true {
            let message = try await socket.nextJSON()
            if message["op"] == "subscribed" || message["op"] == "error" { return message }
        }
    }

    @Test func anUpgradeWithoutATokenWaitsForTheAuthOpAndAnythingElseIs4001() async throws {
        let server = try await Self.shared.get().server
        let (_, session) = try await session(server)
        let eager = try WebSocketClient(port: server.wsPort)
        try eager.send(["op": "subscribe", "topic": .string("work_session:\(session)")])
        let closed = try await eager.closeFrame()
        #expect(closed?.code == .unauthorized)
        #expect(closed?.reason.contains("authenticate first") == true)

        let garbled = try WebSocketClient(port: server.wsPort)
        try garbled.send(.text, Array("{not json".utf8))
        #expect(try await garbled.closeFrame()?.code == .unauthorized)

        let polite = try WebSocketClient(port: server.wsPort)
        let token = try jwt()
        let answer = try await authenticate(polite, token)
        #expect(answer["op"] == "authenticated")
        #expect(answer["subject"] == "fitter-1")
        #expect(answer["tenant"] == "acme")
        #expect(isWireTimestamp(answer["expires_at"]))
        #expect(try await subscribe(polite, "work_session:\(session)")["op"] == "subscribed")
    }

    @Test func anInvalidTokenInTheAuthOpIs4001NamingWhy() async throws {
        let server = try await Self.shared.get().server
        for (token, why) in [
            (try Tokens.jwt(["sub": "x", "tenant": "acme", "exp": Date().timeIntervalSince1970 - 5]), "expired"),
            (
                try Tokens.jwt(
                    ["sub": "x", "tenant": "acme", "exp": Date().timeIntervalSince1970 + 60],
                    secret: String(repeating: "z", count: 40)),
                "signature"
            ),
            ("garbage", "token"),
        ] {
            let socket = try WebSocketClient(port: server.wsPort)
            try socket.send(["op": "auth", "token": .string(token)])
            let closed = try await socket.closeFrame()
            #expect(closed?.code == .unauthorized, "\(why)")
            #expect(closed?.reason.contains(why) == true, "\(why): \(closed?.reason ?? "")")
        }
        // A bad header is still refused at the upgrade.
        #expect(throws: TestFailure.self) {
            try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer garbage"])
        }
    }

    @Test func noAuthOpWithinTenSecondsIs4001() async throws {
        let server = try await Self.shared.get().server
        let silent = try WebSocketClient(port: server.wsPort)
        let closed = try await silent.closeFrame(timeout: 15)
        #expect(closed?.code == .unauthorized)
        #expect(closed?.reason.contains("no auth op") == true)
    }

    @Test func aTokenThatExpiresClosesTheSocketWith4001() async throws {
        let server = try await Self.shared.get().server
        let socket = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try jwt(lifetime: 2))"])
        let closed = try await socket.closeFrame(timeout: 10)
        #expect(closed?.code == .unauthorized)
        #expect(closed?.reason == "token expired")
    }

    @Test func aRefreshKeepsTheSocketPastTheFirstTokensExpiry() async throws {
        let server = try await Self.shared.get().server
        let (_, session) = try await session(server)
        let socket = try WebSocketClient(port: server.wsPort)
        let first = try jwt(lifetime: 3)
        // A second socket on the same token, not refreshed: its close says when the
        // server counted the token expired.
        let control = try WebSocketClient(port: server.wsPort)
        #expect(try await authenticate(control, first)["op"] == "authenticated")
        #expect(try await authenticate(socket, first)["op"] == "authenticated")
        #expect(try await subscribe(socket, "work_session:\(session)")["op"] == "subscribed")
        try socket.send(["op": "auth", "token": .string(try jwt(lifetime: 300))])
        #expect(try await socket.next(op: "authenticated")["subject"] == "fitter-1")
        #expect(try await control.closeFrame(timeout: 15)?.code == .unauthorized)
        // Past the first token's exp: still open, still subscribed.
        let writer = Tokens.bearer(try jwt())
        let marker = try await server.client.send(
            "POST", "/api/v1/markers",
            json: Fixtures.markerBody(session: session), headers: writer)
        #expect(marker.status == 201)
        let event = try await socket.nextEvent(streamType: "marker")
        #expect(event["type"] == "marker.created")
    }

    @Test func aRefreshNamingAnotherSubjectOrTenantIs4003() async throws {
        let server = try await Self.shared.get().server
        for other in [try jwt(sub: "someone-else"), try jwt("globex")] {
            let socket = try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(try jwt())"])
            try socket.send(["op": "auth", "token": .string(other)])
            let closed = try await socket.closeFrame()
            #expect(closed?.code == .forbidden)
        }
    }

    @Test func aRefreshNarrowingSpacesEndsTheSubscriptionsItNoLongerCovers() async throws {
        let server = try await Self.shared.get().server
        let kept = try await session(server)
        let dropped = try await session(server)
        let socket = try WebSocketClient(port: server.wsPort)
        #expect(try await authenticate(socket, try jwt(spaces: [kept.space, dropped.space]))["op"] == "authenticated")
        #expect(try await subscribe(socket, "work_session:\(kept.session)")["op"] == "subscribed")
        #expect(try await subscribe(socket, "space:\(dropped.space)")["op"] == "subscribed")
        #expect(try await subscribe(socket, "work_session:\(dropped.session)")["op"] == "subscribed")
        try socket.send(["op": "presence", "work_session_id": .string(dropped.session)])
        #expect(try await socket.next(op: "present")["user_id"] == "fitter-1")

        try socket.send(["op": "auth", "token": .string(try jwt(spaces: [kept.space]))])
        var ended: Set<String> = []
        var authenticated = false
        while ended.count < 2 || !authenticated {
            let message = try await socket.nextJSON()
            switch message["op"]?.string {
            case "authenticated": authenticated = true
            case "unsubscribed":
                #expect(message["reason"] == "forbidden")
                ended.insert(message["topic"]?.string ?? "")
            default: continue
            }
        }
        #expect(ended == ["space:\(dropped.space)", "work_session:\(dropped.session)"])
        // The presence it may no longer hold is let go.
        let reader = Tokens.bearer(try jwt())
        try await eventually("fitter-1 leaves the dropped session") {
            let present = try await server.client.send("GET", "/api/v1/presence/\(dropped.session)", headers: reader)
            return present.status == 200 && present.json["users"]?.array?.isEmpty == true
        }
        // The topic it keeps still delivers; the one it lost cannot be taken again.
        #expect(try await subscribe(socket, "work_session:\(dropped.session)")["code"] == "not_found")
        let marker = try await server.client.send(
            "POST", "/api/v1/markers",
            json: Fixtures.markerBody(session: kept.session), headers: reader.merging(Tokens.bearer(try jwt())) { $1 })
        #expect(marker.status == 201)
        #expect(try await socket.nextEvent(streamType: "marker")["topic"]?.string == "work_session:\(kept.session)")
    }

    @Test func aRefreshDroppingReadEndsEverySubscription() async throws {
        let server = try await Self.shared.get().server
        let (_, session) = try await session(server)
        let socket = try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(try jwt())"])
        #expect(try await subscribe(socket, "work_session:\(session)")["op"] == "subscribed")
        try socket.send(["op": "auth", "token": .string(try jwt("acme", "operator"))])
        #expect(try await socket.next(op: "unsubscribed")["reason"] == "forbidden")
    }

    /// 1,000 sockets refresh their tokens at once: each gets its `authenticated`, none is
    /// closed. The time is printed (a figure, not a bound).
    @Test func aThousandSocketsRefreshAtOnce() async throws {
        let server = try await Self.shared.get().server
        let count = 1000
        let port = server.wsPort
        // Opening and writing 1,000 blocking sockets takes seconds: off the cooperative
        // pool (two threads here), which every other test needs meanwhile.
        let tokens = try (0..<count).map { (try jwt(sub: "device-\($0)"), try jwt(sub: "device-\($0)", lifetime: 600)) }
        let sockets = try await onOwnThread {
            try tokens.map { try WebSocketClient(port: port, headers: ["Authorization: Bearer \($0.0)"]) }
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await onOwnThread {
            for (socket, token) in zip(sockets, tokens) { try socket.send(["op": "auth", "token": .string(token.1)]) }
        }
        for (index, socket) in sockets.enumerated() {
            let answer = try await socket.nextJSON(timeout: 30)
            #expect(
                answer["op"] == "authenticated" && answer["subject"]?.string == "device-\(index)", "\(index): \(answer)"
            )
        }
        print("1,000 WebSocket token refreshes answered in \(clock.now - start)")
    }
}
