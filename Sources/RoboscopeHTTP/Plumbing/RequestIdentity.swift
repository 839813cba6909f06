import Foundation
import HTTPTypes
import Hummingbird
import RoboscopeAuth
import RoboscopeDomain
import RoboscopeWire

/// Who is making a request, recorded in every event it causes.
enum RequestIdentity {
    static let requestIDHeader = HTTPField.Name("X-Request-Id")!
    static let userIDHeader = HTTPField.Name("X-User-Id")!
    static let correlationIDHeader = HTTPField.Name("X-Correlation-Id")!
    static let lockTokenHeader = HTTPField.Name("X-Lock-Token")!

    static func requestID(_ request: Request) -> String {
        if let given = request.headers[requestIDHeader], isToken(given) { return given }
        return EntityID.random().description
    }

    /// The principal's subject: the token's `sub`, or without authentication `X-User-Id`.
    static func actor(_ request: Request, _ context: RoboscopeRequestContext) -> String {
        context.principal.subject
    }

    /// Without authentication: `X-User-Id`, else `anonymous`.
    static func headerActor(_ request: Request) -> String {
        if let user = request.headers[userIDHeader].map(HeaderText.trimmed), !user.isEmpty {
            return String(user.prefix(200))
        }
        return "anonymous"
    }

    /// Whose idempotency keys a request uses: its principal's, `<tenant>/<subject>`.
    static func keyOwner(_ context: RoboscopeRequestContext) -> String {
        "\(context.principal.tenant)/\(context.principal.subject)"
    }

    static func provenance(_ request: Request, _ context: RoboscopeRequestContext) -> Provenance {
        let correlation = request.headers[correlationIDHeader].flatMap { isToken($0) ? $0 : nil }
        return Provenance(
            actor: actor(request, context),
            // The id the response carries; a second `requestID(request)` would draw a new one.
            requestID: context.requestID ?? requestID(request),
            correlationID: correlation,
            clientAddress: context.clientAddress,
            userAgent: request.headers[.userAgent].map { String($0.prefix(500)) },
            clientMutationID: context.idempotency?.key,
            tenant: context.principal.tenant,
            scope: context.principal.scopes.description,
            // A malformed header is ignored, as W3C Trace Context asks: the write has no trace.
            traceParent: request.headers[ErrorMiddleware.traceParent].flatMap(TraceParent.init)
        )
    }

    /// Ids from clients are kept only when short and made of letters, digits and
    /// `- _ . : / + =` (UUIDs, ULIDs, base64, trace ids): they are echoed in a header,
    /// written to logs and shown by the console, where quotes, `<` or `%` could do harm.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128
            && text.unicodeScalars.allSatisfy { scalar in
                switch scalar {
                case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".", ":", "/", "+", "=": true
                default: false
                }
            }
    }

    static func commandContext(_ request: Request, _ context: RoboscopeRequestContext) -> CommandContext {
        CommandContext(
            now: WallClock.now(), provenance: provenance(request, context),
            lockTokenSHA256: request.headers[lockTokenHeader].map(Digest.sha256Hex)
        )
    }
}

enum WallClock {
    static func now() -> Timestamp {
        Timestamp(microsecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()))
    }
}
