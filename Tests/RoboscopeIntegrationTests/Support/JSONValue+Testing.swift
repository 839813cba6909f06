import RoboscopeDomain

/// Terse access into JSON replies for assertions.
extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var int: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var double: Double? { doubleValue }

    var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var count: Int { array?.count ?? 0 }
}
