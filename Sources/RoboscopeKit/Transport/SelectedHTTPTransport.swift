import Foundation

/// The HTTP transport that is safe here, chosen per request by the URL's scheme:
/// on Linux, `http://` goes over the kit's own socket transport and `https://` through
/// URLSession (the socket transport has no TLS); elsewhere everything goes through
/// URLSession. See `SocketHTTPTransport` for why Linux does not use URLSession when it
/// can avoid it.
public struct SelectedHTTPTransport: HTTPTransport {
    private let urlSession: URLSessionHTTPTransport
    #if canImport(Glibc)
    private let socket: SocketHTTPTransport
    #endif

    public init() {
        urlSession = URLSessionHTTPTransport()
        #if canImport(Glibc)
        socket = SocketHTTPTransport()
        #endif
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        #if canImport(Glibc)
        if request.url.scheme?.lowercased() == "http" { return try await socket.send(request) }
        #endif
        return try await urlSession.send(request)
    }
}

/// The configuration's default HTTP transport (`SelectedHTTPTransport`).
public func defaultHTTPTransport() -> any HTTPTransport {
    SelectedHTTPTransport()
}
