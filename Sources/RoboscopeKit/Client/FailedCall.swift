import Foundation

/// A call that ended in an error, as `RoboscopeConfiguration.onFailedCall` reports it:
/// the error the call throws, and the W3C `traceparent` every attempt of the call carried
/// (the server's spans for it, and for the events it wrote, are in that trace).
///
/// The trace travels beside the error rather than inside it: `RoboscopeError` is an
/// enum that apps match case by case, and a field on every case would break each match.
public struct FailedCall: Sendable, CustomStringConvertible {
    public var method: String
    /// Under `/api/v1`, query included.
    public var path: String
    /// The write's key, nil for a read.
    public var idempotencyKey: String?
    public var traceParent: TraceParent
    public var error: RoboscopeError

    public init(method: String, path: String, idempotencyKey: String?, traceParent: TraceParent, error: RoboscopeError)
    {
        self.method = method
        self.path = path
        self.idempotencyKey = idempotencyKey
        self.traceParent = traceParent
        self.error = error
    }

    /// `POST /markers failed (trace 4bf92f3577b34da6a3ce929d0e0e4736): <the error>`.
    public var description: String {
        "\(method) \(path) failed (trace \(traceParent.traceID)): \(error)"
    }
}
