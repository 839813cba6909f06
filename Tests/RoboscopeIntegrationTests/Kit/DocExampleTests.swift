import Foundation
import Testing
import RoboscopeKit

/// docs/client-kit.md's example is this package's code: the docs show
/// DocExampleMarkerList.swift as it is, and it works against the real server.
@Suite struct DocExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func theDocsShowTheCompiledExample() throws {
        let source = try String(
            contentsOf: Self.root.appendingPathComponent(
                "Tests/RoboscopeIntegrationTests/Kit/DocExampleMarkerList.swift"),
            encoding: .utf8)
        let example = try #require(
            source.components(separatedBy: "// example:begin\n").last?.components(separatedBy: "// example:end").first)
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/client-kit.md"), encoding: .utf8)
        #expect(
            docs.contains("```swift\n" + example + "```"),
            "docs/client-kit.md shows DocExampleMarkerList.swift between example:begin and example:end")
    }

    /// Waits, on the main actor, until `condition` holds (checked every 10 ms).
    @MainActor static func until(
        _ what: String, within seconds: Double = 10, _ condition: @MainActor () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TestFailure("\(what): not within \(seconds) s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The example's list against the real server: a marker added shows at once as
    /// pending, settles, a move with the version the list shows applies, and another
    /// client's marker arrives live.
    @Test @MainActor func theExampleWorksAgainstTheRealServer() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("kit_doc_example"))
        defer { server.stopWithoutWaiting() }
        let client = ClientKitEndToEndTests.kit(server)
        let session = try await ClientKitEndToEndTests.session(client)
        let list = MarkerList(client: client, store: try OfflineStore(path: nil), sessionID: session.id)
        let running = Task { await list.run() }
        defer { running.cancel() }
        let marker = ClientKitEndToEndTests.marker(session.id, "valve")
        try await list.add(marker)
        try await Self.until("shown at once") { list.markers.map(\.label) == ["valve"] }
        try await Self.until("settled and live", within: 30) { list.pending == 0 && !list.fromCache }
        let corners = [
            Point3(x: 0, y: 0, z: 2), Point3(x: 2, y: 0, z: 2), Point3(x: 2, y: 0, z: 5), Point3(x: 0, y: 0, z: 5),
        ]
        try await list.move(try #require(list.markers.first), to: corners)
        try await Self.until("the move applied", within: 30) {
            list.pending == 0 && list.markers.first?.version == 2 && list.markers.first?.corners == corners
        }
        _ = try await client.createMarker(ClientKitEndToEndTests.marker(session.id, "another client's"))
        try await Self.until("the other client's marker live", within: 30) { list.markers.count == 2 }
        #expect(try await client.marker(marker.id!).value.corners == corners)
    }
}
