import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain

/// Reads what a request carries: its JSON body, path ids, query parameters and
/// the expected version, each failing with an error that names the input.
struct RequestInput {
    let request: Request
    let context: RoboscopeRequestContext
    let bodyLimit: Int

    /// The body as JSON: 413 past the limit, 400 when it is not JSON.
    func json() async throws -> JSONValue {
        try parse(try await collect())
    }

    private func parse(_ buffer: ByteBuffer) throws -> JSONValue {
        guard buffer.readableBytes > 0 else {
            throw DomainError(.malformedRequest, "the body is empty; expected a JSON object")
        }
        do {
            return try JSONParser.parse(buffer.readableBytesView)
        } catch let failure as JSONParser.Failure {
            throw DomainError(.malformedRequest, "the body is not valid JSON: \(failure)")
        }
    }

    /// The body's bytes (413 past the limit).
    func bodyBytes() async throws -> [UInt8] {
        Array(try await collect().readableBytesView)
    }

    /// The body as one buffer (413 past the limit).
    func bodyBuffer() async throws -> ByteBuffer {
        try await collect()
    }

    private func collect() async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: bodyLimit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw tooLarge()
        } catch is NIOTooManyBytesError {
            throw tooLarge()
        }
    }

    private func tooLarge() -> DomainError {
        DomainError(
            .payloadTooLarge, "the body is larger than \(bodyLimit) bytes",
            details: ["limit": .integer(Int64(bodyLimit))])
    }

    func fields() async throws -> FieldReader {
        try FieldReader(body: await json())
    }

    /// The body's fields, or none when the body is empty (where a body is optional).
    func fieldsIfAny() async throws -> FieldReader {
        let buffer = try await collect()
        guard buffer.readableBytes > 0 else { return FieldReader([:]) }
        return try FieldReader(body: parse(buffer))
    }

    /// A UUID path parameter; a malformed one is a 422 naming it.
    func pathID(_ name: String = "id") throws -> EntityID {
        let text = context.parameters.get(name) ?? ""
        guard let id = EntityID(text) else {
            throw DomainError.invalid(name, "not a UUID: \"\(text.prefix(64))\"")
        }
        return id
    }

    func query(_ name: String) -> String? {
        request.uri.queryParameters[name[...]].map { String($0) }
    }

    func queryID(_ name: String) throws -> EntityID? {
        guard let text = query(name) else { return nil }
        guard let id = EntityID(text) else {
            throw DomainError(.malformedRequest, "query \(name): not a UUID", field: name)
        }
        return id
    }

    /// An integer query parameter within `range` (400 naming it otherwise).
    func queryInteger(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = query(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw DomainError(
                .malformedRequest, "query \(name): expected an integer from \(range.lowerBound) to \(range.upperBound)",
                field: name)
        }
        return value
    }

    /// A number query parameter within `range` (400 naming it otherwise).
    func queryNumber(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = query(name) else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw DomainError(
                .malformedRequest, "query \(name): expected a number from \(range.lowerBound) to \(range.upperBound)",
                field: name)
        }
        return value
    }

    func queryBool(_ name: String) throws -> Bool? {
        guard let text = query(name) else { return nil }
        switch text.lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        default: throw DomainError(.malformedRequest, "query \(name): expected true or false", field: name)
        }
    }

    func queryEnum<E: RawRepresentable & CaseIterable>(_ name: String, _ type: E.Type) throws -> E?
    where E.RawValue == String {
        guard let text = query(name) else { return nil }
        guard let value = E(rawValue: text) else {
            let allowed = E.allCases.map(\.rawValue).joined(separator: ", ")
            throw DomainError(.malformedRequest, "query \(name): must be one of \(allowed)", field: name)
        }
        return value
    }

    /// `as_of`: a position or an RFC 3339 time, for reads of the past.
    func asOf() throws -> AsOf? {
        guard let text = query("as_of") else { return nil }
        guard let moment = AsOf(text) else {
            throw DomainError(
                .malformedRequest, "query as_of: expected a position or an RFC 3339 time such as 2026-11-22T14:32:00Z",
                field: "as_of")
        }
        return moment
    }

    /// The version a write expects: the body's `version`, else `If-Match`.
    func expectedVersion(_ body: FieldReader?) throws -> Int64? {
        if let body, body.contains("version") {
            return try body.integer("version")
        }
        guard var text = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        text = text.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard let version = Int64(text) else {
            throw DomainError.invalid("If-Match", "expected a version number")
        }
        return version
    }
}
