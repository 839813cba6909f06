import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request as the kit sends it.
public struct HTTPRequestData: Sendable, Hashable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?

    /// A request to send.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One HTTP answer.
public struct HTTPResponseData: Sendable, Hashable {
    public var status: Int
    /// Header names as the server sent them; look them up with `header(_:)`.
    public var headers: [String: String]
    public var body: Data

    /// An answer (the in-memory service and custom transports make them).
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header, whatever its case.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// How the kit speaks HTTP. A transport throws `RoboscopeError.transport` when the
/// network fails and `RoboscopeError.cancelled` when the calling task is cancelled, which
/// must also cancel the request on the wire.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData
}

/// HTTP through `URLSession`, on every platform.
public struct URLSessionHTTPTransport: HTTPTransport {
    let session: URLSession

    /// HTTP through `session` (an ephemeral one with a 60 s timeout by default).
    public init(session: URLSession = URLSessionHTTPTransport.defaultSession) {
        self.session = session
    }

    /// Ephemeral (no cookies or cache), a generous timeout for long polls (30 s plus).
    public static let defaultSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.httpMaximumConnectionsPerHost = 8
        return URLSession(configuration: configuration)
    }()

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation (curl) silently resends a request whose reused
        // connection closed before the answer, but without its body: the server waits for
        // bytes that never come and the call hangs until the request timeout (a lost
        // answer cost 60 s per write). A request with a body therefore gets a connection
        // of its own, so a lost answer fails at once and the kit retries with its key.
        if request.body != nil { urlRequest.setValue("close", forHTTPHeaderField: "Connection") }
        #endif
        do {
            let (data, response) = try await URLSessionCall(session: session).run(urlRequest)
            guard let http = response as? HTTPURLResponse else {
                throw RoboscopeError.malformedResponse("not an HTTP response")
            }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields { headers["\(name)"] = "\(value)" }
            return HTTPResponseData(status: http.statusCode, headers: headers, body: data)
        } catch let error as RoboscopeError {
            throw error
        } catch is CancellationError {
            throw RoboscopeError.cancelled
        } catch let error as URLError where error.code == .cancelled {
            throw RoboscopeError.cancelled
        } catch let error as URLError {
            if Task.isCancelled { throw RoboscopeError.cancelled }
            throw RoboscopeError.transport(TransportFailure(error))
        } catch {
            if Task.isCancelled { throw RoboscopeError.cancelled }
            let code = (error as NSError).domain == NSURLErrorDomain ? (error as NSError).code : nil
            throw RoboscopeError.transport(
                TransportFailure("\(error)", urlErrorCode: code, timedOut: code == URLError.timedOut.rawValue))
        }
    }
}

/// One data task, cancelled when the calling task is, without ever blocking the
/// cancelling thread.
///
/// Not `URLSession.data(for:)`: swift-corelibs-foundation runs its cancellation handler
/// (`URLSessionTask.cancel()`, which waits for the session's work queue) while the Swift
/// runtime holds the task's status lock, and the work queue, finishing the same task,
/// waits for that lock to resume it: both wait for good, and with them the session and
/// a thread of the cooperative pool (swift-corelibs-foundation#5412, fixed after the
/// toolchain this kit is built with). Caught here when `apply` stopped for good after
/// a request timed out. This call resumes its continuation from the completion handler
/// and hands the cancel to another queue, so neither side holds one lock while it
/// waits for the other.
final class URLSessionCall: Sendable {
    private struct State {
        var task: URLSessionDataTask?
        var cancelled = false
        /// The completion handler has run: a cancel now would race the session's own
        /// clean-up (swift-corelibs-foundation then traps: "Trying to access a behaviour
        /// for a task that in not in the registry"), so it is skipped.
        var completed = false
    }

    private let session: URLSession
    private let state = Locked(State())
    private static let cancels = DispatchQueue(label: "roboscope.kit.url-session-cancels")

    init(session: URLSession) {
        self.session = session
    }

    func run(_ request: URLRequest) async throws -> (Data, URLResponse) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request) { [self] data, response, error in
                    state.withLock { $0.completed = true }
                    if let data, let response {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: error ?? URLError(.badServerResponse))
                    }
                }
                let start = state.withLock { state in
                    guard !state.cancelled else { return false }
                    state.task = task
                    return true
                }
                if start { task.resume() } else { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let task = state.withLock { state in
                state.cancelled = true
                return state.task
            }
            if let task {
                Self.cancels.async { [state] in
                    if !state.withLock({ $0.completed }) { task.cancel() }
                }
            }
        }
    }
}
