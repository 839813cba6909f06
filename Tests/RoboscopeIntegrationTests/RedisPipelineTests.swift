import Foundation
import Logging
import Testing
@testable import RoboscopeRedis

/// Pipelined commands against the real Redis: every command goes before any reply is
/// read, the replies come back in order, and a refused command is a reply, not a throw.
@Suite struct RedisPipelineTests {
    @Test func repliesComeBackInOrderWithRefusalsInPlace() throws {
        let connection = try RedisConnection(try #require(RedisURL(ServerProcess.redisURL)))
        let key = "roboscope:test:pipeline:\(UUID())"
        defer { _ = try? connection.command(["DEL", key]) }
        let replies = try connection.pipeline([
            ["RPUSH", key, "a"], ["RPUSH", key, "b"], ["NOT-A-COMMAND"], ["LRANGE", key, "0", "-1"],
        ])
        #expect(replies.count == 4)
        #expect(replies[0].integer == 1)
        #expect(replies[1].integer == 2)
        guard case .error = replies[2] else { Issue.record("expected an error reply, got \(replies[2])"); return }
        #expect(replies[3].array?.compactMap(\.string) == ["a", "b"])
        #expect(try connection.command(["LLEN", key]).integer == 2, "the connection is usable after the pipeline")
        #expect(try connection.pipeline([]).isEmpty)
    }

    @Test func morePipelinedCommandsThanTheDepthKeepTheirOrder() throws {
        let connection = try RedisConnection(try #require(RedisURL(ServerProcess.redisURL)))
        let key = "roboscope:test:pipeline:\(UUID())"
        defer { _ = try? connection.command(["DEL", key]) }
        let count = RedisConnection.pipelineDepth * 2 + 7
        let replies = try connection.pipeline(Array(repeating: ["INCR", key], count: count))
        #expect(replies.map(\.integer) == (1...count).map { Int64($0) })
    }

    @Test func manyHeartbeatsInOneRoundTripAnswerEach() throws {
        let url = try #require(RedisURL(ServerProcess.redisURL))
        let connection = try RedisConnection(url)
        // The pool is never used: the calls below run on the connection given.
        let store = PresenceStore(
            redis: RedisPool(url: url, size: 1, logger: Logger(label: "test")), window: .seconds(30))
        let session = UUID().uuidString.lowercased()
        let keys = (0..<50).map { (session: session, user: "user-\($0 % 40)") }
        let beats = try store.heartbeats(keys, on: connection)
        #expect(beats.count == 50)
        #expect(beats.prefix(40).allSatisfy { $0.joined }, "each first heartbeat of a user is a join")
        #expect(beats.suffix(10).allSatisfy { !$0.joined }, "a second one is not")
        #expect(try Set(store.users(session: session, on: connection)).count == 40)
    }

    @Test func aFullSessionRefusesANewUserButKeepsItsOwn() throws {
        let url = try #require(RedisURL(ServerProcess.redisURL))
        let connection = try RedisConnection(url)
        let store = PresenceStore(
            redis: RedisPool(url: url, size: 1, logger: Logger(label: "test")), window: .seconds(30), maxUsers: 3)
        let session = UUID().uuidString.lowercased()
        let beats = try store.heartbeats((0..<5).map { (session: session, user: "user-\($0)") }, on: connection)
        #expect(beats.prefix(3).allSatisfy { $0.joined })
        #expect(beats.suffix(2) == [.full, .full])
        #expect(
            try store.heartbeat(session: session, user: "user-0", on: connection) != .full,
            "a present user keeps beating")
        #expect(try store.users(session: session, on: connection).count == 3)
    }
}
