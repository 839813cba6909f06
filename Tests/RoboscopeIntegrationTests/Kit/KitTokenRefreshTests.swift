import Foundation
import Testing
import RoboscopeKit

/// RoboscopeKit against the real gateway with short-lived tokens: a followed topic
/// refreshes its token on the open socket (the `auth` op) and never reconnects.
@Suite struct KitTokenRefreshEndToEndTests {
    /// A leeway of 20 s: a socket that kept its first ten-second token is closed at 30 s.
    static let shared = LazyServer("kit_auth") { Tokens.serverArguments() + ["--auth-leeway", "20"] }

    /// Tokens of ten seconds. The kit refreshes at 8 s, 22 s before the gateway would
    /// close the socket: room for a loaded machine (the clean-clone run, with every
    /// suite starting servers at once, once delayed a refresh past a 5-s leeway).
    actor ShortTokens {
        private(set) var issued = 0
        func next() throws -> (token: String, expiresAt: Date) {
            issued += 1
            let expiry = Date().addingTimeInterval(10)
            return (
                try Tokens.jwt([
                    "sub": "kit-device", "tenant": "acme", "scope": "admin", "exp": expiry.timeIntervalSince1970,
                    "jti": "\(issued)",
                ]), expiry
            )
        }
    }

    @Test func aFollowedTopicRefreshesItsTokenWithoutReconnecting() async throws {
        let server = try await Self.shared.get().server
        let tokens = ShortTokens()
        let provider = RefreshingTokenProvider(refreshMargin: .milliseconds(500)) { try await tokens.next() }
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, tokenProvider: provider))
        let space = try await client.createSpace(NewSpace(key: "kit-auth-\(UUID())", name: "Kit"))
        let session = try await client.createWorkSession(NewWorkSession(spaceID: space.id))
        let live = client.follow(.workSession(session.id), from: TopicCursor(position: 0, topicSeq: 0))
        let states = Task {
            var seen: [ConnectionState] = []
            for await state in live.states { seen.append(state) }
            return seen
        }
        let events = Task {
            var types: [String] = []
            for try await event in live.events {
                types.append(event.type)
                if event.type == "marker.created" { break }
            }
            return types
        }
        // Four refreshes went out on the socket (at about 8, 16, 24 and 32 s): by then the
        // first token's socket would have been closed at 30 s, had the refreshes not landed.
        try await eventually("the kit refreshed its token four times", within: 90) { await tokens.issued >= 5 }
        let marker = try NewMarker(
            workSessionID: session.id, label: "after refreshes",
            corners: [
                Point3(x: 0, y: 0, z: 1), Point3(x: 2, y: 0, z: 1), Point3(x: 2, y: 0, z: 4), Point3(x: 0, y: 0, z: 4),
            ])
        _ = try await client.createMarker(marker)
        let types = try await events.value
        #expect(types.first == "work_session.created")
        #expect(types.last == "marker.created")
        // The follower runs while `live` lives: stop reading its states to look at them.
        states.cancel()
        let seen = await states.value
        #expect(seen == [.connecting, .live], "one connection, never dropped: \(seen)")
    }
}
