import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the network failed (`RoboscopeError.transport`): what happened in words, and the
/// `URLError` code when URLSession reported it, so an app can tell "not connected to the
/// internet" from a timeout. Written as a string where the kit makes one itself.
public struct TransportFailure: Error, Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    public var message: String
    /// `URLError.Code.rawValue`, when URLSession reported the failure.
    public var urlErrorCode: Int?
    /// No answer came within `RoboscopeConfiguration.requestTimeout`.
    public var timedOut: Bool

    public init(_ message: String, urlErrorCode: Int? = nil, timedOut: Bool = false) {
        self.message = message
        self.urlErrorCode = urlErrorCode
        self.timedOut = timedOut
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The failure URLSession reported.
    public init(_ error: URLError) {
        self.init(error.localizedDescription, urlErrorCode: error.code.rawValue, timedOut: error.code == .timedOut)
    }

    /// The `URLError` it came from, rebuilt from its code.
    public var urlError: URLError? {
        urlErrorCode.flatMap { URLError.Code(rawValue: $0) }.map { URLError($0) }
    }

    public var description: String { message }
}
