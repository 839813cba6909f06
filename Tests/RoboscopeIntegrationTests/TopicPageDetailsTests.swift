import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// A topic's page gives every marker event the details `eventlog.delivery_rows` gives it
/// (its details as of its transaction), wherever the page starts and ends, though it
/// finds most of them in its own rows.
/// Each test's blocking database work runs on a thread of its own, off the cooperative pool.
@Suite struct TopicPageDetailsTests {
    static let space = "00000000-0000-4000-8000-000000000001"
    static let session = "00000000-0000-4000-8000-000000000002"
    static let markers = [
        "a": "00000000-0000-4000-8000-00000000000a", "b": "00000000-0000-4000-8000-00000000000b",
        "c": "00000000-0000-4000-8000-00000000000c",
    ]

    /// One transaction of the session's topic: each event (stream type, marker, type), its
    /// stream's next version and the topic's next number given as the append gives them.
    static func write(
        _ events: [(String, String, String)], on connection: PGConnection,
        versions: inout [String: Int], sequence: inout Int
    ) throws {
        var rows: [String] = []
        for (streamType, marker, type) in events {
            let id = streamType == "work_session" ? session : markers[marker]!
            let key = streamType + id
            versions[key, default: 0] += 1
            sequence += 1
            let data = streamType == "marker_details" ? "{\"v\": \(versions[key]!), \"of\": \"\(marker)\"}" : "{}"
            rows.append(
                """
                (gen_random_uuid(), '\(streamType)', '\(id)', \(versions[key]!), '\(type)', '\(data)',
                 '{"actor": "test"}',
                 '\(space)', '\(session)', sha256('\(sequence)'::bytea), \(sequence))
                """)
        }
        try connection.execute(
            """
            INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata,
                                         space_id, work_session_id, hash, work_session_seq)
            VALUES \(rows.joined(separator: ",\n"))
            """)
    }

    /// A session's topic with every shape of details a marker event can meet, one
    /// statement (one transaction) per line.
    static func writeLog(on connection: PGConnection) throws {
        try connection.execute("ALTER TABLE eventlog.events DISABLE TRIGGER USER")
        var versions: [String: Int] = [:]
        var sequence = 0
        let transactions: [[(String, String, String)]] = [
            [("work_session", "", "work_session.created")],
            [("marker", "a", "marker.created"), ("marker_details", "a", "marker_details.calculated")],
            [("marker", "b", "marker.created"), ("marker_details", "b", "marker_details.calculated")],
            [("marker", "a", "marker.updated")],
            [("marker_details", "a", "marker_details.deleted")],
            [
                ("marker", "a", "marker.updated"), ("marker", "c", "marker.created"),
                ("marker_details", "c", "marker_details.calculated"),
                ("marker_details", "a", "marker_details.calculated"),
            ],
            [
                ("marker", "b", "marker.updated"), ("marker_details", "b", "marker_details.calculated"),
                ("marker", "b", "marker.updated"), ("marker_details", "b", "marker_details.calculated"),
            ],
            [("marker", "c", "marker.updated")],
            [("work_session", "", "work_session.updated")],
            [("marker_details", "a", "marker_details.deleted"), ("marker", "a", "marker.deleted")],
            [("marker", "b", "marker.updated"), ("marker_details", "b", "marker_details.put")],
            [
                ("marker", "c", "marker.updated"), ("marker_details", "c", "marker_details.calculated"),
                ("marker", "b", "marker.updated"),
            ],
        ]
        for events in transactions {
            try write(events, on: connection, versions: &versions, sequence: &sequence)
        }
        try connection.execute("ALTER TABLE eventlog.events ENABLE TRIGGER USER")
    }

    /// Each event's details as the view gives them, by position.
    static func viewDetails(on connection: PGConnection) throws -> [Int64: String?] {
        let result = try connection.query(
            "SELECT position, details::text FROM eventlog.delivery_rows ORDER BY position")
        var details: [Int64: String?] = [:]
        for row in 0..<result.rowCount {
            details[result.int64(row, 0)!] = .some(result.string(row, 1))
        }
        return details
    }

    /// Runs `body` on its own thread, on a fresh database holding `writeLog`'s topic, with
    /// each event's details as the view gives them.
    static func onWrittenLog(
        _ label: String, _ body: @escaping @Sendable (PGConnection, Topic, [Int64: String?]) throws -> Void
    ) async throws {
        let url = try await TestDatabase.fresh(label)
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            try writeLog(on: connection)
            try body(connection, Topic(.workSession, EntityID(session)!), try viewDetails(on: connection))
        }
    }

    /// Every marker event of `page` carries the view's details.
    static func expectViewsDetails(_ page: [Delivery], _ expected: [Int64: String?], _ context: String) {
        for delivery in page {
            let text = delivery.change.details.map { String(decoding: $0, as: UTF8.self) }
            #expect(text == expected[delivery.cursor.position]!, "position \(delivery.cursor.position) \(context)")
        }
    }

    @Test func everyPageGivesTheViewsDetailsWhereverItStartsAndEnds() async throws {
        try await Self.onWrittenLog("topic_page_details") { connection, topic, expected in
            let count = Int64(expected.count)
            #expect(count == 24)
            // The view's details of markers a, b and c are all there is to match: some present, some not.
            #expect(expected.values.contains { $0 == nil } && expected.values.contains { $0 != nil })
            for after in 0...count {
                for limit in 1...Int(count - after + 1) {
                    let page = try DeliveryReader.topic(topic, after: after, limit: limit, on: connection)
                    let end = min(after + Int64(limit), count)
                    #expect(
                        page.map(\.cursor.position) == (after < end ? Array((after + 1)...end) : []),
                        "after \(after), limit \(limit)")
                    Self.expectViewsDetails(page, expected, "after \(after), limit \(limit)")
                }
            }
        }
    }

    @Test func aPageUpToACursorGivesTheViewsDetails() async throws {
        try await Self.onWrittenLog("topic_page_details_until") { connection, topic, expected in
            let cursors = try connection.query(
                "SELECT position, transaction_id::text FROM eventlog.events ORDER BY position")
            for row in 0..<cursors.rowCount {
                let until = LogCursor(transactionID: UInt64(cursors.string(row, 1)!)!, position: cursors.int64(row, 0)!)
                for after in stride(from: Int64(0), to: until.position, by: 3) {
                    let page = try DeliveryReader.topic(topic, after: after, until: until, limit: 1000, on: connection)
                    #expect(
                        page.map(\.cursor.position) == Array((after + 1)...until.position),
                        "after \(after), until \(until)")
                    Self.expectViewsDetails(page, expected, "after \(after), until \(until)")
                }
            }
        }
    }
}
