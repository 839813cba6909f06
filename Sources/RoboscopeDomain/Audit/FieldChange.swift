/// One field of an entity that an event changed, with its value before and after
/// (nil: the field did not exist, as before a create or after a delete).
public struct FieldChange: Equatable, Sendable {
    public var field: String
    public var before: JSONValue?
    public var after: JSONValue?

    public init(field: String, before: JSONValue?, after: JSONValue?) {
        self.field = field
        self.before = before
        self.after = after
    }

    /// Fields every change touches, which the entry states on its own (`version`,
    /// `recorded_at`): listing them in every diff would only hide the real changes.
    public static let bookkeeping: Set<String> = ["version", "updated_at"]

    /// The fields that differ between two states of an entity, sorted by name.
    public static func between(_ before: JSONObject?, _ after: JSONObject?) -> [FieldChange] {
        let fields = Set((before ?? [:]).keys).union((after ?? [:]).keys).subtracting(bookkeeping)
        return fields.sorted().compactMap { field in
            // A field that is absent and one that is null read the same to a client.
            let old = before?[field]
            let new = after?[field]
            return (old ?? .null) == (new ?? .null) ? nil : FieldChange(field: field, before: old, after: new)
        }
    }
}
