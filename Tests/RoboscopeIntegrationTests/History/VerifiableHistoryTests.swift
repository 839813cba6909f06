import Foundation
import RoboscopeProofs
import Testing
import RoboscopeWire

/// Verifiable history end to end (DESIGN.md, "Verifiable history"; docs/investigations.md):
/// a real server signs its appends and checkpoints with the tests' key; `roboscope-client
/// verify` passes an honest log and names the first `tenant_seq` of each forgery; the
/// proofs the service serves are checked by `IndependentRFC9162`.
@Suite struct VerifiableHistoryTests {
    /// A fresh database and a server on it, with a space, a session and markers written.
    struct Setup {
        let databaseURL: String
        let server: ServerProcess
        let state: String
        var client: HTTPClient { server.client }
    }

    static func setUp(_ label: String) async throws -> Setup {
        let databaseURL = try await TestDatabase.fresh(label)
        let server = try await ServerProcess(databaseURL: databaseURL)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("rbverify-\(UUID())").path
        let setup = Setup(databaseURL: databaseURL, server: server, state: state)
        try await write(setup, markers: 4)
        return setup
    }

    /// A space, a session and `markers` markers, one updated: events of several streams.
    static func write(_ setup: Setup, markers: Int) async throws {
        let space = try await setup.client.post("/api/v1/spaces", ["key": .string("k-\(UUID())"), "name": "n"])
        let session = try await setup.client.post(
            "/api/v1/work-sessions", ["space_id": space.json["id"]!, "session_type": "inspection"])
        for index in 0..<markers {
            let marker = try await setup.client.post(
                "/api/v1/markers",
                [
                    "work_session_id": session.json["id"]!, "p1": [0, 0, 1], "p2": [2, 0, 1],
                    "p3": [2, 0, .integer(Int64(index + 2))], "p4": [0, 0, 4],
                ])
            #expect(marker.status == 201)
            if index == 0 {
                let id = marker.json["id"]!.string!
                let renamed = try await setup.client.send(
                    "PATCH", "/api/v1/markers/\(id)", json: ["label": "renamed"])
                #expect(renamed.status == 200)
            }
        }
    }

    /// The tenant's log size, once a checkpoint covers all of it.
    static func checkpointed(_ setup: Setup) async throws -> Int64 {
        let size = try scalar(setup.databaseURL, "SELECT size FROM eventlog.tenant_logs WHERE tenant = 'default'")
        try await eventually("a checkpoint covers the \(size) events") {
            try scalar(setup.databaseURL, "SELECT coalesce(max(size), 0) FROM eventlog.checkpoints") >= size
        }
        return size
    }

    static func verify(_ setup: Setup, events: Bool = true) async throws -> CommandRunner.Outcome {
        try await CommandRunner.run(
            ClientProcess.binary,
            [
                "verify", "--url", "http://127.0.0.1:\(setup.server.port)", "--state", setup.state,
                "--key", TestHistoryKey.verifier(setup.databaseURL).description,
            ] + (events ? ["--events"] : []))
    }

    /// Runs `statements` as the role that owns the schema, with the log's guards off.
    static func asOwner(_ setup: Setup, _ statements: [String]) async throws {
        try await onOwnThread {
            let connection = try TestDatabase.connect(setup.databaseURL)
            try connection.execute("ALTER TABLE eventlog.events DISABLE TRIGGER USER")
            for statement in statements { try connection.execute(statement) }
            try connection.execute("ALTER TABLE eventlog.events ENABLE TRIGGER USER")
        }
    }

    /// `/integrity` of the whole log: intact, and the first event without a valid signature.
    static func integrity(_ setup: Setup) async throws -> (intact: Bool, firstInvalid: Int64?, link: Bool) {
        let reply = try await setup.client.get("/api/v1/integrity")
        #expect(reply.status == 200, "\(reply.json)")
        let first = reply.json["signatures"]?["first_invalid"]?["tenant_seq"]
        return (
            reply.json["intact"] == .bool(true), first?.int,
            reply.json["first_broken_link"] != .null
        )
    }

    /// A forgery is caught both ways: `roboscope-client verify` exits 1 with a line that
    /// holds `failure`, and `/integrity` is not intact, naming `firstInvalid` first.
    static func expectCaught(
        _ setup: Setup, failure: String, firstInvalid: Int64, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let outcome = try await verify(setup)
        #expect(outcome.status == 1, "\(outcome.output)", sourceLocation: sourceLocation)
        #expect(outcome.output.contains(failure), "\(outcome.output)", sourceLocation: sourceLocation)
        let integrity = try await integrity(setup)
        #expect(!integrity.intact && integrity.firstInvalid == firstInvalid, sourceLocation: sourceLocation)
    }

    @Test func anHonestLogVerifiesAndKeepsVerifyingAsItGrows() async throws {
        let setup = try await Self.setUp("history_honest")
        defer { setup.server.stopWithoutWaiting() }
        let size = try await Self.checkpointed(setup)
        let first = try await Self.verify(setup)
        #expect(first.status == 0, "\(first.output)")
        let origin = "roboscope/\(TestHistoryKey.deployment(of: setup.databaseURL))/default"
        #expect(first.output.contains("verified: \(origin), \(size) events, each checked (\(size))"))
        let integrity = try await Self.integrity(setup)
        #expect(integrity.intact && integrity.firstInvalid == nil)
        try await Self.write(setup, markers: 3)
        let grown = try await Self.checkpointed(setup)
        let second = try await Self.verify(setup, events: false)
        #expect(second.status == 0, "\(second.output)")
        #expect(second.output.contains("\(grown) events"))
    }

    @Test func theServedProofsHoldUnderAnIndependentImplementation() async throws {
        let setup = try await Self.setUp("history_proofs")
        defer { setup.server.stopWithoutWaiting() }
        // Past 32 events: proofs read stored subtrees (16 leaves and up) and hashed small ones.
        try await Self.write(setup, markers: 20)
        let size = Int(try await Self.checkpointed(setup))
        #expect(size > 32)
        #expect(try scalar(setup.databaseURL, "SELECT count(*) FROM eventlog.merkle_nodes WHERE level >= 4") >= 2)
        let page = try await setup.client.get("/api/v1/proofs/entries")
        let leaves = page.json["entries"]!.array!.map { IndependentRFC9162.leaf(Hex.decode($0["digest"]!.string!)!) }
        #expect(leaves.count == size)
        let note = String(decoding: try await setup.client.get("/api/v1/checkpoints/latest").body, as: UTF8.self)
        let lines = note.split(separator: "\n")
        #expect(lines[1] == "\(size)")
        #expect(Data(base64Encoded: String(lines[2])).map(Array.init) == IndependentRFC9162.root(leaves[...]))
        for treeSize in [1, 2, 3, size / 2, size - 1, size] where treeSize >= 1 {
            for index in Set([0, treeSize / 2, treeSize - 1]) {
                let reply = try await setup.client.get(
                    "/api/v1/proofs/inclusion?tenant_seq=\(index + 1)&tree_size=\(treeSize)")
                let proof = reply.json["hashes"]!.array!.map { Array(Data(base64Encoded: $0.string!)!) }
                #expect(
                    IndependentRFC9162.rootFromInclusion(leaves[index], index, treeSize, proof[...])
                        == IndependentRFC9162.root(leaves[0..<treeSize]), "leaf \(index) of \(treeSize)")
            }
            for from in Set([1, treeSize / 2, treeSize - 1]) where from >= 1 && from < treeSize {
                let reply = try await setup.client.get("/api/v1/proofs/consistency?from=\(from)&to=\(treeSize)")
                let proof = reply.json["hashes"]!.array!.map { Array(Data(base64Encoded: $0.string!)!) }
                let oldRoot = IndependentRFC9162.root(leaves[0..<from])
                let roots = IndependentRFC9162.rootsFromConsistency(
                    from, treeSize, proof[...], complete: true, oldRoot: oldRoot)
                #expect(
                    roots?.old == oldRoot && roots?.new == IndependentRFC9162.root(leaves[0..<treeSize]),
                    "\(from) to \(treeSize)")
            }
        }
        let tooLarge = try await setup.client.get("/api/v1/proofs/inclusion?tenant_seq=1&tree_size=\(size + 1)")
        #expect(tooLarge.status == 400)
        #expect(tooLarge.json["error"]?["field"] == "tree_size")
    }

    /// An event appended through the database's own append function, as the serving role
    /// may call it: it has a valid chain hash and a number, and no signature.
    @Test func anInsertedEventIsNamed() async throws {
        let setup = try await Self.setUp("history_inserted")
        defer { setup.server.stopWithoutWaiting() }
        let before = try await Self.checkpointed(setup)
        #expect(try await Self.verify(setup).status == 0)
        let space = try scalar(
            setup.databaseURL, "SELECT count(*) FROM eventlog.events WHERE stream_type = 'space'")
        #expect(space == 1)
        try await onOwnThread {
            let connection = try TestDatabase.connect(setup.databaseURL)
            try connection.execute(
                """
                SELECT eventlog.append(jsonb_build_object('events', jsonb_build_array(jsonb_build_object(
                    'event_id', gen_random_uuid(), 'stream_type', 'space', 'stream_id', e.stream_id,
                    'expected_version', null, 'type', 'space.updated', 'data', e.data || '{"name": "forged"}',
                    'metadata', jsonb_build_object('actor', 'someone-else')))))
                FROM eventlog.events e WHERE e.stream_type = 'space' AND e.stream_version = 1
                """)
        }
        _ = try await Self.checkpointed(setup)
        try await Self.expectCaught(
            setup, failure: "tenant_seq \(before + 1): no signature of the service covers it", firstInvalid: before + 1)
    }

    /// The same forgery as the role the service connects as (`migrate --service-role`): it
    /// may call `eventlog.append` and store signatures, and neither makes an event verify.
    @Test func anEventTheServingRoleAppendsOrSignsIsNamed() async throws {
        let (owner, service) = try await ServiceRoleTests.database.value
        let server = try await ServerProcess(databaseURL: service, extraArguments: ["--no-migrate"])
        defer { server.stopWithoutWaiting() }
        let setup = Setup(
            databaseURL: owner, server: server,
            state: FileManager.default.temporaryDirectory.appendingPathComponent("rbverify-\(UUID())").path)
        try await Self.write(setup, markers: 1)
        _ = try await Self.checkpointed(setup)
        let honest = try await Self.verify(setup)
        #expect(honest.status == 0, "\(honest.output)")
        let forged = try await onOwnThread { () throws -> Int64 in
            let connection = try TestDatabase.connect(service)
            let result = try connection.query(
                """
                SELECT a.event_tenant_seq
                FROM (SELECT stream_id, data FROM eventlog.events WHERE type = 'space.created' LIMIT 1) AS e,
                     eventlog.append(jsonb_build_object('events', jsonb_build_array(jsonb_build_object(
                         'event_id', gen_random_uuid(), 'stream_type', 'space', 'stream_id', e.stream_id,
                         'expected_version', null, 'type', 'space.updated', 'data', e.data || '{"name": "forged"}',
                         'metadata', jsonb_build_object('actor', 'someone-else'))))) AS a
                """)
            let number = result.int64(0, 0)!
            // A signature of its own making over the forged event, stored as the service's.
            try connection.query(
                """
                INSERT INTO eventlog.append_signatures (tenant, first_seq, last_seq, signature)
                VALUES ('default', $1, $1, decode(repeat('00', 64), 'hex'))
                """, [number])
            return number
        }
        _ = try await Self.checkpointed(setup)
        try await Self.expectCaught(
            setup, failure: "tenant_seq \(forged): its append's signature (events \(forged) to \(forged))",
            firstInvalid: forged)
    }

    @Test func anEditedPastEventIsNamedWhetherItsHashIsKeptOrRecomputed() async throws {
        let setup = try await Self.setUp("history_edited")
        defer { setup.server.stopWithoutWaiting() }
        _ = try await Self.checkpointed(setup)
        #expect(try await Self.verify(setup).status == 0)
        try await Self.asOwner(
            setup, ["UPDATE eventlog.events SET data = data || '{\"label\": \"forged\"}' WHERE tenant_seq = 4"])
        let kept = try await Self.verify(setup)
        #expect(kept.status == 1)
        #expect(kept.output.contains("tenant_seq 4: its content does not give its digest"), "\(kept.output)")
        let chainBroken = try await Self.integrity(setup)
        #expect(!chainBroken.intact && chainBroken.link)
        try await Self.asOwner(
            setup,
            [
                """
                UPDATE eventlog.events e SET hash = eventlog.event_digest(
                    (SELECT p.hash FROM eventlog.events p WHERE p.stream_type = e.stream_type
                       AND p.stream_id = e.stream_id AND p.stream_version = e.stream_version - 1),
                    e.event_id, e.stream_type, e.stream_id, e.stream_version, e.type, e.data, e.metadata,
                    e.recorded_at)
                WHERE tenant_seq = 4
                """
            ])
        // The signature covers the append's events together: the verifier names the first.
        let first = try scalar(
            setup.databaseURL, "SELECT first_seq FROM eventlog.append_signatures WHERE 4 BETWEEN first_seq AND last_seq"
        )
        try await Self.expectCaught(
            setup, failure: "tenant_seq \(first): its append's signature (events \(first) to", firstInvalid: first)
    }

    @Test func aDeletedStreamTailIsNamed() async throws {
        let setup = try await Self.setUp("history_tail")
        defer { setup.server.stopWithoutWaiting() }
        _ = try await Self.checkpointed(setup)
        #expect(try await Self.verify(setup).status == 0)
        // The renamed marker's update: the last event of its stream, not of the log.
        let number = try scalar(
            setup.databaseURL, "SELECT tenant_seq FROM eventlog.events WHERE type = 'marker.updated' LIMIT 1")
        try await Self.asOwner(setup, ["DELETE FROM eventlog.events WHERE tenant_seq = \(number)"])
        let first = try scalar(
            setup.databaseURL,
            "SELECT first_seq FROM eventlog.append_signatures WHERE \(number) BETWEEN first_seq AND last_seq")
        try await Self.expectCaught(setup, failure: "tenant_seq \(number): missing", firstInvalid: first)
    }

    /// The database restored from a backup taken before the last writes: the log is
    /// shorter than the checkpoint the verifier kept.
    @Test func aLogRolledBackToAnEarlierBackupIsNamed() async throws {
        var setup = try await Self.setUp("history_rollback")
        let early = try await Self.checkpointed(setup)
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("rbbackup-\(UUID()).dump").path
        let dump = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/pg_dump"), ["-Fc", "-f", backup, setup.databaseURL])
        #expect(dump.status == 0, "\(dump.output)")
        try await Self.write(setup, markers: 2)
        let late = try await Self.checkpointed(setup)
        #expect(try await Self.verify(setup, events: false).status == 0)
        _ = await setup.server.terminate()
        let restored = TestDatabase.url(of: "rbtest_history_restored_\(UInt32.random(in: 0...UInt32.max))")
        try await onOwnThread {
            let admin = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
            try admin.execute("CREATE DATABASE \(URL(string: restored)!.lastPathComponent)")
        }
        let restore = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/pg_restore"), ["--no-owner", "-d", restored, backup])
        #expect(restore.status == 0, "\(restore.output)")
        // The same deployment as before the restore: its key, its logs' names, its witness.
        let server = try await ServerProcess(
            databaseURL: restored,
            extraArguments: [
                "--signing-key-file", try TestHistoryKey.path(), "--checkpoint-interval", "0.2",
                "--deployment-name", TestHistoryKey.deployment(of: setup.databaseURL),
            ])
        defer { server.stopWithoutWaiting() }
        let original = setup.databaseURL
        setup = Setup(databaseURL: restored, server: server, state: setup.state)
        let outcome = try await CommandRunner.run(
            ClientProcess.binary,
            [
                "verify", "--url", "http://127.0.0.1:\(server.port)", "--state", setup.state,
                "--key", TestHistoryKey.verifier(original).description,
            ])
        #expect(outcome.status == 1)
        #expect(
            outcome.output.contains("tenant_seq \(early + 1): the log shrank from \(late) to \(early)"),
            "\(outcome.output)")
        // The service noticed too: /integrity names it, and the log is not signed again.
        let reply = try await server.client.get("/api/v1/integrity")
        #expect(reply.json["intact"] == .bool(false))
        #expect(reply.json["history"]?.string?.contains("rolled back") == true, "\(reply.json)")
        try await Self.write(setup, markers: 1)
        let grown = try scalar(restored, "SELECT size FROM eventlog.tenant_logs WHERE tenant = 'default'")
        try await eventually("the checkpointer refuses the rolled-back log") {
            server.log().contains("is not signed again")
        }
        #expect(try scalar(restored, "SELECT max(size) FROM eventlog.checkpoints") < grown)
    }
}
