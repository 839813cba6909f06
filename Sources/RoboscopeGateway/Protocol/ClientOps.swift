import RoboscopeDomain
import WebSocketCodec

/// What a client message is before anything is served: an op to serve, a mistake to
/// answer with `error` (the connection stays), or, before the connection has
/// authenticated, a reason to close it with 4001 (docs/security.md, WebSocket: nothing
/// but `auth` is served to a connection without a principal, and it learns nothing else).
///
/// Pure: the dispatcher routes every message through it (`ClientOpsTests`).
enum ClientOps {
    enum Route {
        case serve(ClientRequest)
        case reply(DomainError)
        case close(CloseCode, String)
    }

    static func route(_ opcode: Opcode, _ payload: [UInt8], authenticated: Bool) -> Route {
        guard opcode == .text else {
            guard authenticated else { return .close(.unauthorized, "authenticate first, in a text frame") }
            return .reply(DomainError(.malformedRequest, "send JSON in text frames, not binary"))
        }
        let request: ClientRequest
        do {
            request = try ClientRequest.parse(payload)
        } catch let error as DomainError {
            guard authenticated else { return .close(.unauthorized, "authenticate first: \(error.message)") }
            return .reply(error)
        } catch {
            guard authenticated else { return .close(.unauthorized, "authenticate first") }
            return .reply(DomainError(.malformedRequest, "\(error)"))
        }
        if case .auth = request { return .serve(request) }
        return authenticated
            ? .serve(request) : .close(.unauthorized, "authenticate first: send {\"op\": \"auth\", \"token\": ...}")
    }
}
