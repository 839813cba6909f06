import Foundation
import RoboscopeKit

/// `--log-requests`: one JSON line on standard error when an HTTP attempt starts and one
/// when it ends (its status or its error, and how long it took), so a retry or a wait
/// that looks like a hang can be read after the fact; `--verbose`: the same as text for
/// people. Both name the attempt's `traceparent`. The lines are written by a queue of
/// their own, in order: a write to a file can wait for the disk, and the attempt (on
/// Swift's cooperative pool) must not wait with it.
struct LoggedHTTPTransport: HTTPTransport {
    enum Style {
        case json
        case text
    }

    let base: any HTTPTransport
    var style = Style.json
    private static let writer = DispatchQueue(label: "roboscope-client.request-log")

    /// Returns once every line logged so far is written (before the process exits).
    static func flush() {
        writer.sync {}
    }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let started = ContinuousClock.now
        let key = request.headers["Idempotency-Key"].map(JSONValue.string) ?? .null
        let trace = request.headers["traceparent"].map(JSONValue.string) ?? .null
        let attempt = JSONValue.object([
            "method": .string(request.method), "path": .string(request.url.path), "key": key, "traceparent": trace,
        ])
        log("sent", attempt, [:])
        do {
            let response = try await base.send(request)
            log(
                "answered", attempt,
                ["status": .integer(Int64(response.status)), "seconds": Self.seconds(since: started)])
            return response
        } catch {
            log("failed", attempt, ["error": .string("\(error)"), "seconds": Self.seconds(since: started)])
            throw error
        }
    }

    private func log(_ event: String, _ attempt: JSONValue, _ fields: [String: JSONValue]) {
        switch style {
        case .json: Self.log(event, attempt, fields)
        // For people, one line per attempt, once it ends.
        case .text: if event != "sent" { Self.write(Self.text(event, attempt, fields)) }
        }
    }

    /// `POST /api/v1/markers traceparent 00-...-01: 201 in 0.012 s`.
    static func text(_ event: String, _ attempt: JSONValue, _ fields: [String: JSONValue]) -> String {
        guard case .object(let line) = attempt else { return "" }
        var text = "\(line["method"]?.stringValue ?? "") \(line["path"]?.stringValue ?? "")"
        if let trace = line["traceparent"]?.stringValue { text += " traceparent \(trace)" }
        let seconds = fields["seconds"].flatMap { value -> String? in
            if case .number(let number) = value { return String(format: "%.3f", number) }
            return nil
        }
        switch event {
        case "answered":
            if case .integer(let status)? = fields["status"] { text += ": \(status) in \(seconds ?? "?") s" }
        default: text += ": failed after \(seconds ?? "?") s: \(fields["error"]?.stringValue ?? "")"
        }
        return text + "\n"
    }

    private static func seconds(since start: ContinuousClock.Instant) -> JSONValue {
        .number((ContinuousClock.now - start).seconds)
    }

    private static func log(_ event: String, _ attempt: JSONValue, _ fields: [String: JSONValue]) {
        guard case .object(var line) = attempt else { return }
        line["event"] = .string(event)
        line["at"] = .string(Date().ISO8601Format(.iso8601.time(includingFractionalSeconds: true)))
        line.merge(fields) { _, new in new }
        write(
            String(decoding: (try? WireCoding.encoder().encode(JSONValue.object(line))) ?? Data(), as: UTF8.self) + "\n"
        )
    }

    private static func write(_ text: String) {
        writer.async { FileHandle.standardError.write(Data(text.utf8)) }
    }
}
