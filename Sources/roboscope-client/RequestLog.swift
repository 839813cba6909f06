import Foundation
import RoboscopeKit

/// `--log-requests`: one JSON line on standard error when an HTTP attempt starts and one
/// when it ends (its status or its error, and how long it took), so a retry or a wait
/// that looks like a hang can be read after the fact. The lines are written by a queue of
/// their own, in order: a write to a file can wait for the disk, and the attempt (on
/// Swift's cooperative pool) must not wait with it.
struct LoggedHTTPTransport: HTTPTransport {
    let base: any HTTPTransport
    private static let writer = DispatchQueue(label: "roboscope-client.request-log")

    /// Returns once every line logged so far is written (before the process exits).
    static func flush() {
        writer.sync {}
    }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let started = ContinuousClock.now
        let key = request.headers["Idempotency-Key"].map(JSONValue.string) ?? .null
        let attempt = JSONValue.object([
            "method": .string(request.method), "path": .string(request.url.path), "key": key,
        ])
        Self.log("sent", attempt, [:])
        do {
            let response = try await base.send(request)
            Self.log(
                "answered", attempt,
                ["status": .integer(Int64(response.status)), "seconds": Self.seconds(since: started)])
            return response
        } catch {
            Self.log("failed", attempt, ["error": .string("\(error)"), "seconds": Self.seconds(since: started)])
            throw error
        }
    }

    private static func seconds(since start: ContinuousClock.Instant) -> JSONValue {
        .number((ContinuousClock.now - start).seconds)
    }

    private static func log(_ event: String, _ attempt: JSONValue, _ fields: [String: JSONValue]) {
        guard case .object(var line) = attempt else { return }
        line["event"] = .string(event)
        line["at"] = .string(Date().ISO8601Format(.iso8601.time(includingFractionalSeconds: true)))
        line.merge(fields) { _, new in new }
        let text =
            String(decoding: (try? WireCoding.encoder().encode(JSONValue.object(line))) ?? Data(), as: UTF8.self) + "\n"
        writer.async { FileHandle.standardError.write(Data(text.utf8)) }
    }
}
