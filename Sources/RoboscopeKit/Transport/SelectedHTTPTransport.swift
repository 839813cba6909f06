import Foundation

/// The HTTP transport that is safe here: on Linux the kit's own socket transport, for
/// `http://` and `https://` alike; elsewhere URLSession. See `SocketHTTPTransport` for
/// why Linux does not use URLSession.
public struct SelectedHTTPTransport: HTTPTransport {
    #if canImport(Glibc)
    private let transport: SocketHTTPTransport
    #else
    private let transport: URLSessionHTTPTransport
    #endif

    public init() {
        #if canImport(Glibc)
        transport = SocketHTTPTransport()
        #else
        transport = URLSessionHTTPTransport()
        #endif
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        try await transport.send(request)
    }
}

/// The configuration's default HTTP transport (`SelectedHTTPTransport`).
public func defaultHTTPTransport() -> any HTTPTransport {
    SelectedHTTPTransport()
}
