/// A scanned 3D environment (a room, a hull, a car body) that work sessions happen in.
public struct Space: Hashable, Sendable {
    public var id: EntityID
    public var key: String
    public var name: String
    public var description: String?
    public var modelGlbURL: String?
    public var modelUsdcURL: String?
    public var previewURL: String?
    public var scanURL: String?
    public var mlModelURL: String?
    public var meta: JSONObject
    public var active: Bool
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        id: EntityID, key: String, name: String, description: String? = nil,
        modelGlbURL: String? = nil, modelUsdcURL: String? = nil, previewURL: String? = nil,
        scanURL: String? = nil, mlModelURL: String? = nil, meta: JSONObject = [:], active: Bool = true,
        version: Int64, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        self.id = id
        self.key = key
        self.name = name
        self.description = description
        self.modelGlbURL = modelGlbURL
        self.modelUsdcURL = modelUsdcURL
        self.previewURL = previewURL
        self.scanURL = scanURL
        self.mlModelURL = mlModelURL
        self.meta = meta
        self.active = active
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

extension Space: Codable {
    enum CodingKeys: String, CodingKey {
        case id, key, name, description, meta, active, version
        case modelGlbURL = "model_glb_url"
        case modelUsdcURL = "model_usdc_url"
        case previewURL = "preview_url"
        case scanURL = "scan_url"
        case mlModelURL = "ml_model_url"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    // Written by hand so that a nil field is sent as `null`, never left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(key, forKey: .key)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        try container.encode(modelGlbURL, forKey: .modelGlbURL)
        try container.encode(modelUsdcURL, forKey: .modelUsdcURL)
        try container.encode(previewURL, forKey: .previewURL)
        try container.encode(scanURL, forKey: .scanURL)
        try container.encode(mlModelURL, forKey: .mlModelURL)
        try container.encode(meta, forKey: .meta)
        try container.encode(active, forKey: .active)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
