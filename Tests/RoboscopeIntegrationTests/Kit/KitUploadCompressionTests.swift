import Foundation
import Synchronization
import Testing
import RoboscopeKit

/// The kit sends large bodies gzip-compressed, and the real server takes them.
@Suite struct KitUploadCompressionTests {
    /// The default transport underneath; keeps what each request put on the wire.
    final class Recording: HTTPTransport {
        let inner = defaultHTTPTransport()
        let sent = Mutex<[HTTPRequestData]>([])

        func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
            sent.withLock { $0.append(request) }
            return try await inner.send(request)
        }
    }

    @Test func aBulkUploadGoesGzippedAndEveryMarkerArrives() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("kit_gzip"))
        let recording = Recording()
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, userID: "kit", http: recording))
        let session = try await ClientKitEndToEndTests.session(client)
        let markers = (0..<1000).map { ClientKitEndToEndTests.marker(session.id, "bulk \($0)") }
        let created = try await client.createMarkers(markers)
        #expect(created.count == 1000)
        #expect(Set(created.map(\.label)) == Set(markers.map(\.label)))

        let upload = try #require(recording.sent.withLock { $0.last { $0.url.path.hasSuffix("/markers/bulk") } })
        #expect(upload.headers["Content-Encoding"] == "gzip")
        let json = try WireBody.json(markers)
        let size = try #require(upload.body?.count)
        #expect(Double(size) < 0.3 * Double(json), "gzip sends \(size) bytes of \(json)")
        // A small write goes as it is: compressing it would cost more than it saves.
        let space = try #require(recording.sent.withLock { $0.first { $0.url.path.hasSuffix("/spaces") } })
        #expect(space.headers["Content-Encoding"] == nil)

        // Off: the same upload goes as it is.
        var configuration = RoboscopeConfiguration(
            baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, userID: "kit", http: recording)
        configuration.requestCompression = .off
        _ = try await RoboscopeClient(configuration).createMarkers(
            (0..<100).map { ClientKitEndToEndTests.marker(session.id, "plain \($0)") })
        #expect(recording.sent.withLock { $0.last?.headers["Content-Encoding"] } == nil)
        _ = await server.terminate()
    }
}

/// The size of a bulk upload's JSON as the kit encodes it (snake_case, ISO dates).
enum WireBody {
    static func json(_ markers: [NewMarker]) throws -> Int {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return try encoder.encode(["markers": markers]).count
    }
}
