import Foundation
import RoboscopeDomain
import Logging
import RoboscopeRedis
import Testing

/// The service follows a Redis failover that Sentinels make (issue 36): a real master,
/// replica and three Sentinels; the master killed with SIGKILL.
@Suite struct RedisSentinelFailoverTests {
    @Test func presenceAndLocksFollowTheMasterTheSentinelsPromote() async throws {
        let cluster = try SentinelCluster()
        try await eventually("the replica in sync and the Sentinels aware of each other", within: 60) {
            cluster.isReady()
        }
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("sentinels"),
            // The URL's host and port are not used with Sentinels; its database is.
            redisURL: "redis://127.0.0.1:1/0",
            extraArguments: [
                "--redis-sentinels", cluster.sentinelList, "--redis-master-name", SentinelCluster.masterName,
            ])
        let client = server.client
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker = try await fixtures.marker(in: session)
        let presence = "/api/v1/presence/\(Fixtures.id(session))"
        let locks = "/api/v1/locks/\(Fixtures.id(session))"
        #expect(try await client.post(presence, ["user_id": "ana"]).status == 200)
        let first = try await client.post(locks, ["ttl_seconds": 60, "enforce": true], headers: ["X-User-Id": "ana"])
            .json
        let anaToken = try #require(first["token"]?.string)
        let anaFence = try #require(first["fencing_token"]?.int)
        #expect(
            cluster.ask(cluster.masterPort, ["DBSIZE"])?.integer ?? 0 > 0,
            "the service writes to the master the Sentinels named")

        cluster.kill(port: cluster.masterPort)
        try await eventually("the Sentinels promote the replica", within: 60) {
            cluster.masterAsSentinelsSeeIt() == cluster.replicaPort
        }
        // 503 while there is no master, then answers again by itself.
        try await eventually("presence answers again", within: 30) {
            try await client.post(presence, ["user_id": "ben"]).status == 200
        }
        #expect(cluster.ask(cluster.replicaPort, ["ROLE"])?.array?.first?.string == "master")

        // No lock held by two subjects at once, and fencing tokens only grow: the lock
        // either survived the failover (replicated in time) or was lost, in which case the
        // next holder's token is newer and ana's is refused.
        let second = try await client.post(locks, ["ttl_seconds": 60, "enforce": true], headers: ["X-User-Id": "ben"])
        #expect(second.status == 200)
        let markerPath = "/api/v1/markers/\(Fixtures.id(marker))"
        if second.json["acquired"] == true {
            #expect(try #require(second.json["fencing_token"]?.int) > anaFence)
            #expect(
                try await client.patch(markerPath, ["label": "ana's"], headers: ["X-Lock-Token": anaToken]).status
                    == 423)
            let benToken = try #require(second.json["token"]?.string)
            #expect(
                try await client.patch(markerPath, ["label": "ben's"], headers: ["X-Lock-Token": benToken]).status
                    == 200)
        } else {
            #expect(second.json["holder"] == "ana")
            #expect(try await client.get(locks).json["fencing_token"]?.int == anaFence)
            #expect(
                try await client.patch(markerPath, ["label": "ana's"], headers: ["X-Lock-Token": anaToken]).status
                    == 200)
        }
        _ = await server.terminate()
    }
}

/// The pieces of following a failover, in this process: asking the Sentinels, retiring
/// connections on `+switch-master`, and a demoted node's `READONLY`.
@Suite struct SentinelEndpointTests {
    @Test func aSwitchRetiresEveryConnectionAndTheNextOneReachesTheNewMaster() async throws {
        let cluster = try SentinelCluster()
        try await eventually("the replica in sync and the Sentinels aware of each other", within: 60) {
            cluster.isReady()
        }
        let addresses = try #require(RedisAddress.list(cluster.sentinelList))
        let endpoint = RedisEndpoint(
            url: try #require(RedisURL("redis://127.0.0.1:1/0")), sentinels: addresses,
            masterName: SentinelCluster.masterName)
        let watcher = SentinelWatcher(endpoint: endpoint, logger: Logger(label: "test"))
        watcher.start()
        let before = try endpoint.connect()
        _ = try before.command(["SET", "written-before", "1"])
        #expect(!before.isBroken)

        cluster.kill(port: cluster.masterPort)
        try await eventually("the watcher hears +switch-master", within: 60) { watcher.switchesSeen >= 1 }
        #expect(before.isBroken, "made under the old master: retired before its next use")
        let after = try endpoint.connect()
        #expect(try after.command(["ROLE"]).array?.first?.string == "master")
        _ = try after.command(["SET", "written-after", "1"])
        #expect(
            cluster.ask(cluster.replicaPort, ["EXISTS", "written-after"])?.integer == 1,
            "the promoted replica took the write")
        await watcher.stop()
    }

    @Test func aReplicasReadOnlyAnswerRetiresTheConnection() async throws {
        let cluster = try SentinelCluster()
        try await eventually("the replica in sync", within: 60) { cluster.isReady() }
        let replica = try RedisConnection(RedisURL(host: "127.0.0.1", port: cluster.replicaPort))
        #expect(throws: RedisError.self) { try replica.command(["SET", "x", "1"]) }
        #expect(replica.isBroken, "READONLY: a demoted master; the pool replaces the connection and asks the Sentinels")
        do {
            _ = try RedisConnection(RedisURL(host: "127.0.0.1", port: cluster.replicaPort)).command(["SET", "x", "1"])
        } catch let error as RedisError {
            #expect(error.kind == .connection, "503 and a retry, not a refusal")
        }
    }

    @Test func sentinelListsAreHostPortPairs() {
        let listed = RedisAddress.list("10.0.0.1:26379, sentinel-b:26380")
        #expect(listed?.map(\.host) == ["10.0.0.1", "sentinel-b"])
        #expect(listed?.map(\.port) == [26379, 26380])
        for bad in ["", "10.0.0.1", ":26379", "host:0", "host:70000", "a:1,b"] {
            #expect(RedisAddress.list(bad) == nil, "\(bad)")
        }
    }
}
