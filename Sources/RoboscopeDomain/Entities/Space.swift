/// A scanned 3D environment (a room, a hull, a car body) that work sessions happen in.
public struct Space: Hashable, Sendable {
    public var id: EntityID
    /// The organization that owns it: set at creation from the principal, never changed.
    /// Nil only in events written before tenancy existed (docs/security.md).
    public var tenant: String?
    public var key: String
    public var name: String
    public var description: String?
    public var modelGlbURL: String?
    public var modelUsdcURL: String?
    public var previewURL: String?
    public var scanURL: String?
    public var mlModelURL: String?
    public var meta: JSONObject = [:]
    public var active: Bool = true
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
}

extension Space: Decodable {
    enum CodingKeys: String, CodingKey {
        case id, tenant, key, name, description, meta, active, version
        case modelGlbURL = "model_glb_url"
        case modelUsdcURL = "model_usdc_url"
        case previewURL = "preview_url"
        case scanURL = "scan_url"
        case mlModelURL = "ml_model_url"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

extension Space: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("id"); writer.value(id)
            writer.key("tenant"); writer.value(tenant)
            writer.key("key"); writer.value(key)
            writer.key("name"); writer.value(name)
            writer.key("description"); writer.value(description)
            writer.key("model_glb_url"); writer.value(modelGlbURL)
            writer.key("model_usdc_url"); writer.value(modelUsdcURL)
            writer.key("preview_url"); writer.value(previewURL)
            writer.key("scan_url"); writer.value(scanURL)
            writer.key("ml_model_url"); writer.value(mlModelURL)
            writer.key("meta"); writer.value(JSONValue.object(meta))
            writer.key("active"); writer.value(active)
            writer.key("version"); writer.value(version)
            writer.key("created_at"); writer.value(createdAt)
            writer.key("updated_at"); writer.value(updatedAt)
        }
    }
}
