import Foundation

/// A scanned 3D environment technicians work in.
public struct Space: Codable, Sendable, Hashable, Identifiable {
    public var id: UUID
    /// Unique across spaces.
    public var key: String
    public var name: String
    public var description: String?
    public var modelGlbURL: String?
    public var modelUsdcURL: String?
    public var previewURL: String?
    public var scanURL: String?
    public var mlModelURL: String?
    public var meta: [String: JSONValue]
    /// Inactive spaces are left out of lists unless asked for.
    public var active: Bool
    /// 1 on create, one more on every change: send it back to refuse lost updates.
    public var version: Int64
    public var createdAt: Date
    public var updatedAt: Date

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, key, name, description, meta, active, version
        case modelGlbURL = "model_glb_url"
        case modelUsdcURL = "model_usdc_url"
        case previewURL = "preview_url"
        case scanURL = "scan_url"
        case mlModelURL = "ml_model_url"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// What creating a space sends (`key` and `name` are required).
public struct NewSpace: Encodable, Sendable, Hashable {
    /// A client-chosen id (offline creation); nil lets the server choose.
    public var id: UUID?
    public var key: String
    public var name: String
    public var description: String?
    public var meta: [String: JSONValue]?
    public var active: Bool?

    /// A space to create; `id` lets an offline device choose it.
    public init(
        id: UUID? = nil, key: String, name: String, description: String? = nil,
        meta: [String: JSONValue]? = nil, active: Bool? = nil
    ) {
        self.id = id
        self.key = key
        self.name = name
        self.description = description
        self.meta = meta
        self.active = active
    }
}
