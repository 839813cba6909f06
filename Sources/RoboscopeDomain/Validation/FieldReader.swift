/// Reads typed fields out of a decoded JSON object, throwing an `invalidField`
/// error that names the field for anything missing or malformed.
/// Unknown keys are ignored, as the wire contract requires.
public struct FieldReader: Sendable {
    public let object: JSONObject

    public init(_ object: JSONObject) {
        self.object = object
    }

    /// Reads a request body that must be a JSON object.
    public init(body: JSONValue) throws {
        guard case .object(let object) = body else {
            throw DomainError(.invalidField, "body: expected a JSON object, got \(body.typeName)", field: "body")
        }
        self.object = object
    }

    public func contains(_ key: String) -> Bool { object[key] != nil }

    public func string(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws -> String? {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .string(let text) = value else {
            throw DomainError.invalid(key, "expected a string, got \(value.typeName)")
        }
        if text.utf8.contains(0) {
            throw Self.nulRefused(key)
        }
        if !allowEmpty && text.trimmingWhitespace.isEmpty {
            throw DomainError.invalid(key, "must not be empty")
        }
        if text.count > maxLength {
            throw DomainError.invalid(key, "longer than \(maxLength) characters")
        }
        return text
    }

    public func requiredString(_ key: String, maxLength: Int) throws -> String {
        guard let text = try string(key, maxLength: maxLength) else {
            throw DomainError.invalid(key, "is required")
        }
        return text
    }

    public func id(_ key: String) throws -> EntityID? {
        guard let text = try string(key, maxLength: 64) else { return nil }
        guard let id = EntityID(text) else {
            throw DomainError.invalid(key, "not a UUID")
        }
        return id
    }

    public func requiredID(_ key: String) throws -> EntityID {
        guard let id = try id(key) else { throw DomainError.invalid(key, "is required") }
        return id
    }

    public func bool(_ key: String) throws -> Bool? {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .bool(let flag) = value else {
            throw DomainError.invalid(key, "expected true or false, got \(value.typeName)")
        }
        return flag
    }

    public func integer(_ key: String) throws -> Int64? {
        guard let value = object[key], !value.isNull else { return nil }
        switch value {
        case .integer(let number): return number
        case .number(let number) where number.rounded() == number && abs(number) < 9e15: return Int64(number)
        default: throw DomainError.invalid(key, "expected an integer, got \(value.typeName)")
        }
    }

    public func finiteNumber(_ key: String) throws -> Double? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let number = value.doubleValue, number.isFinite else {
            throw DomainError.invalid(key, "expected a finite number, got \(value.typeName)")
        }
        return number
    }

    public func object(_ key: String) throws -> JSONObject? {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .object(let nested) = value else {
            throw DomainError.invalid(key, "expected an object, got \(value.typeName)")
        }
        if value.containsNUL {
            throw Self.nulRefused(key)
        }
        return nested
    }

    /// PostgreSQL stores neither text nor jsonb with U+0000 in it.
    static func nulRefused(_ key: String) -> DomainError {
        DomainError.invalid(key, "must not contain the character U+0000 (\\u0000)")
    }

    public func point(_ key: String) throws -> Point3? {
        guard let value = object[key], !value.isNull else { return nil }
        return try Self.point(value, field: key)
    }

    public func requiredPoint(_ key: String) throws -> Point3 {
        guard let point = try point(key) else { throw DomainError.invalid(key, "is required") }
        return point
    }

    public func enumeration<E: RawRepresentable & CaseIterable>(_ key: String, _ type: E.Type) throws -> E?
    where E.RawValue == String {
        guard let text = try string(key, maxLength: 64) else { return nil }
        guard let value = E(rawValue: text) else {
            let allowed = E.allCases.map(\.rawValue).joined(separator: ", ")
            throw DomainError.invalid(key, "must be one of \(allowed), got \"\(text)\"")
        }
        return value
    }

    public func timestamp(_ key: String) throws -> Timestamp? {
        guard let text = try string(key, maxLength: 64) else { return nil }
        guard let time = Timestamp(rfc3339: text) else {
            throw DomainError.invalid(key, "not an RFC 3339 time")
        }
        return time
    }

    /// `[x, y, z]`: exactly three finite numbers.
    public static func point(_ value: JSONValue, field: String) throws -> Point3 {
        guard case .array(let items) = value, items.count == 3 else {
            throw DomainError.invalid(field, "expected [x, y, z]: exactly three finite numbers")
        }
        var coordinates: [Double] = []
        for item in items {
            guard let number = item.doubleValue, number.isFinite else {
                throw DomainError.invalid(field, "expected [x, y, z]: exactly three finite numbers")
            }
            coordinates.append(number)
        }
        return Point3(x: coordinates[0], y: coordinates[1], z: coordinates[2])
    }
}

extension String {
    var trimmingWhitespace: Substring {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return Substring(scalars[first...last])
    }
}
