import Foundation
import Testing
import RoboscopeKit

/// The WebSocket transport is chosen at run time, by what the system's URLSession can do.
@Suite struct TransportSelectionTests {
    @Test func urlSessionIsPreferredWhereItSpeaksWebSocket() {
        #expect(WebSocketSupport.choose(from: [.urlSession, .socket], urlSessionSupported: true) == .urlSession)
        #expect(WebSocketSupport.choose(from: [.urlSession, .socket], urlSessionSupported: false) == .socket)
        // A build with URLSession alone keeps it: its errors then say why nothing connects.
        #expect(WebSocketSupport.choose(from: [.urlSession], urlSessionSupported: false) == .urlSession)
    }

    #if os(Linux)
    /// Debian's libcurl is built without WebSocket: the system says so at once, and the
    /// default transport is then the socket one (which the kit's end-to-end tests use).
    @Test func thisSystemsURLSessionHasNoWebSocketSoTheSocketTransportIsChosen() async throws {
        let supported = try await within(10, "asking URLSession") { await WebSocketSupport.urlSessionSpeaksWebSocket() }
        #expect(supported == false)
        #expect(SelectedWebSocketTransport.candidates == [.urlSession, .socket])
        #expect(await SelectedWebSocketTransport.choice() == .socket)
    }
    #endif
}
