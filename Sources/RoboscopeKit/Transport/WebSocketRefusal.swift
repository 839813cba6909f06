import Foundation

/// What a refused upgrade or a server's close frame means to the kit: a token refused
/// (401, close 4001) is `unauthorized`, a principal changed (403, close 4003) `forbidden`,
/// a limit (429) `rateLimited`; anything else a transport failure to retry.
enum WebSocketRefusal {
    /// `status`: the answer's status line; `body`: what came with it (the server's reason).
    static func upgrade(status: String, body: String) -> RoboscopeError {
        let code = Int(status.split(separator: " ").dropFirst().first ?? "") ?? 0
        let message = "the WebSocket upgrade was refused: \(status)" + (body.isEmpty ? "" : " \(body.prefix(500))")
        switch code {
        case 401: return .unauthorized(message: message)
        case 403: return .forbidden(scopeNeeded: nil, message: message)
        case 429: return .rateLimited(retryAfter: nil)
        default: return .transport(TransportFailure(message))
        }
    }

    static func close(code: Int?, reason: String) -> RoboscopeError {
        let message =
            "closed by the server (\(code.map(String.init) ?? "no code")\(reason.isEmpty ? "" : ": \(reason)"))"
        switch code {
        case 4001: return .unauthorized(message: message)
        case 4003: return .forbidden(scopeNeeded: nil, message: message)
        default: return .transport(TransportFailure(message))
        }
    }
}
