import Testing
@testable import RoboscopePostgres

/// A page of a topic tells a marker's details from its own rows once it has read past
/// the marker's transaction; it asks for a look-up only for a marker whose details are
/// older than the page or whose transaction the page's end may cut, and hands rows out
/// in their order.
@Suite struct PageDetailsTests {
    typealias Page = PageDetails<Int>

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Feeds `rows` (row, transaction, event) and collects what comes out, in order.
    static func feed(_ page: inout Page, _ rows: [(Int, UInt64, Page.Event)]) -> [(Int, String?)] {
        var out: [(Int, String?)] = []
        for (row, transaction, event) in rows {
            page.add(row, transactionID: transaction, event: event) { out.append(text($0)) }
        }
        return out
    }

    /// A new page fed `rows`, and what came out.
    static func fed(_ rows: [(Int, UInt64, Page.Event)]) -> (Page, [(Int, String?)]) {
        var page = Page()
        let out = feed(&page, rows)
        return (page, out)
    }

    static func resolve(_ page: inout Page, _ answers: [[UInt8]?]) -> [(Int, String?)] {
        var out: [(Int, String?)] = []
        page.resolve(answers) { out.append(text($0)) }
        return out
    }

    static func text(_ ready: Page.Ready) -> (Int, String?) {
        (ready.row, ready.details.map { String(decoding: $0, as: UTF8.self) })
    }

    @Test func aMarkersDetailsInItsOwnTransactionNeedNoLookUp() {
        var (page, out) = Self.fed(
            [
                (1, 10, .marker(stream: "a")), (2, 10, .details(stream: "a", data: Self.bytes("a1"))),
                (3, 11, .marker(stream: "b")), (4, 11, .details(stream: "b", data: Self.bytes("b1"))),
                (5, 12, .other),
            ])
        // A marker's row, and the rows after it, come out when the next transaction begins;
        // any other row as soon as the rows before it are out.
        #expect(out.map(\.0) == [1, 2, 3, 4, 5])
        #expect(out.map(\.1) == ["a1", nil, "b1", nil, nil])
        #expect(page.finish().isEmpty)
        #expect(Self.resolve(&page, []).isEmpty)
    }

    @Test func aMarkerTakesItsStreamsNewestDetailsUpToTheEndOfItsTransaction() {
        var (page, out) = Self.fed(
            [
                (1, 10, .marker(stream: "a")), (2, 10, .details(stream: "a", data: Self.bytes("a1"))),
                // Two changes of one marker in one transaction: both take the later details.
                (3, 11, .marker(stream: "a")), (4, 11, .details(stream: "a", data: Self.bytes("a2"))),
                (5, 11, .marker(stream: "a")), (6, 11, .details(stream: "a", data: Self.bytes("a3"))),
                // A later transaction with no details of its own takes the newest before it.
                (7, 12, .marker(stream: "a")),
                // Deleted details are none.
                (8, 13, .details(stream: "a", data: nil)), (9, 14, .marker(stream: "a")),
                (10, 15, .other),
            ])
        #expect(out.map(\.0) == Array(1...10))
        #expect(out.map(\.1) == ["a1", nil, "a3", nil, "a3", nil, "a3", nil, nil, nil])
        #expect(page.finish().isEmpty)
    }

    @Test func detailsOlderThanThePageAreLookedUpAndTheRowsAfterWait() {
        var (page, out) = Self.fed(
            [
                (1, 10, .other),
                (2, 11, .marker(stream: "old")), (3, 11, .marker(stream: "b")),
                (4, 11, .details(stream: "b", data: Self.bytes("b1"))),
                (5, 12, .marker(stream: "b")),
                (6, 13, .other),
            ])
        // Row 1 is out; row 2 waits for a look-up, and with it every row after it.
        #expect(out.map(\.0) == [1])
        #expect(page.finish() == [2])
        let rest = Self.resolve(&page, [Self.bytes("old1")])
        #expect(rest.map(\.0) == [2, 3, 4, 5, 6])
        #expect(rest.map(\.1) == ["old1", "b1", nil, "b1", nil])
    }

    @Test func theLastTransactionsMarkersAreLookedUpSinceThePagesEndMayCutIt() {
        var (page, out) = Self.fed(
            [
                (1, 10, .marker(stream: "a")), (2, 10, .details(stream: "a", data: Self.bytes("a1"))),
                (3, 11, .marker(stream: "a")), (4, 11, .details(stream: "a", data: Self.bytes("a2"))),
                (5, 11, .marker(stream: "c")),
            ])
        // a2 may not be a's last details in transaction 11, which may go on past the page.
        #expect(out.map(\.0) == [1, 2])
        #expect(page.finish() == [3, 5])
        let rest = Self.resolve(&page, [Self.bytes("a3"), nil])
        #expect(rest.map(\.0) == [3, 4, 5])
        #expect(rest.map(\.1) == ["a3", nil, nil])
    }

    @Test func markersTheReadLookedUpComeOutAtOnce() {
        // A page inside one large transaction: the read gave its markers' details.
        var (page, out) = Self.fed(
            [
                (1, 10, .markerLookedUp(details: Self.bytes("a1"))),
                (2, 10, .details(stream: "a", data: Self.bytes("a1"))),
                (3, 10, .markerLookedUp(details: nil)),
            ])
        #expect(out.map(\.0) == [1, 2, 3])
        #expect(out.map(\.1) == ["a1", nil, nil])
        #expect(page.finish().isEmpty)
    }

    @Test func aWholeLastTransactionIsToldFromThePage() {
        var (page, out) = Self.fed(
            [
                (1, 10, .marker(stream: "a")), (2, 10, .details(stream: "a", data: Self.bytes("a1"))),
                (3, 10, .marker(stream: "old")),
            ])
        #expect(out.isEmpty)
        // The page reached the topic's newest event: only the marker it has no details for is looked up.
        #expect(page.finish(lastTransactionWhole: true) == [3])
        let rest = Self.resolve(&page, [Self.bytes("old1")])
        #expect(rest.map(\.0) == [1, 2, 3])
        #expect(rest.map(\.1) == ["a1", nil, "old1"])
    }

    @Test func anEmptyPageHasNothingToLookUp() {
        var page = Page()
        #expect(page.finish().isEmpty)
        #expect(Self.resolve(&page, []).isEmpty)
    }
}
