import HTTPTypes
import Hummingbird

/// Runs the long part of a report (the audit trail, a history, an integrity scan) so
/// that a client going away cancels it, and with it the statement Postgres is running
/// (PostgresPool cancels it), instead of letting a whole-log scan run to its end for
/// nobody. Hummingbird closes such a connection after the answer: the answer says so.
enum CancelOnClose {
    static func run(
        _ request: Request, _ body: @escaping @Sendable () async throws -> Response
    ) async throws -> Response {
        var response = try await request.body.consumeWithCancellationOnInboundClose { _ in try await body() }
        response.headers[.connection] = "close"
        return response
    }
}
